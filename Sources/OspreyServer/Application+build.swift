import FoundationEssentials
import HTTPTypes
public import Hummingbird
public import Logging
import NIOCore
import Osprey
public import Prometheus
public import ServiceLifecycle

/// Builds the `osprey serve` HTTP application: ``ImageProxyEndpoint``'s routes at the root — `GET`/`HEAD /img` and
/// `/info`, `GET /health` (liveness), `GET /ready` (readiness), `GET /metrics` — and its service. `osprey serve` and the tests
/// both go through here, so what the tests exercise is exactly what runs; an application of its own mounts the
/// endpoint the same way (``ImageProxyEndpoint``).
///
/// ```swift
/// var configuration = ServerConfiguration(port: 8080)
/// configuration.secret = Array(secret.utf8)
/// let app = buildApplication(configuration: configuration)
/// try await app.runService()
/// ```
///
/// The application carries a service that shuts the proxy's downloader down once the server has stopped, after the
/// requests in flight have finished.
public func buildApplication(
    configuration: ServerConfiguration, logger: Logger = Logger(label: "osprey.serve")
) -> some ApplicationProtocol {
    let endpoint = ImageProxyEndpoint(configuration: configuration, logger: logger)
    let router = Router()
    // The middlewares on the router rather than the routes: requests for paths the proxy does not serve are traced,
    // logged and counted too.
    endpoint.addMiddlewares(to: router)
    router.addRoutes(endpoint.routes(withMiddlewares: false))
    return Application(
        router: router,
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port),
            serverName: "osprey/\(OspreyVersion.current)"
        ),
        // Ready once the server listens, reported by the application (the endpoint's own service would say so as it
        // starts, before the socket is bound).
        services: [ProxyService(proxy: endpoint.proxy, marksServing: false)],
        onServerRunning: { channel in
            endpoint.proxy.markServing()
            logger.info(
                "osprey serve listening",
                metadata: [
                    "address": "\(channel.localAddress.map(displayed) ?? "unknown")",
                    "cache": "\(configuration.cacheDirectory)",
                ])
        },
        logger: logger
    )
}

/// The image proxy as a part of any Hummingbird 2 application: its routes, mounted under a path of the application's
/// choice, and a service that runs with the application's. The application's request logger (with its request id)
/// logs for it; its Prometheus registry, when given, holds the proxy's metrics beside the application's own; its
/// tracer (``ServerConfiguration/tracer``, or the bootstrapped one) gets the proxy's spans, under the application's
/// request span when it makes one.
///
/// ```swift
/// let images = ImageProxyEndpoint(configuration: configuration, registry: registry)
/// let router = Router()
/// router.get("/") { _, _ in "my application" }
/// router.addRoutes(images.routes(), atPath: "/media")       // GET /media/img?url=...&w=300, /media/health, ...
/// let app = Application(router: router, services: [images.service])
/// try await app.runService()
/// ```
///
/// Signed URLs are signed over the path the client asks for, the mount point included (`/media/img?...`; `osprey
/// sign --base` takes it). The service marks the endpoint ready (`/ready`) when it starts, drains it when the
/// application shuts down gracefully, and shuts the proxy's downloader down after the server has stopped.
public final class ImageProxyEndpoint: Sendable {
    /// The configuration the endpoint was made with.
    public let configuration: ServerConfiguration
    let proxy: ImageProxy
    let metrics: ProxyMetrics

    /// Makes the proxy: its manager, caches and downloader. `registry` collects its metrics (a registry of its own by
    /// default, which its `metrics` route writes out).
    public init(
        configuration: ServerConfiguration, logger: Logger = Logger(label: "osprey.serve"),
        registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()
    ) {
        self.configuration = configuration
        metrics = ProxyMetrics(registry: registry)
        proxy = ImageProxy(configuration: configuration, metrics: metrics, logger: logger)
    }

