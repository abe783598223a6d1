import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import OspreyTesting
import Testing

@Suite struct OriginServerTests {
    let body = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }

    @Test func servesAScriptedBodyAndRecordsTheRequest() async throws {
        try await withOriginServer { server in
            server.route("/a.bin", .ok(body, contentType: "application/x-test").header("X-Test", "yes"))
            let fetched = try await withHTTPClient {
                try await $0.fetch(server.url("/a.bin?v=1"), headers: [("X-Client", "abc")])
            }

            #expect(fetched.status == 200)
            #expect(fetched.body == body)
            #expect(fetched.headers["Content-Type"] == ["application/x-test"])
            #expect(fetched.headers["Content-Length"] == ["10000"])
            #expect(fetched.headers["X-Test"] == ["yes"])
            #expect(server.requestCount("/a.bin") == 1)
            #expect(server.requestCount() == 1)
            let recorded = try #require(server.requests(to: "/a.bin").first)
            #expect(recorded.method == "GET")
            #expect(recorded.uri == "/a.bin?v=1")
            #expect(recorded.header("x-client") == "abc")
            #expect(server.inFlightCount("/a.bin") == 0)
        }
    }

    @Test func unscriptedPathsAre404AndScriptsCanChange() async throws {
        try await withOriginServer { server in
            try await withHTTPClient { (client: HTTPClient) async throws in
                #expect(try await client.fetch(server.url("/missing")).status == 404)
                server.route("/x", .status(503))
                #expect(try await client.fetch(server.url("/x")).status == 503)
                server.route("/x", .ok([1, 2, 3]))
                #expect(try await client.fetch(server.url("/x")).body == [1, 2, 3])
                server.removeRoute("/x")
                #expect(try await client.fetch(server.url("/x")).status == 404)
            }
            #expect(server.requestCount("/missing") == 1)
            #expect(server.requestCount("/x") == 3)
        }
    }

    @Test func headAnswersTheLengthWithoutTheBody() async throws {
        try await withOriginServer { server in
            server.route("/a", .ok(body))
            let fetched = try await withHTTPClient { try await $0.fetch(server.url("/a"), method: .HEAD) }
            #expect(fetched.status == 200)
            #expect(fetched.headers["Content-Length"] == ["10000"])
            #expect(fetched.body.isEmpty)
        }
    }

    @Test func delaysTheHeaders() async throws {
        try await withOriginServer { server in
            server.route("/slow", .ok(body).delayed(by: .milliseconds(400)))
            // A client that waits at most 50 ms for bytes gives up on it...
            await #expect(throws: HTTPClientError.readTimeout) {
                try await withHTTPClient(readTimeout: .milliseconds(50)) { try await $0.fetch(server.url("/slow")) }
            }
            // ...and a patient one gets the body no sooner than the delay.
            let start = ContinuousClock.now
            let fetched = try await withHTTPClient { try await $0.fetch(server.url("/slow")) }
            #expect(ContinuousClock.now - start >= .milliseconds(400))
            #expect(fetched.body == body)
        }
    }

    @Test func aGateHoldsResponsesAndCountsThemInFlight() async throws {
        try await withOriginServer { server in
            let gate = OriginGate()
            server.route("/held", .ok(body).held(by: gate))
            try await withHTTPClient { (client: HTTPClient) async throws in
                try await withThrowingTaskGroup(of: Fetched.self) { group in
                    for _ in 0..<3 { group.addTask { try await client.fetch(server.url("/held")) } }
                    // Given three requests that reached the origin, When the gate is still closed,
                    await server.waitForRequests(to: "/held", count: 3)
                    // Then all three are in flight.
                    #expect(server.inFlightCount("/held") == 3)
                    gate.open()
                    for try await fetched in group { #expect(fetched.body == body) }
                }
            }
            #expect(server.maxInFlightCount("/held") == 3)
            #expect(server.inFlightCount("/held") == 0)
        }
    }

    @Test func tricklesAChunkedBody() async throws {
        try await withOriginServer { server in
            server.route("/trickle", .ok(body).trickled(bytes: 1_000, every: .milliseconds(5)))
            let fetched = try await withHTTPClient { try await $0.fetch(server.url("/trickle")) }
            #expect(fetched.body == body)
            #expect(fetched.headers["Transfer-Encoding"] == ["chunked"])
            #expect(fetched.headers["Content-Length"].isEmpty)
            #expect(fetched.parts > 1)
        }
    }

    @Test func pausesTheBodyUntilItsGateOpens() async throws {
        try await withOriginServer { server in
            let gate = OriginGate()
            server.route("/paused", .ok(body).pausing(afterBodyBytes: 3_000, until: gate))
            try await withHTTPClient { (client: HTTPClient) async throws in
                let response = try await client.execute(
                    HTTPClientRequest(url: server.url("/paused")), timeout: .seconds(60))
                var parts = response.body.makeAsyncIterator()
                var received: [UInt8] = []
                while received.count < 3_000, let part = try await parts.next() { received += part.readableBytesView }
                // Exactly the bytes before the pause, and the answer still under way; then the rest once it opens
                #expect(received == Array(body.prefix(3_000)))
                #expect(server.inFlightCount("/paused") == 1)
                gate.open()
                while let part = try await parts.next() { received += part.readableBytesView }
                #expect(received == body)
            }
        }
    }

    @Test func answersAMatchingETagWith304() async throws {
        try await withOriginServer { server in
            server.route("/e", .ok(body).withETag("\"v1\""))
            try await withHTTPClient { (client: HTTPClient) async throws in
                let first = try await client.fetch(server.url("/e"))
                #expect(first.status == 200)
                #expect(first.headers["ETag"] == ["\"v1\""])
                let revalidated = try await client.fetch(server.url("/e"), headers: [("If-None-Match", "\"v1\"")])
                #expect(revalidated.status == 304)
                #expect(revalidated.body.isEmpty)
                #expect(revalidated.headers["ETag"] == ["\"v1\""])
                let weak = try await client.fetch(server.url("/e"), headers: [("If-None-Match", "\"v0\", W/\"v1\"")])
                #expect(weak.status == 304)
                let stale = try await client.fetch(server.url("/e"), headers: [("If-None-Match", "\"v0\"")])
                #expect(stale.status == 200)
                #expect(stale.body == body)
            }
            #expect(server.requestCount("/e") == 4)
        }
    }

    @Test func answersIfModifiedSinceWith304() async throws {
        try await withOriginServer { server in
            server.route("/m", .ok(body).withLastModified("Wed, 21 Oct 2026 07:28:00 GMT"))
            try await withHTTPClient { (client: HTTPClient) async throws in
                let fetch = { (since: String) in
                    try await client.fetch(server.url("/m"), headers: [("If-Modified-Since", since)]).status
                }
                #expect(
                    try await client.fetch(server.url("/m")).headers["Last-Modified"] == [
                        "Wed, 21 Oct 2026 07:28:00 GMT"
                    ])
                #expect(try await fetch("Wed, 21 Oct 2026 07:28:00 GMT") == 304)
                #expect(try await fetch("Thu, 22 Oct 2026 00:00:00 GMT") == 304)
                #expect(try await fetch("Tue, 20 Oct 2026 07:28:00 GMT") == 200)
                #expect(try await fetch("not a date") == 200)
            }
        }
    }

    @Test func redirects() async throws {
        try await withOriginServer { server in
            server.route("/old", .redirect(to: "/new", status: 301))
            server.route("/new", .ok(body))
            let fetched = try await withHTTPClient { try await $0.fetch(server.url("/old")) }
            #expect(fetched.status == 200)
            #expect(fetched.body == body)
            #expect(server.requestCount("/old") == 1)
            #expect(server.requestCount("/new") == 1)

            let unfollowed = try await withHTTPClient(redirects: .disallow) { try await $0.fetch(server.url("/old")) }
            #expect(unfollowed.status == 301)
            #expect(unfollowed.headers["Location"] == ["/new"])
        }
    }

    @Test func redirectLoops() async throws {
        try await withOriginServer { server in
            server.route("/a", .redirect(to: "/b"))
            server.route("/b", .redirect(to: "/a"))
            await #expect(throws: HTTPClientError.redirectCycleDetected) {
                try await withHTTPClient { try await $0.fetch(server.url("/a")) }
            }
            server.route("/self", .redirect(to: "/self"))
            await #expect(throws: HTTPClientError.redirectLimitReached) {
                try await withHTTPClient(redirects: .follow(max: 4, allowCycles: true)) {
                    try await $0.fetch(server.url("/self"))
                }
            }
            #expect(server.requestCount("/self") == 5)
        }
    }

    @Test func resetsTheConnectionMidBody() async throws {
        try await withOriginServer { server in
            server.route("/reset", .ok(body).resettingAfter(bytes: 1_000))
            await #expect(throws: (any Error).self) {
                try await withHTTPClient { try await $0.fetch(server.url("/reset")) }
            }
            #expect(server.requestCount("/reset") == 1)
            #expect(server.inFlightCount("/reset") == 0)
        }
    }

    @Test func aContentLengthLongerThanTheBodyEndsInAnError() async throws {
        try await withOriginServer { server in
            server.route("/short", .ok(body).lyingContentLength(20_000))
            // The connection closes 10,000 bytes early: the HTTP parser reports the premature end.
            await #expect(throws: HTTPParserError.invalidEOFState) {
                try await withHTTPClient { try await $0.fetch(server.url("/short")) }
            }
        }
    }

    @Test func aContentLengthShorterThanTheBodyIsBelieved() async throws {
        try await withOriginServer { server in
            server.route("/long", .ok(body).lyingContentLength(100))
            let fetched = try await withHTTPClient { try await $0.fetch(server.url("/long")) }
            #expect(fetched.headers["Content-Length"] == ["100"])
            #expect(fetched.body == Array(body.prefix(100)))
        }
    }

    @Test func waitingForRequestsEndsWhenTheTaskIsCancelled() async throws {
        try await withOriginServer { server in
            let waiter = Task { await server.waitForRequests(to: "/never", count: 1) }
            waiter.cancel()
            await waiter.value
            #expect(server.requestCount("/never") == 0)
        }
    }

    @Test func refusesConnectionsAfterShutdown() async throws {
        // Given a server with a route only it serves, shut down
        let server = try await OriginServer.start()
        let body = Array("only this server says this".utf8)
        server.route("/a", .ok(body))
        let url = server.url("/a")
        try await server.shutdown()

        // When the route is requested (AsyncHTTPClient retries refused connections until its connect timeout: keep
        // that short)
        let fetched = try? await withHTTPClient(connectTimeout: .milliseconds(200)) { try await $0.fetch(url) }

        // Then the connection is refused. Tests run in parallel, so another test's server may have been given the
        // freed port by then and answer instead; what must never happen is this server answering.
        #expect(fetched?.body != body)
    }

    @Test("serves the corpus under /testdata/", .requiresTestData)
    func servesTheCorpus() async throws {
        let manifest = try TestData.manifest()
        let entry = try #require(manifest.entries.first { $0.format == "jpeg" && $0.expected == .decodeOK })
        try await withOriginServer { server in
            let fetched = try await withHTTPClient { try await $0.fetch(server.url("/testdata/" + entry.path)) }
            #expect(fetched.status == 200)
            #expect(fetched.body == (try manifest.bytes(of: entry)))
            #expect(fetched.headers["Content-Type"] == ["image/jpeg"])
            #expect(
                try await withHTTPClient { try await $0.fetch(server.url("/testdata/valid/no-such.jpg")) }.status == 404
            )
        }
    }
}
