internal import Crypto
import FoundationEssentials
public import Osprey
public import OspreyCodecs
public import Tracing

/// How `osprey serve` listens, whom it fetches from, what it accepts, and how it caches. Every property has the
/// documented default; `osprey serve` sets them from its flags and `OSPREY_*` variables (docs/serve.md).
///
/// ```swift
/// var configuration = ServerConfiguration(port: 8080)
/// configuration.secret = Array("a long random secret".utf8)
/// configuration.allowedHosts = [HostPattern("*.example.com")!]
/// let app = try buildApplication(configuration: configuration)
/// ```
public struct ServerConfiguration: Sendable {
    // MARK: Listening

    /// The address to bind. `127.0.0.1` by default; `0.0.0.0` to listen on every interface.
    public var host: String = "127.0.0.1"
    /// The TCP port. 8080 by default; 0 lets the system pick a free one.
    public var port: Int = 8080
    /// How long in-flight requests may take to finish after SIGTERM or SIGINT before they are cancelled. 30 s by
    /// default.
    public var shutdownGracePeriod: Duration = .seconds(30)

    // MARK: Signatures

    /// The HMAC-SHA256 keys of ``URLSigner``: the first signs (`osprey sign`), every one verifies, so a key rotates
    /// without breaking the URLs already out (put the new one first, drop the old one once its URLs have aged out).
    /// None by default: then every `/img` request is refused unless ``allowsUnsigned`` is set.
    public var secrets: [[UInt8]] = []
    /// The first of ``secrets``; setting it makes it the only one.
    public var secret: [UInt8]? {
        get { secrets.first }
        set { secrets = newValue.map { [$0] } ?? [] }
    }
    /// The wall clock `exp=` is checked against: the system's by default; a test passes one it sets itself.
    public var now: @Sendable () -> UnixTime = { .now }
    /// Serve requests without a `sig` (a signature that is present is still checked). `false` by default: an open
    /// resizer is an abuse magnet, so this must be asked for.
    public var allowsUnsigned = false

    // MARK: Presets

    /// Named sets of parameters a request applies with `p=NAME` (imgproxy's presets); one named `default` applies to
    /// every request. None by default.
    public var presets: [ImagePreset] = []
    /// Refuse every parameter but `url`, `p`, `exp` and `sig` (400): clients pick among the presets and nothing
    /// else. `false` by default.
    public var presetsOnly = false

    // MARK: Sources

    /// The source hosts allowed (exact names and `*.domain` patterns), checked for the URL and every redirect. Empty
    /// (any host) by default.
    public var allowedHosts: [HostPattern] = []
    /// Fetch from loopback, private, link-local and shared (CGNAT) addresses too. `false` by default. Cloud metadata,
    /// multicast, unspecified and reserved addresses stay refused even then; ``allowedSourceAddresses`` can name one.
    public var allowsPrivateNetworks = false
    /// Addresses allowed whatever their category: `10.0.0.5` (any port) or `10.0.0.5:8080`, `[fd00::1]:443`. For an
    /// internal origin the proxy must reach without opening every private network. None by default.
    public var allowedSourceAddresses: [SourceAddress] = []
    /// The directory `local:///path` sources are read from: `url=local:///photos/cat.jpg` is the file
    /// `<localRoot>/photos/cat.jpg`, symbolic links followed, and refused (404, as a missing file) when it resolves
    /// outside the directory. `nil` by default: only `http` and `https` sources.
    public var localRoot: String?
    /// What a request gets when its source cannot be had — not found, unreachable, timed out, not an image, not
    /// decodable — instead of the error: the fallback rendered with the request's parameters. `nil` (the error) by
    /// default. Refusals of the request itself (a bad parameter or signature, a forbidden source, a limit) are
    /// answered as errors all the same.
    public var fallbackImage: FallbackImage?
    /// The image `wm=` lays over results (a logo, a copyright mark), decoded once when configured. `nil` by default:
    /// `wm=` is then refused.
    public var watermark: WatermarkImage?
    /// Resolves source host names; the system's resolver (`getaddrinfo`) by default.
    public var hostResolver: any HostResolving = SystemHostResolver()
    /// The certificate authorities an `https` source's certificate must chain to: the system's by default; a PEM
    /// file's for origins signed by a private CA (they then replace the system's).
    public var certificateAuthorities = CertificateAuthorities.system
    /// The HTTP versions an `https` source's origin is offered: HTTP/1.1 only by default, which costs the proxy less
    /// CPU a source than HTTP/2; `.automatic` offers HTTP/2 as well, for origins that speak only HTTP/2.
    public var httpVersion = ImageDownloader.HTTPVersion.http1Only
    /// How many HTTP/1.1 connections to one origin the proxy opens at most; a source fetch past it waits for one.
    /// `nil` (as many as fetches to the origin run at once) by default; an origin that speaks HTTP/2 gets one.
    public var connectionsPerOrigin: Int?
    /// The forward proxies sources are fetched through (`osprey serve` reads `http_proxy`, `https_proxy` and
    /// `no_proxy` as curl does). The source address policy still checks every source's address before the proxy is
    /// asked for it. `nil` (every origin asked directly) by default.
    public var proxies: EgressProxies?