    /// The routes, relative to where the application mounts them: `GET`/`HEAD img`, and unless `operations` is
    /// `false`, `GET health` (liveness), `GET ready` (readiness) and `GET metrics` (Prometheus: the registry's, the
    /// application's metrics too when it shares one). Each request is logged on one line with its id and counted by
    /// status; with a tracer and no request span of the application's, each is a server span.
    public func routes<Context: RequestContext>(
        context: Context.Type = BasicRequestContext.self, operations: Bool = true
    ) -> RouteCollection<Context> {
        routes(context: context, operations: operations, withMiddlewares: true)
    }

    /// The routes, with the tracing and logging middlewares unless `withMiddlewares` is `false` (`osprey serve`
    /// puts them on its router instead, for every path).
    func routes<Context: RequestContext>(
        context: Context.Type = BasicRequestContext.self, operations: Bool = true, withMiddlewares: Bool
    ) -> RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        if withMiddlewares { addMiddlewares(to: routes) }
        let proxy = self.proxy
        let metrics = self.metrics
        if operations {
            routes.get("health") { _, _ in
                await HealthResponse(proxy: proxy)
            }
            routes.get("ready") { _, _ in
                ReadinessResponse(readiness: proxy.readiness)
            }
            routes.get("metrics") { _, _ in
                metrics.record(proxy.memoryBudget.usage)
                metrics.record(proxy.manager.statistics)
                var headers = HTTPFields()
                headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
                return Response(
                    status: .ok, headers: headers,
                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
            }
        }
        routes.get("img") { request, context in
            await ImageResponder(proxy: proxy).respond(to: request, style: .img, logger: context.logger, isHead: false)
        }
        routes.head("img") { request, context in
            await ImageResponder(proxy: proxy).respond(to: request, style: .img, logger: context.logger, isHead: true)
        }
        routes.get("info") { request, context in
            await ImageResponder(proxy: proxy).respondInfo(to: request, logger: context.logger, isHead: false)
        }
        routes.head("info") { request, context in
            await ImageResponder(proxy: proxy).respondInfo(to: request, logger: context.logger, isHead: true)
        }
        // imgproxy's and thumbor's URLs under their prefixes: everything below the prefix is the URL to parse (the
        // router's own reading of it would merge the empty segments of a plain source's `http://`).
        for (style, prefix) in [
            (ImageProxy.URLStyle.imgproxy, configuration.imgproxy?.path),
            (.thumbor, configuration.thumbor?.path),
        ] {
            guard let prefix else { continue }
            let pattern = RouterPath(
                prefix.split(separator: "/").joined(separator: "/") + (prefix == "/" ? "**" : "/**"))
            routes.get(pattern) { request, context in
                await ImageResponder(proxy: proxy).respond(
                    to: request, style: style, logger: context.logger, isHead: false)
            }
            routes.head(pattern) { request, context in
                await ImageResponder(proxy: proxy).respond(
                    to: request, style: style, logger: context.logger, isHead: true)
            }
        }
        return routes
    }

    /// Adds the request tracing (with a tracer) and logging middlewares to `routes`.
    func addMiddlewares<Routes: RouterMethods>(to routes: Routes) {
        if let tracer = proxy.manager.tracer {
            _ = routes.add(middleware: RequestTracingMiddleware<Routes.Context>(tracer: tracer))
        }
        _ = routes.add(middleware: RequestLogMiddleware<Routes.Context>(metrics: metrics))
    }

    /// The service to run with the application (`Application(services:)` or `addServices`): ready when it starts,
    /// draining from the graceful shutdown on, and the downloader shut down once the server has stopped.
    public var service: any Service { ProxyService(proxy: proxy, marksServing: true) }
}

/// `host:port` as a URL writes it (`[::1]:8080` for IPv6).
private func displayed(_ address: SocketAddress) -> String {
    let host = address.ipAddress ?? "\(address)"
    let port = address.port.map { ":\($0)" } ?? ""
    if case .v6 = address { return "[\(host)]\(port)" }
    return host + port
}

