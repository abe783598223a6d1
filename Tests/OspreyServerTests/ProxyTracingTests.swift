import HTTPTypes
import Hummingbird
import HummingbirdTesting
import InMemoryTracing
import OspreyTesting
import Testing
import Tracing

@testable import OspreyServer

/// Traces: a request's spans, their nesting, and the trace carried from the client to the origin.
@Suite struct ProxyTracingTests {
    /// The propagation headers of `InMemoryTracer` (OpenTelemetry's tracer reads and writes `traceparent` instead).
    static let traceHeader = HTTPField.Name(InMemoryTracer.traceIDKey)!
    static let spanHeader = HTTPField.Name(InMemoryTracer.spanIDKey)!

    @Test("a cold request continues the client's trace; the pipeline's spans nest under it; the origin gets the trace")
    func coldRequestSpansNest() async throws {
        let tracer = InMemoryTracer()
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg(), contentType: "image/jpeg"))
            try await withProxy(setup: .live, { $0.tracer = tracer }) { client in
                let uri = imageURI([("url", origin.url("/photo.jpg")), ("w", "100"), ("format", "webp")])
                let response = try await client.execute(
                    uri: uri, method: .get,
                    headers: [Self.traceHeader: "client-trace", Self.spanHeader: "client-span"])
                #expect(response.status == .ok)
            }
            let spans = tracer.finishedSpans
            let server = try #require(spans.first { $0.kind == .server })
            #expect(server.operationName == "GET /img")
            #expect(server.traceID == "client-trace")
            #expect(server.parentSpanID == "client-span")
            #expect(server.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))

            // Every stage is in the client's trace, under the request's span, in the pipeline's order.
            let byID = Dictionary(spans.map { ($0.spanID, $0) }, uniquingKeysWith: { first, _ in first })
            func descends(_ span: FinishedInMemorySpan, from ancestor: FinishedInMemorySpan) -> Bool {
                var parent = span.parentSpanID
                while let id = parent {
                    if id == ancestor.spanID { return true }
                    parent = byID[id]?.parentSpanID
                }
                return false
            }
            let stages = ["osprey.cache.lookup", "osprey.download", "osprey.decode", "osprey.process", "osprey.encode"]
            var starts: [UInt64] = []
            for name in stages {
                let span = try #require(spans.first { $0.operationName == name }, "no \(name) span")
                #expect(span.traceID == "client-trace", "\(name)")
                #expect(descends(span, from: server), "\(name) is not under the request's span")
                #expect(span.endInstant.nanosecondsSinceEpoch <= server.endInstant.nanosecondsSinceEpoch)
                starts.append(span.startInstant.nanosecondsSinceEpoch)
            }
            #expect(starts == starts.sorted(), "stages out of order: \(zip(stages, starts).map { "\($0)" })")
            let download = try #require(spans.first { $0.operationName == "osprey.download" })
            #expect(download.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
            #expect(download.attributes["url.full"]?.toSpanAttribute() == .string(origin.url("/photo.jpg")))
            let encode = try #require(spans.first { $0.operationName == "osprey.encode" })
            #expect(encode.attributes["osprey.image.format"]?.toSpanAttribute() == .string("webp"))

            // The HTTP client's span of the request to the origin is under the download's, and the origin was sent
            // the trace with that span as the parent.
            let request = try #require(spans.first { $0.kind == .client })
            #expect(request.parentSpanID == download.spanID)
            let received = try #require(origin.requests(to: "/photo.jpg").first)
            #expect(received.header(InMemoryTracer.traceIDKey) == "client-trace")
            #expect(received.header(InMemoryTracer.spanIDKey) == request.spanID)
        }
    }

    @Test("a hot request is a request span with a memory hit under it; a request without a trace starts one")
    func hotRequestIsAMemoryHit() async throws {
        let tracer = InMemoryTracer()
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg(), contentType: "image/jpeg"))
            try await withProxy(setup: .live, { $0.tracer = tracer }) { client in
                let uri = imageURI([("url", origin.url("/photo.jpg")), ("w", "80")])
                let cold = try await client.execute(uri: uri, method: .get)
                #expect(cold.status == .ok)
                let before = Set(tracer.finishedSpans.map(\.spanID))
                let hot = try await client.execute(uri: uri, method: .get)
                #expect(hot.status == .ok)
                // The cold request's disk write may end meanwhile.
                let spans = tracer.finishedSpans.filter {
                    !before.contains($0.spanID) && $0.operationName != "osprey.cache.store"
                }
                let server = try #require(spans.first { $0.kind == .server })
                #expect(server.parentSpanID == nil)
                #expect(spans.map(\.operationName).sorted() == ["GET /img", "osprey.cache.lookup"])
                let lookup = try #require(spans.first { $0.operationName == "osprey.cache.lookup" })
                #expect(lookup.parentSpanID == server.spanID)
                #expect(lookup.attributes["osprey.cache.result"]?.toSpanAttribute() == .string("memory"))
            }
            #expect(origin.requestCount("/photo.jpg") == 1)
        }
    }

    @Test("a failed source fails the download's span, and a 4xx answer leaves the request's span unfailed")
    func failuresAreRecorded() async throws {
        let tracer = InMemoryTracer()
        try await withOriginServer(testDataDirectory: nil) { origin in
            try await withProxy(setup: .live, { $0.tracer = tracer }) { client in
                let uri = imageURI([("url", origin.url("/missing.jpg")), ("w", "80")])
                let response = try await client.execute(uri: uri, method: .get)
                #expect(response.status == .notFound)
            }
            let spans = tracer.finishedSpans
            let download = try #require(spans.first { $0.operationName == "osprey.download" })
            #expect(download.status?.code == .error)
            #expect(download.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(404))
            let server = try #require(spans.first { $0.kind == .server })
            #expect(server.status == nil)
            #expect(server.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(404))
        }
    }
}