    // MARK: Other URL styles

    /// imgproxy's URLs, served under a prefix with their signatures and options (docs/migrating.md). `nil` (off) by
    /// default.
    public var imgproxy: ImgproxyConfiguration?
    /// thumbor's URLs, served under a prefix with libthumbor's signatures and thumbor's filters. `nil` (off) by
    /// default.
    public var thumbor: ThumborConfiguration?

    // MARK: Formats

    /// The quality of each format when a request gives none (`q`), as imgproxy's `IMGPROXY_FORMAT_QUALITY`: a
    /// format not listed is encoded at 80. None listed by default.
    public var formatQualities: [ImageFormat: Int] = [:]

    /// The highest `effort` a request may ask for (1–9, `EncodingOptions.setEffort(_:)`'s scale): above it, 400. 4 by
    /// default: AVIF at speed 6, 2.8× the CPU of its default for 2.3% fewer bytes on the corpus photos, where effort 6
    /// (speed 4) takes 14× and 9 (speed 1) 53× for the same bytes (docs/benchmarks.md) — work any client could ask
    /// for again and again.
    public var maxEffort = 4

    /// The coders sources are decoded with and outputs encoded with: `format=` takes the name of any format an
    /// encoder of it writes. The process-wide `ImageCoderRegistry.shared` by default.
    public var coders = ImageCoderRegistry.shared
    /// What `format=auto` answers, in order of preference: the first of these whose media type the client's `Accept`
    /// names (explicitly, with a q above 0); when it names none, the source's format where the client surely takes
    /// it, else JPEG or PNG by alpha. An animated source stays animated in any of them that animates (JPEG XL, AVIF,
    /// WebP, GIF). JPEG XL (which only clients that decode it list), then AVIF, then WebP, by default; AVIF's encoder
    /// costs more CPU than WebP's (docs/benchmarks.md), and an operator who would rather spend less leaves it out.
    public var autoFormats: [ImageFormat] = [.jxl, .avif, .webp]
    /// `format=auto` answers as `format=best` does: each of ``autoFormats`` the client accepts (and JPEG) at one
    /// perceptual target, the smallest kept (`best` in `--auto-format`'s list). `false` by default: the first of them.
    public var autoFormatIsBest = false

    // MARK: Limits

