public import HTTPTypes
public import Logging
public import Metrics
public import Tracing

extension ImageDownloader {
    /// The order in which transfers of one priority leave the queue.
    public enum Order: Sendable, Hashable {
        /// First in, first out: the default.
        case fifo
        /// Last in, first out: the newest request goes first (a scrolling list's visible rows).
        case lifo
    }

    /// The HTTP versions an `https` origin is offered when a connection to it opens (by ALPN, in the TLS handshake);
    /// `http` origins are always asked in HTTP/1.1.
    public enum HTTPVersion: Sendable, Hashable {
        /// HTTP/1.1 only, over as many keep-alive connections as transfers to the origin run at once (up to
        /// ``Configuration/connectionsPerHost``): the default. On this client it costs less CPU than HTTP/2, per small
        /// image and per megabyte of a large one (docs/benchmarks.md, "HTTP/1.1 or HTTP/2 to an https origin").
        case http1Only
        /// HTTP/2 when the origin chooses it, every transfer to the origin a stream of one connection; else HTTP/1.1.
        /// For an origin that speaks only HTTP/2, or one whose connections are few or slow to open.
        case automatic
    }

    /// How a downloader queues, sends and limits its downloads.
    public struct Configuration: Sendable {
        // MARK: Queue

        /// How many transfers run at once. 6 by default; ``ImageDownloader/maxConcurrentDownloads`` changes
        /// it at run time.
        public var maxConcurrentDownloads = 6
        /// FIFO or LIFO within a priority. `.fifo` by default.
        public var order = Order.fifo

        // MARK: Requests

        /// Headers sent with every request: `Accept: image/avif,image/webp,image/*;q=0.8` and
        /// `User-Agent: Osprey/<version>` by default. A request's own headers override these by name.
        public var headers: HTTPFields = [
            .accept: "image/avif,image/webp,image/*;q=0.8",
            .userAgent: "Osprey/\(OspreyVersion.current)",
        ]
        /// How long to wait to connect, and how long the origin may stay silent while answering. 15 s by
        /// default; zero means the default.
        public var timeout: Duration = .seconds(15)
        /// A time limit for each whole download, redirects and body included. `nil` (none) by default; zero means none.
        public var deadline: Duration?
        /// The clock ``deadline`` is measured on: the system's continuous clock by default; a test passes one it moves
        /// itself (`OspreyTesting.TestClock`).
        public var clock: any Clock<Duration> = ContinuousClock()
        /// The largest body accepted, in bytes, enforced while it streams. 64 MiB by default.
        public var maximumBodySize = 64 << 20
        /// How many redirects are followed before giving up. 10 by default.
        public var maximumRedirects = 10
        /// Credentials for requests that carry none. `nil` by default.
        public var credentials: Credentials?
        /// Whether requests that do not say send and keep cookies (the downloader's ``ImageDownloader/cookies``).
        /// `false` by default.
        public var handlesCookies = false
        /// A modifier for requests that carry none. `nil` by default.
        public var modifier: RequestModifier?
        /// How fast transfers may start (a token bucket: bursts, then a steady rate). `nil` (no limit but
        /// ``maxConcurrentDownloads``) by default.
        public var rateLimit: RateLimit?
        /// When failed transfers of requests that carry no strategy are tried again. `nil` (never) by default.
        public var retryStrategy: RetryStrategy?
        /// A validator of responses for requests that carry none: it sees each 2xx response's head before the body
        /// is read and may refuse it. `nil` by default.
        public var responseValidator: ResponseValidator?
        /// A transformation of downloaded bodies (decryption, unwrapping) for requests that carry none. `nil` by
        /// default.
        public var dataModifier: DataModifier?

        // MARK: Connections

        /// How many HTTP/1.1 connections to one origin the HTTP client opens at most; a transfer past it waits for
        /// one to come back. `nil` (the default): as many as transfers to it run at once (at most
        /// ``maxConcurrentDownloads``). An origin that speaks HTTP/2 gets one connection whatever this says.
        public var connectionsPerHost: Int?
        /// The HTTP versions `https` origins are offered. ``HTTPVersion/http1Only`` by default.
        public var httpVersion = HTTPVersion.http1Only
        /// How long an unused keep-alive connection stays open. 60 s by default.
        public var idleConnectionTimeout: Duration = .seconds(60)
        /// Chooses, before every hop of a transfer (the URL and each redirect), the address to connect to, or refuses
        /// it (``AddressResolving``). `nil` (the HTTP client resolves names itself) by default; an image proxy sets one
        /// that refuses private addresses.
        public var addressResolver: (any AddressResolving)?
        /// The forward proxies downloads go through (``EgressProxies``; `EgressProxies(environment:)` reads them as
        /// curl does). `nil` (every origin asked directly, whatever the environment says) by default.
        public var proxies: EgressProxies?
        /// The certificate authorities an `https` origin's certificate must chain to. ``CertificateAuthorities/system``
        /// by default; a request that allows invalid certificates checks none.
        public var certificateAuthorities = CertificateAuthorities.system
        /// How many interrupted bodies are kept to resume from (by `Range`, when the origin supports it). 16 by
        /// default; 0 turns resuming off.
        public var resumableDataCount = 16

        // MARK: Observing

        /// Where request-level messages go (at `debug` and `trace`). A logger labelled `osprey.downloader` by default.
        public var logger = Logger(label: "osprey.downloader")
        /// Where the downloader's metrics go: `osprey_download_requests_total`, `osprey_download_transfers_total`,
        /// `osprey_download_bytes_total` and `osprey_download_duration_seconds` (docs/architecture.md). `nil` (the
        /// process's bootstrapped metrics system) by default.
        public var metricsFactory: (any MetricsFactory)?
        /// Where the spans of downloads go: one `osprey.download` span per transfer, a child of the span current
        /// where the download was asked for, with the HTTP client's span of each request under it; the trace is sent
        /// on to the origin (with OpenTelemetry's tracer, as W3C `traceparent`). `nil` (the tracer the process
        /// bootstrapped with `InstrumentationSystem.bootstrap`, if any) by default.
        public var tracer: (any Tracer)?

        /// The defaults above.
        public init() {}

        /// A downloader for a proxy: more transfers at once, shorter timeouts, no cookies.
        public static var proxy: Configuration {
            var configuration = Configuration()
            configuration.maxConcurrentDownloads = 64
            configuration.timeout = .seconds(10)
            configuration.deadline = .seconds(30)
            return configuration
        }

        /// ``timeout`` with zero meaning the default.
        var effectiveTimeout: Duration { timeout <= .zero ? .seconds(15) : timeout }
    }
}
