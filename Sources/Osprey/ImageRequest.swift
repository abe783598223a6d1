public import FoundationEssentials
public import OspreyCodecs

/// What to load: an absolute `http` or `https` URL, and how (options, processors, priority, size, and the cache and
/// loader to use instead of the manager's).
///
/// A string that is empty, not a URL, relative, of another scheme, without a valid host or with a port outside
/// 1–65535 fails at once with ``ImageError/invalidURL(_:reason:)`` — the error every load reports, so one `catch`
/// covers making the request and loading it — and never reaches the network.
///
/// ```swift
/// var request = try ImageRequest(string: "https://example.com/cat.jpg", priority: .high)
/// request.targetSize = ImageSize(width: 400, height: 300)   // decoded no smaller than this, JPEG by DCT scaling
/// let result = try await ImageManager.shared.image(for: request)
/// ```
public struct ImageRequest: Sendable {
    /// The URL to load.
    public let url: URL
    /// How to load it. None by default.
    public var options: Options
    /// Applied in order after decoding (and after the manager's transform hook); their identifiers become part of the
    /// cache key. None by default.
    public var processors: [any ImageProcessing]
    /// Where the download waits in the queue. `.normal` by default; a load under way can change it
    /// (``ImageTask/setPriority(_:)``).
    public var priority: DownloadPriority
    /// Decode scaled down while staying at least this large (JPEG by DCT scaling, WebP stills by any factor). `nil`
    /// (full size) by default. Part of the cache key.
    public var targetSize: ImageSize?
    /// Decode scaled down to at most this many pixels where the format allows; `nil` by default, when
    /// ``Options/scaleDownLargeImages`` uses the manager's ``ImageManager/Configuration/scaleDownPixelBudget``. Part
    /// of the cache key.
    public var pixelBudget: Int?
    /// How small the image may be decoded, from its header (see ``DecodingSizeHint``); ignored when ``targetSize``
    /// is set. By default the first processor's, when it is a hint (``ImageProcessors/Downsample`` is); setting it
    /// (`nil` included) replaces that, and a hint set here is part of the cache key.
    public var decodingSizeHint: (any DecodingSizeHint)? {
        get { explicitHint ?? (processors.first as? any DecodingSizeHint) }
        set { explicitHint = .some(newValue) }
    }
    /// The hint set on the request; `nil` when it comes from the first processor.
    private(set) var explicitHint: (any DecodingSizeHint)??
    /// The cache to use instead of the manager's. `nil` by default.
    public var cache: ImageCache?
    /// The loader to use instead of the manager's. `nil` by default.
    public var loader: (any DataLoading)?
    /// Where the bytes come from instead of the network, for a request made with
    /// ``init(provider:options:processors:priority:)``; `nil` for a URL's request.
    public let provider: (any ImageDataProvider)?
    /// Where to download the image from when ``url`` fails, tried in order (Kingfisher's `alternativeSources`): a
    /// mirror, another CDN, a lower resolution. None by default.
    ///
    /// The search moves on only when a source's *download* fails (an HTTP error status, a refused or lost
    /// connection, a timeout, a ``ResponseValidator``'s refusal): the first source that answers with a 2xx ends it,
    /// even with an empty body or bytes that do not decode, and the load then fails with that source's
    /// ``ImageError/decodingFailed(_:)`` (recorded against that source, not the next tried). When every source
    /// fails, the load reports ``url``'s own failure. Whatever answers is cached under the request's own key, so the
    /// next load of the request is a cache hit; each failed source enters the failed-URL list, and sources on it are
    /// skipped (unless ``Options/retryFailed``). Part of the job key: loads with different alternatives are not
    /// shared.
    public var alternativeURLs: [URL] = []
    /// How long the memory level keeps what this load stores there (the image, or an encoded load's bytes): `nil`
    /// (the memory cache's own ``MemoryCache/Configuration/expiration``) by default. Kingfisher's
    /// `memoryCacheExpiration`.
    public var memoryCacheExpiration: CacheExpiration?
    /// How long the disk level keeps what this load stores there (the original's bytes, and the processed or encoded
    /// variant): `nil` (the data store's own policy: for a ``DiskCache``, ``DiskCache/Configuration/maximumAge``
    /// since the last read) by default. Kingfisher's `diskCacheExpiration`.
    public var diskCacheExpiration: CacheExpiration?
    /// Whether the final image is kept in memory, and with ``ImageManager/Configuration/storesProcessedImagesOnDisk``
    /// on disk, under the variant key: not for the image an encoded load encodes, whose bytes are kept instead.
    var keepsVariant = true

    /// Makes a request for `url`.
    ///
    /// - Throws: ``ImageError/invalidURL(_:reason:)`` when `url` is not an absolute `http`/`https` URL with a valid
    ///   host and port (see ``validate(_:)``).
    public init(
        url: URL, options: Options = [], processors: [any ImageProcessing] = [], priority: DownloadPriority = .normal
    ) throws(ImageError) {
        try self.init(
            url: url, original: url.absoluteString, options: options, processors: processors, priority: priority)
    }

    /// Makes a request for `url`, validated as `original` (the string it was made from) names it in an error.
    private init(
        url: URL, original: String, options: Options, processors: [any ImageProcessing], priority: DownloadPriority
    ) throws(ImageError) {
        try Self.validate(url, original: original)
        self.url = url
        self.provider = nil
        self.options = options
        self.processors = processors
        self.priority = priority
    }

    /// Makes a request whose bytes `provider` gives: cached under the provider's key, decoded and processed as a
    /// download is. Its ``url`` names the provider (`osprey-provider:` and the key, percent-encoded), for logs,
    /// results and the failed-URL list; it is never sent to the network.
    public init(
        provider: any ImageDataProvider, options: Options = [], processors: [any ImageProcessing] = [],
        priority: DownloadPriority = .normal
    ) {
        let key = PercentEncoding.encodingAllButAlphanumerics(provider.cacheKey)
        self.url = URL(string: "osprey-provider:" + key) ?? URL(fileURLWithPath: "/")
        self.provider = provider
        self.options = options
        self.processors = processors
        self.priority = priority
    }

    /// Makes a request for the URL in `string`.
    ///
    /// - Throws: ``ImageError/invalidURL(_:reason:)`` when `string` is empty or not an absolute `http`/`https` URL
    ///   with a host.
    public init(
        string: String, options: Options = [], processors: [any ImageProcessing] = [],
        priority: DownloadPriority = .normal
    ) throws(ImageError) {
        guard !string.isEmpty else { throw .invalidURL(string, reason: .empty) }
        guard let url = URL(string: string) else { throw .invalidURL(string, reason: .malformed) }
        try self.init(url: url, original: string, options: options, processors: processors, priority: priority)
    }

    /// A request for `url` as it is, unchecked: the placeholder of a load that already failed.
    init(unvalidated url: URL) {
        self.url = url
        self.provider = nil
        self.options = []
        self.processors = []
        self.priority = .normal
    }
}
