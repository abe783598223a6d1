/// Where an image, its bytes or an encoded rendition came from: the one vocabulary of ``ImageResult``,
/// ``ImageCache/Hit``, ``DataResult`` and ``EncodedResult``.
///
/// There is no `.none`: `result.success?.cacheType == .notCached` is `false` for a failure, where a case named
/// `none` would have compared equal to `Optional.none`.
public enum CacheType: Sendable, Hashable {
    /// Not from a cache: made just now — downloaded (or revalidated and replaced), decoded, encoded.
    case notCached
    /// From the memory cache.
    case memory
    /// From the disk cache.
    case disk

    /// Whether it came from one of the caches.
    public var isCached: Bool { self != .notCached }
}
