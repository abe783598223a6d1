public import OspreyCodecs

/// A store of decoded images by key: the memory level of an ``ImageCache``, and the only way the ``ImageManager``
/// keeps and finds final images in memory. ``MemoryCache`` is the default; another store plugs in through
/// ``ImageCache/init(configuration:memoryCache:dataCache:)``.
///
/// Every method is called on the caller's thread, a memory hit on the path of every load: keep them fast and
/// non-blocking.
public protocol ImageCaching: AnyObject, Sendable {
    /// The image kept for `key`, or `nil`.
    func cachedImage(forKey key: String) -> Image?

    /// Keeps `image` for `key`, replacing what it held (a store with limits may evict others, or decline it), until
    /// `expiration` (the store's own default when `nil`).
    func storeImage(_ image: Image, forKey key: String, expiration: CacheExpiration?)

    /// Whether an image is kept for `key`, without counting as a use. By default ``cachedImage(forKey:)`` `!= nil`.
    func containsImage(forKey key: String) -> Bool

    /// Forgets `key`'s image.
    func removeImage(forKey key: String)

    /// Forgets every image.
    func removeAllImages()
}

extension ImageCaching {
    /// Whether an image is kept under `key`, found by reading it (a store that can tell without reading overrides it).
    public func containsImage(forKey key: String) -> Bool {
        cachedImage(forKey: key) != nil
    }

    /// Keeps `image` for `key` until the store's default expiration.
    public func storeImage(_ image: Image, forKey key: String) {
        storeImage(image, forKey: key, expiration: nil)
    }
}

extension MemoryCache: ImageCaching where Key == String, Value == Image {
    /// ``value(forKey:)``.
    public func cachedImage(forKey key: String) -> Image? {
        value(forKey: key)
    }

    /// ``setValue(_:forKey:cost:expiration:extension:)`` at the image's cost in bytes.
    public func storeImage(_ image: Image, forKey key: String, expiration: CacheExpiration?) {
        setValue(image, forKey: key, cost: image.cost, expiration: expiration)
    }

    /// ``containsValue(forKey:)``.
    public func containsImage(forKey key: String) -> Bool {
        containsValue(forKey: key)
    }

    /// ``removeValue(forKey:)``.
    public func removeImage(forKey key: String) {
        removeValue(forKey: key)
    }

    /// ``removeAll()``.
    public func removeAllImages() {
        removeAll()
    }
}