    /// The largest source body, in bytes, enforced while it streams (413). 32 MiB by default.
    public var maxSourceBytes = 32 << 20
    /// The most pixels a source may have, read from its header before decoding (413). 50 million by default.
    public var maxSourcePixels = 50_000_000
    /// The most pixels an output may have, asked for (400) or resulting (413). 16.8 million (4096²) by default.
    public var maxOutputPixels = 4096 * 4096
    /// The most frames an animated source may have (413). 500 by default.
    public var maxFrames = 500
    /// How long decoding and processing one image may take (503). 10 s by default.
    public var processingTimeout: Duration = .seconds(10)
    /// How long a source fetch may take, redirects and body included (504). 20 s by default.
    public var sourceTimeout: Duration = .seconds(20)
    /// The clock ``sourceTimeout`` and ``processingTimeout`` are measured on: the system's continuous clock by
    /// default; a test passes one it moves itself.
    public var clock: any Clock<Duration> = ContinuousClock()
    /// The most `/img` requests handled at once; more are answered 503 with `Retry-After`. 256 by default.
    public var maxInFlight = 256
    /// The memory the proxy's images may take, in bytes: its in-memory caches take at most a quarter of it (shrunk in
    /// proportion from ``resultMemoryLimit`` and the sources' share when that is less), and decoding and processing
    /// reserve the rest by what each source's header says it needs (`MemoryBudget`): a render that does not
    /// fit waits, one that alone needs more is a 413. `nil` (the default) for half the memory available to the process
    /// (its cgroup's limit, else the machine's).
    public var maxMemory: Int?
    /// The most renders that wait for memory; more are answered 503 with `Retry-After` at once. A render waits at most
    /// ``processingTimeout``, then gets the same answer. 64 by default.
    public var maxMemoryWaiting = 64
    /// A budget to reserve from instead of one made from ``maxMemory``, ``maxMemoryWaiting`` and
    /// ``processingTimeout``: an application that embeds the proxy beside its own image loading shares one budget
    /// between them, with that budget's own limits. `nil` by default.
    public var memoryBudget: MemoryBudget?

    // MARK: Caching

    /// The directory holding the disk caches of sources and of rendered results; the library's default
    /// (`$XDG_CACHE_HOME`, else `~/.cache`) by default.
    public var cacheDirectory: String = DiskCache.Configuration.platformCacheDirectory

    /// A store of its own for the sources and rendered results the proxy keeps, instead of a `DiskCache` in
    /// ``cacheDirectory`` (which ``diskCacheLimit`` then does not apply to): a volume shared by several instances, an
    /// object store. `nil` by default. Memory keeps what it keeps either way (decoded sources and encoded results).
    public var dataCache: (any DataCaching)?
    /// The most bytes the rendered results kept in memory may take. 256 MiB by default.
    public var resultMemoryLimit = 256 << 20
    /// The most bytes each disk cache (sources, results) may take. 1 GiB by default.
    public var diskCacheLimit = 1 << 30
    /// The `max-age` sent with images, in seconds. One year by default (a rendered URL never changes meaning; a
    /// source that changes gets a new ETag).
    public var cacheMaxAge = 31_536_000

    /// Told of each pipeline stage a load reaches (the manager's `stageObserver`), for tests that hold loads at a
    /// stage.
    var stageObserver: (@Sendable (ImageManager.Stage, URL) async -> Void)?

    // MARK: Client hints

    /// Whether and how `/img` reads the browser's client hints (DPR, layout width, viewport width, `Save-Data`), and
    /// answers `Accept-CH`: see ``ClientHintsConfiguration``. `nil` (off: no hint is read) by default.
    public var clientHints: ClientHintsConfiguration?

    // MARK: Image information

    /// Whether `/info` shows a photo's GPS position (`exif.gps`). `false` by default: where a photo was taken is its
    /// author's to publish, and a proxy in front of uploads should not publish it for them.
    public var infoIncludesGPS = false

    // MARK: Tracing

    /// Where the spans of requests go: a server span per request, continuing the trace its headers carry (W3C
    /// `traceparent` with OpenTelemetry's tracer), with the pipeline's spans under it — cache lookups, the download
    /// (whose request to the origin carries the trace on), decode, processing, encode, disk writes. `nil` (the tracer
    /// the process bootstrapped with `InstrumentationSystem.bootstrap`, if any; `osprey serve --otlp-endpoint`
    /// bootstraps one) by default; with neither, no span is made.
    public var tracer: (any Tracer)?

    /// Makes a configuration; every other property defaults as documented on it.
    public init(host: String = "127.0.0.1", port: Int = 8080) {
        self.host = host
        self.port = port
    }
}