/// Logs each request on one line with its id (`osprey.request.id`, also sent back as `X-Request-Id`; a sane id the
/// client or a front proxy sent is kept), and counts it by status.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: ProxyMetrics

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws
        -> Response
    {
        var context = context
        let id = request.headers[.xRequestID].flatMap(Self.sanitized) ?? Self.newID()
        context.logger[metadataKey: "osprey.request.id"] = "\(id)"
        let start = ContinuousClock.now
        let status: Int
        do {
            var response = try await next(request, context)
            response.headers[.xRequestID] = id
            status = response.status.code
            log(request, status: status, since: start, logger: context.logger)
            return response
        } catch let error as any HTTPResponseError {
            status = error.status.code
            log(request, status: status, since: start, logger: context.logger)
            throw error
        }
    }

    private func log(_ request: Request, status: Int, since start: ContinuousClock.Instant, logger: Logger) {
        metrics.answered(status: status)
        let elapsed = ContinuousClock.now - start
        let milliseconds = Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3
        logger.info(
            "\(request.method) \(request.uri.path) \(status)",
            metadata: [
                "osprey.status": "\(status)",
                "osprey.duration_ms": "\((milliseconds * 100).rounded() / 100)",
            ])
    }

    private static func sanitized(_ id: String) -> String? {
        guard (1...64).contains(id.count),
            id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") })
        else { return nil }
        return id
    }

    private static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 16).leftPadded(to: 16)
    }
}

extension HTTPField.Name {
    static let xRequestID = HTTPField.Name("X-Request-Id")!
}

/// Shuts the proxy's downloader down when the application stops, after the server (which stops first) has let its
/// requests finish.
struct ProxyService: Service {
    let proxy: ImageProxy
    /// Mark the proxy ready as the service starts: in an application that embeds the endpoint, which has no other
    /// signal of the server running.
    let marksServing: Bool

    func run() async throws {
        if marksServing { proxy.markServing() }
        try? await gracefulShutdown()
        // Readiness turns at once, so a load balancer still polling on a kept-alive connection stops sending.
        proxy.beginDraining()
        await proxy.shutdown()
    }
}

/// `GET /ready`: 200 `{"status":"ready"}` when a new request would be taken, else 503 with the reason
/// (`starting`, `draining`, `saturated`); never cached.
struct ReadinessResponse: ResponseGenerator {
    let readiness: ImageProxy.Readiness

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        let body = ByteBuffer(string: "{\"status\":\"\(readiness.rawValue)\"}")
        headers[.contentLength] = String(body.readableBytes)
        return Response(
            status: readiness == .ready ? .ok : .serviceUnavailable, headers: headers,
            body: ResponseBody(byteBuffer: body))
    }
}

/// The body of `GET /health`.
struct HealthResponse: ResponseEncodable {
    struct CacheStats: Encodable {
        /// Encoded results in memory, and their bytes.
        let resultsInMemory: Int
        let resultsInMemoryBytes: Int
        /// Entries on disk (sources and rendered results), and their bytes; absent when the cache's store cannot
        /// count them cheaply (one plugged in instead of the disk cache).
        let entriesOnDisk: Int?
        let entriesOnDiskBytes: Int?
    }

    let status: String
    let version: String
    let requestsInFlight: Int
    let cache: CacheStats

    init(proxy: ImageProxy) async {
        status = "ok"
        version = OspreyVersion.current
        requestsInFlight = proxy.requestsInFlight
        let memory = proxy.manager.cache.encodedMemoryTotals
        let disk = await proxy.manager.cache.storedTotals()
        cache = CacheStats(
            resultsInMemory: memory.count, resultsInMemoryBytes: memory.bytes, entriesOnDisk: disk?.count,
            entriesOnDiskBytes: disk?.size)
    }
}
