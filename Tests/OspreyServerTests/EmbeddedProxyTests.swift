import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import InMemoryTracing
import Logging
import OspreyCodecs
import OspreyTesting
import Prometheus
import Testing
import Tracing

@testable import OspreyServer

/// The proxy mounted in an application of its own: its routes under a path, next to the application's, one process.
@Suite struct EmbeddedProxyTests {
    static let secret = Array("an application's secret".utf8)

    @Test(
        "mounted at /media: the application's routes and the proxy's answer in one server; signatures cover the mount")
    func mountedBesideTheApplicationsRoutes() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg(), contentType: "image/jpeg"))
            try await withTemporaryDirectory { directory in
                var configuration = testConfiguration(cacheDirectory: directory)
                configuration.allowsUnsigned = false
                configuration.secret = Self.secret
                let registry = PrometheusCollectorRegistry()
                let pages = registry.makeCounter(
                    descriptor: MetricNameDescriptor(
                        namespace: "application", metricName: "pages", unitName: "total", helpText: "Pages served."))
                let images = ImageProxyEndpoint(configuration: configuration, registry: registry)
                let router = Router()
                router.get("/hello") { _, _ -> String in
                    pages.increment()
                    return "hello from the application"
                }
                router.addRoutes(images.routes(), atPath: "/media")
                let app = Application(router: router, services: [images.service])

                try await app.test(.live) { client in
                    let hello = try await client.execute(uri: "/hello", method: .get)
                    #expect(String(buffer: hello.body) == "hello from the application")

                    let parameters = [("url", origin.url("/photo.jpg")), ("w", "64")]
                    let signer = URLSigner(secret: Self.secret)
                    let image = try await client.execute(
                        uri: signer.signedPath("/media/img", parameters: parameters), method: .get)
                    #expect(image.status == .ok)
                    #expect(try Fixtures.decode(image.body).width == 64)
                    // Signed for another path, the same query is refused; the root has no proxy.
                    let elsewhere = try await client.execute(
                        uri: "/media" + signer.signedPath("/img", parameters: parameters), method: .get)
                    #expect(elsewhere.status == .forbidden)
                    let root = try await client.execute(
                        uri: signer.signedPath("/img", parameters: parameters), method: .get)
                    #expect(root.status == .notFound)

                    let ready = try await client.execute(uri: "/media/ready", method: .get)
                    #expect(ready.status == .ok)
                    let metrics = String(buffer: try await client.execute(uri: "/media/metrics", method: .get).body)
                    #expect(metrics.contains("application_pages_total 1"))
                    // The image and /media/ready; the application's own page is not the proxy's to count.
                    #expect(metrics.contains(#"osprey_http_requests_total{status="200"} 2"#))
                    #expect(metrics.contains(#"osprey_http_requests_total{status="403"} 1"#))
                }
            }
            #expect(origin.requestCount("/photo.jpg") == 1)
        }
    }

    @Test("without its operations routes, only img is mounted; under the application's request span, no second one")
    func imageRouteOnlyUnderTheApplicationsSpans() async throws {
        let tracer = InMemoryTracer()
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg(), contentType: "image/jpeg"))
            try await withTemporaryDirectory { directory in
                var configuration = testConfiguration(cacheDirectory: directory)
                configuration.tracer = tracer
                let images = ImageProxyEndpoint(configuration: configuration)
                let router = Router()
                router.add(middleware: ApplicationSpanMiddleware(tracer: tracer))
                router.addRoutes(images.routes(operations: false), atPath: "/images")
                let app = Application(router: router, services: [images.service])
                try await app.test(.router) { client in
                    let uri = imageURI([("url", origin.url("/photo.jpg")), ("w", "32")]).replacingOccurrences(
                        of: "/img", with: "/images/img")
                    let image = try await client.execute(uri: uri, method: .get)
                    #expect(image.status == .ok)
                    let health = try await client.execute(uri: "/images/health", method: .get)
                    #expect(health.status == .notFound)
                }
            }
        }
        let spans = tracer.finishedSpans
        let application = try #require(
            spans.first {
                $0.operationName == "application request"
                    && $0.attributes["path"]?.toSpanAttribute() == .string("/images/img")
            })
        #expect(!spans.contains { $0.kind == .server })
        let download = try #require(spans.first { $0.operationName == "osprey.download" })
        #expect(download.traceID == application.traceID)
    }
}

/// An application's own request span, made before the proxy's routes run.
private struct ApplicationSpanMiddleware<Context: RequestContext>: RouterMiddleware {
    let tracer: InMemoryTracer

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let span = tracer.startSpan("application request")
        span.attributes["path"] = request.uri.path
        defer { span.end() }
        return try await InstrumentationContext.$current.withValue(span.context) { try await next(request, context) }
    }
}
