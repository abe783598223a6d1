import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Osprey
import OspreyTesting
import Prometheus
import Testing

@testable import OspreyServer

/// `/health` (liveness) and `/ready` (readiness: not while starting, draining or saturated by admission).
@Suite struct ProxyReadinessTests {
    @Test("a listening server is ready; saturated while admission is full; ready again once it is not")
    func readyAndSaturated() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            let gate = OriginGate()
            origin.route("/slow.jpg", OriginResponse.ok(try Fixtures.jpeg()).held(by: gate))
            try await withProxy(setup: .live, { $0.maxInFlight = 1 }) { client in
                let ready = try await client.execute(uri: "/ready", method: .get)
                #expect(ready.status == .ok)
                #expect(String(buffer: ready.body) == #"{"status":"ready"}"#)
                #expect(ready.headers[.cacheControl] == "no-store")

                // A second connection, as a load balancer's probe has: the first is busy with the held request.
                let probe = TestClient(host: "127.0.0.1", port: try #require(client.port))
                probe.connect()
                async let held = client.execute(uri: imageURI([("url", origin.url("/slow.jpg"))]), method: .get)
                await origin.waitForRequests(to: "/slow.jpg", count: 1)
                let saturated = try await probe.execute(TestClient.Request("/ready", method: .get))
                #expect(saturated.status == .serviceUnavailable)
                #expect(saturated.body.map { String(buffer: $0) } == #"{"status":"saturated"}"#)
                // Alive all the same.
                let health = try await probe.execute(TestClient.Request("/health", method: .get))
                #expect(health.status == .ok)

                gate.open()
                let answered = try await held
                #expect(answered.status == .ok)
                let again = try await probe.execute(TestClient.Request("/ready", method: .get))
                #expect(again.status == .ok)
                try await probe.shutdown()
            }
        }
    }

    @Test("before the server listens, /ready says starting")
    func starting() async throws {
        // The router alone: no server is listening, so the application never reported running.
        try await withProxy(setup: .router) { client in
            let response = try await client.execute(uri: "/ready", method: .get)
            #expect(response.status == .serviceUnavailable)
            #expect(String(buffer: response.body) == #"{"status":"starting"}"#)
        }
    }

    @Test("the phases in order: starting, ready once serving, draining once shutting down (whatever the load)")
    func phases() async throws {
        try await withTemporaryDirectory { directory in
            let configuration = testConfiguration(cacheDirectory: directory)
            let registry = PrometheusCollectorRegistry()
            let proxy = ImageProxy(
                configuration: configuration, metrics: ProxyMetrics(registry: registry),
                logger: Logger(label: "test"))
            #expect(proxy.readiness == .starting)
            // Its disk cache writes large sources around the page cache (no answer waits for a store)
            #expect(proxy.manager.cache.diskCache?.configuration.writesAroundPageCache == true)
            // Its downloader asks https origins in HTTP/1.1, as many connections to one as fetches to it by default
            let downloader = try #require(proxy.manager.loader as? ImageDownloader)
            #expect(downloader.configuration.httpVersion == .http1Only)
            #expect(downloader.configuration.connectionsPerHost == nil)
            proxy.markServing()
            #expect(proxy.readiness == .ready)
            proxy.beginDraining()
            #expect(proxy.readiness == .draining)
            proxy.markServing()  // Starting is over: a drain is never undone.
            #expect(proxy.readiness == .draining)
            await proxy.shutdown()
        }
    }
}
