import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey
@testable import OspreyServer

/// What a stranger sends must not take the proxy down or past its checks: each case over a real socket, followed by
/// a request showing that the process still answers.
@Suite struct ProxyHardeningTests {
    @Test(
        "a source with a port outside 1–65535 is a 400, in the default configuration, and the proxy lives on",
        arguments: [
            "http://127.0.0.1:99999/x.jpg", "http://93.184.216.34:99999/x.jpg", "http://93.184.216.34:0/x.jpg",
            "http://[2606:2800:220:1::]:65536/x.jpg", "http://example.com:99999999999999999999999/x.jpg",
        ])
    func anImpossiblePortIsABadRequest(source: String) async throws {
        try await withProxy(setup: .live, { $0.allowsPrivateNetworks = false }) { client in
            let response = try await client.execute(uri: imageURI([("url", source)]), method: .get)
            #expect(response.status == .badRequest)
            #expect(
                try response.json()["error"] as? String == "'url' is not valid: the port is not between 1 and 65535")
            let health = try await client.execute(uri: "/health", method: .get)
            #expect(health.status == .ok)
        }
    }

    @Test func aRedirectToAnImpossiblePortIsABadGatewayAndTheProxyLivesOn() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/hop.jpg", .redirect(to: "http://127.0.0.1:99999/x.jpg"))
            try await withProxy(setup: .live) { client in
                let response = try await client.execute(
                    uri: imageURI([("url", origin.url("/hop.jpg"))]), method: .get)
                #expect(response.status == .badGateway)
                let health = try await client.execute(uri: "/health", method: .get)
                #expect(health.status == .ok)
            }
            #expect(origin.requestCount("/hop.jpg") == 1)
        }
    }

    @Test(
        "a host with a control character, decoded or not, is refused before any host pattern or resolver sees it",
        arguments: [
            "http://evil.test%00.example.com/x.jpg", "http://evil.test%0d%0a.example.com/x.jpg",
            "http://evil.test%2F.example.com/x.jpg", "http://evil%20test.example.com/x.jpg",
        ])
    func aHostWithControlCharactersIsRefused(source: String) async throws {
        try await withProxy(
            setup: .live,
            {
                $0.allowedHosts = [HostPattern("*.example.com")!]
                // Were it resolved, it would reach this.
                $0.hostResolver = FixedResolver(table: ["evil.test": [IPAddress("93.184.216.34")!]])
            }
        ) { client in
            let response = try await client.execute(uri: imageURI([("url", source)]), method: .get)
            #expect(response.status == .badRequest)
            #expect(
                try response.json()["error"] as? String
                    == "'url' is not valid: the host is not a valid host name or IP address")
        }
    }

    @Test func theSourcePixelLimitCountsTheDeclaredSizeNotTheScaledOne() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            // 900 MP declared in a few bytes; with w=100 the JPEG would be decoded at 1/8, 3750 × 3750 = 14 MP.
            origin.route("/huge.jpg", .ok(SyntheticImages.jpegHeader(width: 30000, height: 30000)))
            try await withProxy(setup: .live) { client in
                let response = try await client.execute(
                    uri: imageURI([("url", origin.url("/huge.jpg")), ("w", "100")]), method: .get)
                #expect(response.status == .contentTooLarge)
                #expect(try response.json()["error"] as? String == "the source has more than 50000000 pixels")
            }
        }
    }

    @Test func aSourceThatAloneNeedsMoreThanTheMemoryBudgetIsA413() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            // 300 × 300 RGB: 270,000 bytes decoded.
            origin.route("/big.png", .ok(try Fixtures.flatPNG(width: 300, height: 300)))
            try await withProxy(setup: .live, { $0.maxMemory = 200_000 }) { client in
                let response = try await client.execute(
                    uri: imageURI([("url", origin.url("/big.png")), ("w", "10")]), method: .get)
                #expect(response.status == .contentTooLarge)
                #expect(
                    try response.json()["error"] as? String
                        == "decoding the source would take more memory than the server may use")
                let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                // Decoding gets three quarters; the memory caches the rest.
                #expect(metrics.contains("osprey_memory_budget_bytes 150000"))
            }
        }
    }

    @Test func withTheMemoryTakenARenderWaitsInABoundedQueueAndBeyondItIsA503() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/a.png", .ok(try Fixtures.flatPNG(width: 300, height: 300)))
            origin.route("/b.png", .ok(try Fixtures.flatPNG(width: 301, height: 300)))
            let arrivals = ArrivalCounter()
            // Room for one decode; one render may wait.
            let budget = MemoryBudget(
                bytes: 400_000, maxWaiting: 1, maxWait: nil, held: { 0 }, onWaiting: { _ in arrivals.arrive() })
            // In process (the live test client has one connection, which the waiting request would hold).
            try await withProxy({ $0.memoryBudget = budget }) { client in
                // Given the memory taken (by another render of the same process, say)
                let taken = try await budget.reserve(300_000)
                // When a render comes, it waits for it
                let waiting = Task {
                    try await client.execute(uri: imageURI([("url", origin.url("/a.png")), ("w", "10")]), method: .get)
                }
                await arrivals.wait(for: 1)
                // And one more, past the queue's bound, gets 503 with Retry-After at once
                let refused = try await client.execute(
                    uri: imageURI([("url", origin.url("/b.png")), ("w", "10")]), method: .get)
                #expect(refused.status == .serviceUnavailable)
                #expect(refused.headers[.retryAfter] == "1")
                let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                #expect(metrics.contains("osprey_memory_waiting 1"))
                #expect(metrics.contains("osprey_memory_reserved_bytes 300000"))
                // Then, the memory given back, the waiting render is answered
                taken.release()
                #expect(try await waiting.value.status == .ok)
                let retried = try await client.execute(
                    uri: imageURI([("url", origin.url("/b.png")), ("w", "10")]), method: .get)
                #expect(retried.status == .ok)
                #expect(budget.usage.reserved == 0)
            }
        }
    }

    @Test func privateAndNoStoreSourcesAreKeptInNoSharedCacheAndSaySoDownstream() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            let jpeg = try Fixtures.jpeg()
            for (path, cacheControl) in [("/private.jpg", "private, max-age=600"), ("/secret.jpg", "no-store")] {
                origin.route(
                    path,
                    OriginResponse(
                        status: 200, headers: [("Content-Type", "image/jpeg"), ("Cache-Control", cacheControl)],
                        body: jpeg))
            }
            origin.route("/public.jpg", .ok(jpeg))
            try await withProxy(setup: .live) { client in
                for _ in 0..<2 {
                    for path in ["/private.jpg", "/secret.jpg", "/public.jpg"] {
                        let response = try await client.execute(
                            uri: imageURI([("url", origin.url(path)), ("w", "64")]), method: .get)
                        #expect(response.status == .ok, "\(path)")
                        let expected =
                            switch path {
                            case "/private.jpg": "private, max-age=31536000"
                            case "/secret.jpg": "no-store"
                            default: "public, max-age=31536000"
                            }
                        #expect(response.headers[.cacheControl] == expected, "\(path)")
                    }
                }
            }
            // Neither the source nor the render of a private or no-store image was kept: both were fetched twice.
            #expect(origin.requestCount("/private.jpg") == 2)
            #expect(origin.requestCount("/secret.jpg") == 2)
            #expect(origin.requestCount("/public.jpg") == 1)
        }
    }

    @Test func hostPatternsNeverMatchWhatNoHostNameCanBe() {
        let pattern = HostPattern("*.example.com")!
        #expect(pattern.matches("a.example.com"))
        #expect(!pattern.matches("evil.test\u{0}.example.com"))
        #expect(!pattern.matches("evil.test/.example.com"))
        #expect(!HostPattern("example.com")!.matches("example.com\u{0}"))
    }
}
