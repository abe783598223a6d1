import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import OspreyServer

/// Limits, the status of each kind of source failure, sharing one origin fetch, and admission.
@Suite struct ProxyLimitTests {
    @Test func sourceFailuresMapToTheirStatuses() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            let jpeg = try Fixtures.jpeg()
            origin.route("/missing.jpg", .status(404))
            origin.route("/gone.jpg", .status(410))
            origin.route("/broken.jpg", .status(500))
            origin.route("/forbidden.jpg", .status(403))
            origin.route("/text.html", .ok(Array("<html>hello</html>".utf8), contentType: "text/html"))
            // A JPEG cut inside its entropy-coded data: it claims to be a JPEG and does not decode.
            origin.route("/truncated.jpg", .ok(Array(jpeg.prefix(400))))
            origin.route("/slow.jpg", OriginResponse.ok(jpeg).delayed(by: .seconds(30)))
            origin.route("/loop.jpg", .redirect(to: origin.url("/loop.jpg")))
            // The time limits run on a clock the test moves: no answer times out unless the test says so.
            let clock = TestClock()
            try await withProxy({ $0.clock = clock }) { client in
                for (path, status) in [
                    ("/missing.jpg", 404), ("/gone.jpg", 404), ("/broken.jpg", 502), ("/forbidden.jpg", 502),
                    ("/text.html", 415), ("/truncated.jpg", 422), ("/loop.jpg", 502),
                ] {
                    let response = try await client.execute(uri: imageURI([("url", origin.url(path))]), method: .get)
                    #expect(response.status.code == status, "\(path)")
                    #expect(try response.json()["status"] as? Int == status)
                }
                // /slow.jpg answers after 30 real seconds: once the download's deadline and the render's are set,
                // the source limit passes on the proxy's clock, and the answer is a 504.
                async let slow = client.execute(uri: imageURI([("url", origin.url("/slow.jpg"))]), method: .get)
                await clock.waitForSleepers(count: 2)
                clock.advance(by: ServerConfiguration().sourceTimeout)
                let timedOut = try await slow
                #expect(timedOut.status == .gatewayTimeout)
                #expect(try timedOut.json()["status"] as? Int == 504)
                // A lasting failure is remembered: the second request gets the same answer without the origin.
                let again = try await client.execute(
                    uri: imageURI([("url", origin.url("/missing.jpg")), ("w", "10")]), method: .get)
                #expect(again.status == .notFound)
                #expect(origin.requestCount("/missing.jpg") == 1)
                // A transient one is not: a 500 is asked again.
                _ = try await client.execute(uri: imageURI([("url", origin.url("/broken.jpg"))]), method: .get)
                #expect(origin.requestCount("/broken.jpg") == 2)
            }
        }
    }

    @Test func sourceBytesPixelsFramesAndOutputAreLimited() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            // A 20000 × 20000 header over a few bytes: refused from the header, before any pixel is allocated.
            origin.route("/huge.jpg", .ok(SyntheticImages.jpegHeader(width: 20000, height: 20000)))
            origin.route("/anim.gif", .ok(try Fixtures.animatedGIF()))
            origin.route("/big.png", .ok(try Fixtures.flatPNG(width: 300, height: 300)))
            try await withProxy({
                $0.maxSourceBytes = 20_000
                $0.maxSourcePixels = 1_000_000
                $0.maxFrames = 2
                $0.maxOutputPixels = 50_000
            }) { client in
                func status(_ parameters: [(String, String)]) async throws -> (Int, String) {
                    let response = try await client.execute(uri: imageURI(parameters), method: .get)
                    return (response.status.code, try response.json()["error"] as? String ?? "")
                }
                let bytes = try await status([("url", origin.url("/photo.jpg")), ("w", "10")])
                #expect(bytes == (413, "the source is larger than 20000 bytes"))
                let pixels = try await status([("url", origin.url("/huge.jpg")), ("w", "10")])
                #expect(pixels == (413, "the source has more than 1000000 pixels"))
                let frames = try await status([("url", origin.url("/anim.gif"))])
                #expect(frames == (413, "the source has more than 2 frames"))
                // 300 × 300 = 90,000 pixels out without a size: over the output limit; with one, fine.
                let output = try await status([("url", origin.url("/big.png"))])
                #expect(output.0 == 413)
                let resized = try await client.execute(
                    uri: imageURI([("url", origin.url("/big.png")), ("w", "100")]), method: .get)
                #expect(resized.status == .ok)
            }
        }
    }

    @Test func processingTimeIsLimited() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/big.png", .ok(try Fixtures.flatPNG(width: 3000, height: 3000)))
            let uri = imageURI([("url", origin.url("/big.png")), ("blur", "100"), ("w", "2999")])
            try await withTemporaryDirectory { directory in
                var logger = Logger(label: "test")
                logger.logLevel = .critical
                // A first proxy stores the source on disk, so the second one's time goes to decoding and blurring.
                var generous = testConfiguration(cacheDirectory: directory)
                generous.maxOutputPixels = 10_000_000
                let warm = buildApplication(configuration: generous, logger: logger)
                try await warm.test(.router) { client in
                    let response = try await client.execute(
                        uri: imageURI([("url", origin.url("/big.png")), ("w", "10")]), method: .get)
                    #expect(response.status == .ok)
                }
                var strict = generous
                strict.sourceTimeout = .milliseconds(100)
                strict.processingTimeout = .milliseconds(1)
                strict.clock = ContinuousClock()
                let app = buildApplication(configuration: strict, logger: logger)
                try await app.test(.router) { client in
                    let response = try await client.execute(uri: uri, method: .get)
                    #expect(response.status == .serviceUnavailable)
                    #expect(
                        try response.json()["error"] as? String == "the image took longer than the processing limit")
                }
                #expect(origin.requestCount("/big.png") == 1)
            }
        }
    }

    /// Six sources asked at once from one origin, two connections allowed: two fetches reach it, the others wait for
    /// those connections, and all six come over them; over http, and over https (HTTP/1.1, the default) trusted
    /// through the test's own authority.
    @Test(arguments: [false, true])
    func theConnectionLimitPerOriginHoldsForSourceFetches(tls: Bool) async throws {
        let authority = NSTemporaryDirectory() + "osprey-origin-ca-" + UUID().uuidString + ".pem"
        try TestCertificate.certificatePEM.write(toFile: authority, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: authority) }
        let authorities = try CertificateAuthorities(pemFile: authority)
        try await withOriginServer(testDataDirectory: nil, tls: tls) { origin in
            let gate = OriginGate()
            origin.route("/s.jpg", OriginResponse.ok(try Fixtures.jpeg()).held(by: gate))
            try await withProxy({
                $0.connectionsPerOrigin = 2
                $0.certificateAuthorities = authorities
            }) { client in
                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for index in 0..<6 {
                        group.addTask {
                            let uri = imageURI([("url", origin.url("/s.jpg?i=\(index)")), ("w", "32")])
                            return try await client.execute(uri: uri, method: .get).status
                        }
                    }
                    await origin.waitForRequests(to: "/s.jpg", count: 2)
                    #expect(origin.connectionCount == 2)
                    gate.open()
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses == Array(repeating: .ok, count: 6))
                #expect(origin.requestCount("/s.jpg") == 6)
                #expect(origin.requests(to: "/s.jpg").allSatisfy { $0.httpVersion == "HTTP/1.1" })
                #expect(origin.connectionCount == 2)
            }
        }
    }

    @Test func concurrentIdenticalRequestsShareOneOriginFetch() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            let gate = OriginGate()
            origin.route("/photo.jpg", OriginResponse.ok(try Fixtures.jpeg()).held(by: gate))
            try await withProxy { client in
                let uri = imageURI([("url", origin.url("/photo.jpg")), ("w", "64")])
                let bodies = try await withThrowingTaskGroup(of: (HTTPResponse.Status, ByteBuffer).self) { group in
                    for _ in 0..<200 {
                        group.addTask {
                            let response = try await client.execute(uri: uri, method: .get)
                            return (response.status, response.body)
                        }
                    }
                    await origin.waitForRequests(to: "/photo.jpg", count: 1)
                    gate.open()
                    var results: [(HTTPResponse.Status, ByteBuffer)] = []
                    for try await result in group { results.append(result) }
                    return results
                }
                #expect(bodies.count == 200)
                #expect(bodies.allSatisfy { $0.0 == .ok && $0.1 == bodies[0].1 })
                #expect(origin.requestCount("/photo.jpg") == 1)
            }
        }
    }

    @Test func requestsBeyondTheLimitGet503WithRetryAfter() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            let gate = OriginGate()
            origin.route("/slow.jpg", OriginResponse.ok(try Fixtures.jpeg()).held(by: gate))
            try await withProxy({ $0.maxInFlight = 1 }) { client in
                async let held = client.execute(uri: imageURI([("url", origin.url("/slow.jpg"))]), method: .get)
                await origin.waitForRequests(to: "/slow.jpg", count: 1)
                let refused = try await client.execute(uri: imageURI([("url", origin.url("/other.jpg"))]), method: .get)
                #expect(refused.status == .serviceUnavailable)
                #expect(refused.headers[.retryAfter] == "1")
                // Health is not counted against the limit.
                #expect(try await client.execute(uri: "/health", method: .get).status == .ok)
                gate.open()
                #expect(try await held.status == .ok)
                let after = try await client.execute(uri: imageURI([("url", origin.url("/slow.jpg"))]), method: .get)
                #expect(after.status == .ok)
            }
        }
    }
}