/// An address a configuration allows as a source whatever its category: an IP literal, with or without a port.
public struct SourceAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address.
    public let address: IPAddress
    /// `nil` for any port.
    public let port: Int?

    /// Parses `10.0.0.5`, `10.0.0.5:8080`, `fd00::1` or `[fd00::1]:8080`; `nil` when it is none of those.
    public init?(_ text: String) {
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            guard let address = IPAddress(String(text[text.index(after: text.startIndex)..<close])) else { return nil }
            let rest = text[text.index(after: close)...]
            if rest.isEmpty {
                self.init(address: address, port: nil)
            } else {
                guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()), (1...65535).contains(port) else {
                    return nil
                }
                self.init(address: address, port: port)
            }
        } else if let address = IPAddress(text) {
            self.init(address: address, port: nil)
        } else if let colon = text.lastIndex(of: ":"), let address = IPAddress(String(text[..<colon])),
            address.isIPv4, let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port)
        {
            self.init(address: address, port: port)
        } else {
            return nil
        }
    }

    /// Makes an entry for `address`, at `port` only, or at any port when `port` is `nil`.
    public init(address: IPAddress, port: Int?) {
        self.address = address
        self.port = port
    }

    /// Whether a connection to `address`:`port` is this one.
    public func matches(_ address: IPAddress, port: Int) -> Bool {
        self.address == address && (self.port == nil || self.port == port)
    }

    /// The value as logs and messages print it.
    public var description: String {
        guard let port else { return address.description }
        return address.isIPv4 ? "\(address):\(port)" : "[\(address)]:\(port)"
    }
}

/// The image `osprey serve` answers with when a source cannot be had (``ServerConfiguration/fallbackImage``):
/// rendered with the request's own parameters, sent with ``status`` and `Cache-Control: no-store` (so that the real
/// image is served once its source is back). Read once, when the server is configured.
public struct FallbackImage: Sendable {
    /// The image's encoded bytes.
    public let bytes: [UInt8]
    /// The status it is sent with: 200 by default (a page shows it as it would the image), or the failure's own
    /// class (404, say) for clients that must know.
    public let status: Int
    /// The key the pipeline caches its renders under: a digest of the bytes.
    let cacheKey: String

    /// A fallback of `bytes`, sent with `status` (100–599).
    ///
    /// - Throws: ``InvalidImageQuery`` when the bytes are not an image Osprey reads (their header is checked) or the
    ///   status is not an HTTP status.
    public init(bytes: [UInt8], status: Int = 200, coders: ImageCoderRegistry = .shared) throws(InvalidImageQuery) {
        guard (100...599).contains(status) else {
            throw InvalidImageQuery(message: "the fallback status \(status) is not an HTTP status")
        }
        do {
            _ = try ImageHeader(reading: bytes, coders: coders)
        } catch {
            throw InvalidImageQuery(message: "the fallback image cannot be read: \(error)")
        }
        self.bytes = bytes
        self.status = status
        self.cacheKey = "fallback:" + SHA256.hash(data: bytes).map { String($0, radix: 16) }.joined()
    }
}

/// The image `osprey serve` lays over results that ask for it with `wm=` (``ServerConfiguration/watermark``): decoded
/// once, when the server is configured, and resized per result.
public struct WatermarkImage: Sendable {
    /// The decoded mark.
    let image: Image
    /// A digest of its bytes: renders with another mark are cached apart.
    let name: String

    /// A watermark from an image file's `bytes`.
    ///
    /// - Throws: ``InvalidImageQuery`` when they do not decode.
    public init(bytes: [UInt8], coders: ImageCoderRegistry = .shared) throws(InvalidImageQuery) {
        var options = DecodingOptions()
        options.coders = coders
        options.firstFrameOnly = true
        do {
            image = try ImageDecoder.decode(bytes, options: options)
        } catch {
            throw InvalidImageQuery(message: "the watermark cannot be decoded: \(error)")
        }
        name = SHA256.hash(data: bytes).prefix(12).map { String($0, radix: 16) }.joined()
    }
}
