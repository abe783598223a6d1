import Foundation
import Hummingbird
import Logging
import OspreyServer
import Prometheus

/// An application of its own — a page, a greeting and its metrics — with Osprey's image proxy mounted under `/media`:
/// one server, one lifecycle, one logger, one Prometheus registry.
///
/// ```sh
/// swift run EmbeddedProxyExample --port 8080
/// curl 'http://127.0.0.1:8080/hello'
/// curl -o cat.webp 'http://127.0.0.1:8080/media/img?url=https%3A%2F%2Fexample.com%2Fcat.jpg&w=300&format=webp'
/// ```
///
/// `OSPREY_SECRET` set: image URLs must be signed (over `/media/img?...`); unset: unsigned ones are served.
/// `EXAMPLE_CACHE_DIR` picks the cache directory, `EXAMPLE_ALLOW_PRIVATE_NETWORKS=1` lets sources be on loopback.
@main
struct EmbeddedProxyExample {
    static func main() async throws {
        let arguments = CommandLine.arguments
        let port = arguments.firstIndex(of: "--port").flatMap { Int(arguments[$0 + 1]) } ?? 8080
        let environment = ProcessInfo.processInfo.environment
        let logger = Logger(label: "example")

        var configuration = ServerConfiguration()
        if let secret = environment["OSPREY_SECRET"], !secret.isEmpty {
            configuration.secret = Array(secret.utf8)
        } else {
            configuration.allowsUnsigned = true
        }
        configuration.allowsPrivateNetworks = environment["EXAMPLE_ALLOW_PRIVATE_NETWORKS"] == "1"
        if let directory = environment["EXAMPLE_CACHE_DIR"] { configuration.cacheDirectory = directory }

        // The application's registry: the proxy's metrics join the application's own on one /metrics.
        let registry = PrometheusCollectorRegistry()
        let greetings = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "example", metricName: "greetings", unitName: "total", helpText: "Greetings sent."))
        let images = ImageProxyEndpoint(configuration: configuration, logger: logger, registry: registry)

        let router = Router()
        router.get("/hello") { _, _ -> String in
            greetings.increment()
            return "hello from the application\n"
        }
        // The application's own /metrics, with the proxy's metrics in it.
        router.get("/metrics") { _, _ -> String in registry.emitToString() }
        // Only /media/img: health and metrics are the application's.
        router.addRoutes(images.routes(operations: false), atPath: "/media")

        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            services: [images.service],
            onServerRunning: { channel in
                logger.info("example listening", metadata: ["address": "127.0.0.1:\(channel.localAddress?.port ?? 0)"])
            },
            logger: logger
        )
        try await app.runService()
    }
}
