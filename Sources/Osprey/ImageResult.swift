public import Foundation
public import OspreyCodecs

/// What a load delivers: the image, the bytes it was decoded from, and where it came from.
public struct ImageResult: Sendable {
    /// Where an image was found.
    public enum CacheType: Sendable, Hashable {
        /// Downloaded (or revalidated and replaced) just now.
        case none
        /// From the memory cache.
        case memory
        /// From the disk cache.
        case disk
    }

    /// The image, after the transform hook and the request's processors.
    public var image: Image
    /// The encoded bytes the image was decoded from (before processors), when known: always for a download and a
    /// disk hit, for a memory hit only when the memory cache keeps bytes. `nil` for a transformed image.
    public var data: [UInt8]?
    /// Where it came from (M6).
    public var cacheType: CacheType
    /// The URL that answered, after redirects; the requested URL for a cache hit.
    public var url: URL
    /// Whether more may follow for the same load: `false` for a progressive preview (M15) and for the cached image a
    /// ``ImageRequest/Options/refreshCached`` load delivers before revalidating (M8).
    public var isFinal: Bool

    /// Makes a result.
    public init(image: Image, data: [UInt8]?, cacheType: CacheType, url: URL, isFinal: Bool = true) {
        self.image = image
        self.data = data
        self.cacheType = cacheType
        self.url = url
        self.isFinal = isFinal
    }
}
