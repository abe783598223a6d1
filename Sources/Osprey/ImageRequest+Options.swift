extension ImageRequest {
    /// How a request is loaded: the seeds' `SDWebImageOptions`, each with a test that shows what it does.
    ///
    /// ```swift
    /// let request = try ImageRequest(string: url, options: [.refreshCached, .waitStoreCache])
    /// ```
    public struct Options: OptionSet, Sendable, Hashable {
        /// The options' bits.
        public let rawValue: UInt32

        /// Makes options from their bits.
        public init(rawValue: UInt32) {
            self.rawValue = rawValue
        }

        // MARK: Failures

        /// Ask the origin even when the URL is on the failed-URL list.
        public static let retryFailed = Options(rawValue: 1 << 0)
        // Bits 1 and 2 were `lowPriority` and `highPriority`: the priority is ``ImageRequest/priority`` alone.

        // MARK: Caching

        /// Keep the image in memory only: nothing is written to disk.
        public static let cacheMemoryOnly = Options(rawValue: 1 << 3)
        /// Deliver the cached image first, then revalidate it with the origin and deliver again only when it changed.
        public static let refreshCached = Options(rawValue: 1 << 4)
        /// Look in the caches only; a miss fails with ``ImageError/notCached(_:)`` and never reaches the network.
        public static let fromCacheOnly = Options(rawValue: 1 << 5)
        /// Skip the cache lookup and download (the result is still cached).
        public static let fromLoaderOnly = Options(rawValue: 1 << 6)
        /// Deliver only once the image is stored (on disk too), so a lookup right after the delivery finds it.
        public static let waitStoreCache = Options(rawValue: 1 << 7)
        /// Take the image from memory when it is there; otherwise skip the disk cache and download (the result is
        /// cached as usual): Kingfisher's `fromMemoryCacheOrRefresh`, for an image that must be fresh unless this
        /// process already holds it.
        public static let fromMemoryCacheOrRefresh = Options(rawValue: 1 << 15)

        // MARK: Downloading

        /// Deliver partial images while the data arrives, each marked not final.
        public static let progressiveDownload = Options(rawValue: 1 << 8)
        /// Send and keep the downloader's cookies for this URL (``DownloadRequest/handlesCookies``).
        public static let handlesCookies = Options(rawValue: 1 << 9)
        /// Accept any certificate from an `https` origin: expired, self-signed, wrong host
        /// (``DownloadRequest/allowsInvalidCertificates``).
        public static let allowsInvalidCertificates = Options(rawValue: 1 << 10)
        /// Let the download and the caching finish even if every caller cancels.
        public static let detached = Options(rawValue: 1 << 11)

        // MARK: Decoding and transforming

        /// Run the manager's ``ImageManager/Configuration/transformDownloadedImage`` hook on animated images too.
        public static let transformAnimatedImage = Options(rawValue: 1 << 12)
        /// Decode images above the pixel budget downscaled: the request's ``ImageRequest/pixelBudget``, else the
        /// manager's ``ImageManager/Configuration/scaleDownPixelBudget``.
        public static let scaleDownLargeImages = Options(rawValue: 1 << 13)
        /// Decode only the first frame of an animated GIF or WebP.
        public static let decodeFirstFrameOnly = Options(rawValue: 1 << 14)

        /// The options that change what a load does or produces, as opposed to when it runs or who waits for it:
        /// loads that differ in these never share a job.
        static let shapingResult: Options = [
            .cacheMemoryOnly, .refreshCached, .fromCacheOnly, .fromLoaderOnly, .fromMemoryCacheOrRefresh,
            .progressiveDownload, .handlesCookies, .allowsInvalidCertificates, .transformAnimatedImage,
            .scaleDownLargeImages, .decodeFirstFrameOnly,
        ]

        /// Whether the disk cache is consulted before downloading.
        var looksOnDisk: Bool { isDisjoint(with: [.fromLoaderOnly, .fromMemoryCacheOrRefresh]) }
    }
}
