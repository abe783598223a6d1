import ArgumentParser
import FoundationEssentials
import HTTPTypes
import Logging
import Osprey
import OspreyCodecs
import OspreyCommandLine

/// The options every command that loads URLs shares (`fetch`, `prefetch`), and how they become an `ImageManager`.
///
/// Flags override the environment (`OSPREY_CACHE_DIR`, `OSPREY_MAX_CONCURRENT`, `OSPREY_TIMEOUT`), which overrides
/// the defaults: the library's cache directory, 6 downloads at once, 15 s.
struct LoadingOptions: ParsableArguments {
    /// A store of bytes to use instead of the disk cache in the cache directory: set only by a test that runs a
    /// command in-process with a store of its own, to see that the commands reach the cache through the library's
    /// `DataCaching` alone.
    @TaskLocal static var dataStore: (any DataCaching)?

    /// How many loads `fetch` and `prefetch` keep under way; the downloader's queue decides which transfers run
    /// (`--max-concurrent`, `--lifo`), so a load waiting for its disk write does not hold a download back.
    static let loadsUnderWay = 256

    @OptionGroup var cacheDirectory: CacheDirectoryOption

    @Flag(name: .customLong("no-cache"), help: "Neither read nor write the disk cache (nothing is created on disk).")
    var noCache = false

    @Flag(
        name: .customLong("memory-only"),
        help: "Read the disk cache but do not write to it (nothing is created or changed on disk).")
    var memoryOnly = false

    @Flag(name: .customLong("refresh"), help: "Revalidate cached images with the origin (ETag, Last-Modified).")
    var refresh = false

    @Flag(name: .customLong("retry-failed"), help: "Ask again for URLs that failed earlier in this run.")
    var retryFailed = false

    @Option(
        name: .customLong("max-concurrent"),
        help: "Downloads at once (default: $OSPREY_MAX_CONCURRENT, else 6).", transform: DecimalArgument.integer)
    var maxConcurrent: Int?

    @Flag(help: "Start the most recently queued download first.")
    var lifo = false

    @Option(
        help: "Seconds without progress before a download fails (default: $OSPREY_TIMEOUT, else 15).",
        transform: DecimalArgument.number)
    var timeout: Double?

    @Option(name: .customLong("header"), help: "An HTTP header 'Name: value' sent with every request (repeatable).")
    var headers: [String] = []

    @Flag(help: "Accept invalid TLS certificates.")
    var insecure = false

    @OptionGroup var certificateAuthority: CertificateAuthorityOption

    @Flag(help: "Offer HTTP/2 to https origins (ALPN), as well as HTTP/1.1, the only one offered by default.")
    var http2 = false

    @Flag(help: "Log each request on standard error.")
    var verbose = false

    func validate() throws {
        if noCache && (cacheDirectory.path != nil || memoryOnly || refresh) {
            let other = cacheDirectory.path != nil ? "--cache-dir" : memoryOnly ? "--memory-only" : "--refresh"
            throw ValidationError("--no-cache cannot be combined with \(other): drop one of them")
        }
        if let maxConcurrent, !(1...256).contains(maxConcurrent) {
            throw ValidationError("--max-concurrent must be between 1 and 256")
        }
        if let timeout, !(timeout > 0 && timeout <= 3600) {
            throw ValidationError("--timeout must be a number of seconds between 0 and 3600")
        }
        for header in headers where Self.parseHeader(header) == nil {
            throw ValidationError("--header '\(header)' is not 'Name: value'")
        }
        _ = try settings()
    }

    /// `Name: value` split, or `nil` when it has no name or no colon.
    static func parseHeader(_ text: String) -> (HTTPField.Name, String)? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let name = text[..<colon].trimmingWhitespace()
        let value = text[text.index(after: colon)...].trimmingWhitespace()
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_".contains($0)) }),
            let field = HTTPField.Name(name)
        else { return nil }
        return (field, value)
    }

    /// The settings the flags, the environment and the defaults give, in that order of precedence.
    struct Settings {
        var cacheDirectory: String
        var maxConcurrent: Int
        var timeout: Double
        var certificateAuthorities: CertificateAuthorities
        /// `http_proxy`, `https_proxy` and `no_proxy`, as curl reads them.
        var proxies: EgressProxies
    }

    func settings(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Settings {
        func fromEnvironment<T>(_ name: String, _ parse: (String) -> T?) throws -> T? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            guard let value = parse(text) else { throw ValidationError("\(name)='\(text)' is not valid") }
            return value
        }
        let maxConcurrent =
            try maxConcurrent ?? fromEnvironment("OSPREY_MAX_CONCURRENT") { DecimalText.integer($0) } ?? 6
        let timeout = try timeout ?? fromEnvironment("OSPREY_TIMEOUT") { DecimalText.number($0) } ?? 15
        guard (1...256).contains(maxConcurrent) else {
            throw ValidationError("OSPREY_MAX_CONCURRENT must be between 1 and 256")
        }
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("OSPREY_TIMEOUT must be 0-3600 seconds") }
        let proxies: EgressProxies
        do {
            proxies = try EgressProxies(environment: environment)
        } catch {
            throw ValidationError(error.description)
        }
        return Settings(
            cacheDirectory: cacheDirectory.resolved(environment: environment), maxConcurrent: maxConcurrent,
            timeout: timeout, certificateAuthorities: try certificateAuthority.resolved(environment: environment),
            proxies: proxies)
    }

    /// The options every load of this run carries. A load counts as done once its image is on disk
    /// (`waitStoreCache`): the process exits right after the last one, which would otherwise cut writes short.
    var requestOptions: ImageRequest.Options {
        var options: ImageRequest.Options = [.waitStoreCache]
        if noCache { options.formUnion([.fromLoaderOnly, .cacheMemoryOnly]) }
        if memoryOnly { options.insert(.cacheMemoryOnly) }
        if refresh { options.insert(.refreshCached) }
        if retryFailed { options.insert(.retryFailed) }
        if insecure { options.insert(.allowsInvalidCertificates) }
        return options
    }

    /// The disk cache's configuration: the library's default cache in the chosen directory; opened read-only with
    /// `--memory-only` and `--no-cache`, so that they leave the disk as it was (no directory, no index created).
    func cacheConfiguration(_ settings: Settings) -> ImageCache.Configuration {
        var configuration = ImageCache.Configuration()
        configuration.disk.baseDirectory = settings.cacheDirectory
        configuration.disk.cleaningInterval = nil
        configuration.disk.isReadOnly = memoryOnly || noCache
        return configuration
    }

    /// A manager for this run: its own downloader (the limit, order, timeout and headers asked for, and bodies of at
    /// most `maximumBodySize` bytes when given) and cache, decoding colours as `colorHandling` says.
    func makeManager(maximumBodySize: Int? = nil, colorHandling: ColorHandling = .convertToSRGB) throws -> ImageManager
    {
        let settings = try settings()
        var downloading = downloaderConfiguration(settings)
        if let maximumBodySize { downloading.maximumBodySize = maximumBodySize }
        var configuration = ImageManager.Configuration()
        configuration.decoding.colorHandling = colorHandling
        var managerLogger = Logger(label: "osprey.manager")
        managerLogger.logLevel = verbose ? .debug : .warning
        configuration.logger = managerLogger
        return ImageManager(
            cache: ImageCache(configuration: cacheConfiguration(settings), dataCache: Self.dataStore),
            downloader: ImageDownloader(configuration: downloading), configuration: configuration)
    }

    /// The downloader's configuration: the limit, order, timeout and headers asked for.
    func downloaderConfiguration(_ settings: Settings) -> ImageDownloader.Configuration {
        var downloading = ImageDownloader.Configuration()
        downloading.maxConcurrentDownloads = settings.maxConcurrent
        downloading.order = lifo ? .lifo : .fifo
        downloading.certificateAuthorities = settings.certificateAuthorities
        downloading.httpVersion = http2 ? .automatic : .http1Only
        downloading.proxies = settings.proxies.isEmpty ? nil : settings.proxies
        downloading.timeout = .milliseconds(Int64(settings.timeout * 1000))
        for (name, value) in headers.compactMap(Self.parseHeader) {
            downloading.headers[name] = value
        }
        var logger = Logger(label: "osprey.downloader")
        logger.logLevel = verbose ? .debug : .warning
        downloading.logger = logger
        return downloading
    }
}

extension ImageManager {
    /// Ends a command's loads: waits for the disk writes still under way (a fetch's stores run after its images are
    /// delivered), stops the manager, and closes the disk cache, leaving its directory complete for any reader.
    func finishRun() async {
        await shutdown()
        await cache.close()
    }
}
