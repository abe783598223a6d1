import Foundation
import InMemoryTracing
import OspreyTesting
import Synchronization
import Testing
import Tracing

@testable import Osprey

/// The downloader's HTTP client (`HTTPConnections`), the one for `http` and `https`, traced or not: how it keeps, limits
/// and gives up connections, what it does with bodies it must not keep, and whose certificates it trusts. The HTTP
/// semantics suite runs through it too.
@Suite("ImageDownloader: HTTP connections", .timeLimit(.minutes(2)))
struct HTTPConnectionsTests {
    static let body = ImageDownloaderTests.body

    @Test(
        "one client for http and https, traced or not: its span of the request under the download's, the trace sent on",
        arguments: [false, true], [false, true])
    func oneClient(secure: Bool, traced: Bool) async throws {
        try await withOriginServer(tls: secure) { server in
            server.route("/one.jpg", .ok(Self.body))
            let tracer = InMemoryTracer()
            var configuration = ImageDownloader.Configuration()
            configuration.certificateAuthorities = try Self.testAuthority()
            if traced { configuration.tracer = tracer }
            try await withImageDownloader(configuration: configuration) { downloader in
                // Credentials in the URL stay out of the spans.
                let url = try #require(
                    URL(string: server.url("/one.jpg").replacingOccurrences(of: "://", with: "://u:secret@")))
                let response = try await downloader.data(for: DownloadRequest(url: url))
                #expect(response.body == Self.body)
                // The downloader's own client carried it: its connection is the one kept open.
                #expect(downloader.connections.openConnectionCount == 1)
                #expect(server.connectionCount == 1)
                let received = try #require(server.requests(to: "/one.jpg").first)
                if traced {
                    let spans = tracer.finishedSpans
                    let download = try #require(spans.first { $0.operationName == "osprey.download" })
                    let get = try #require(spans.first { $0.kind == .client })
                    #expect(get.operationName == "GET")
                    #expect(get.parentSpanID == download.spanID)
                    #expect(get.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
                    #expect(get.attributes["url.full"]?.toSpanAttribute() == .string(server.url("/one.jpg")))
                    #expect(received.header(InMemoryTracer.spanIDKey) == get.spanID)
                } else {
                    #expect(received.header(InMemoryTracer.spanIDKey) == nil)
                }
            }
        }
    }

    @Test func aConnectionLimitMakesTransfersPastItWaitForAConnection() async throws {
        try await withOriginServer { server in
            let gate = OriginGate()
            server.route("/held.jpg", OriginResponse.ok(Self.body).held(by: gate))
            var configuration = ImageDownloader.Configuration()
            configuration.connectionsPerHost = 2
            try await withImageDownloader(configuration: configuration) { downloader in
                // Six transfers at once to one origin, two connections allowed: two requests reach it, four wait.
                let tasks = (0..<6).map { downloader.download(request(server, "/held.jpg?\($0)"), progress: nil) }
                await server.waitForRequests(to: "/held.jpg", count: 2)
                #expect(server.connectionCount == 2)
                gate.open()
                for task in tasks {
                    let body = try await task.response.body
                    #expect(body == Self.body)
                }
                // The four others went over the same two connections, one after another.
                #expect(server.requestCount("/held.jpg") == 6)
                #expect(server.connectionCount == 2)
            }
        }
    }

    @Test func aPrivateAuthorityIsTrustedWhenConfiguredAndAnUntrustedCertificateIsRefusedNamingTheHost() async throws {
        try await withOriginServer(tls: true) { server in
            server.route("/ca.jpg", .ok(Self.body))
            try await withImageDownloader { downloader in
                let refused = await Result { () async throws(DownloadError) in
                    try await downloader.data(for: request(server, "/ca.jpg"))
                }
                guard case .failure(.cannotConnect(let reason)) = refused else {
                    Issue.record("expected cannot connect, got \(refused)")
                    return
                }
                #expect(reason.hasPrefix("TLS handshake with 127.0.0.1 failed: its certificate is not signed by"))
            }
            var configuration = ImageDownloader.Configuration()
            configuration.certificateAuthorities = try Self.testAuthority()
            try await withImageDownloader(configuration: configuration) { downloader in
                let response = try await downloader.data(for: request(server, "/ca.jpg"))
                #expect(response.body == Self.body)
            }
            #expect(server.requestCount("/ca.jpg") == 1)
        }
    }

    /// The test origin's certificate (its own authority) as a PEM file's authorities.
    static func testAuthority() throws -> CertificateAuthorities {
        let path = NSTemporaryDirectory() + "osprey-ca-\(UUID().uuidString).pem"
        try TestCertificate.certificatePEM.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try CertificateAuthorities(pemFile: path)
    }

    @Test func aConnectionTheOriginClosedAfterItsAnswerIsNotReusedAndTheNextRequestSucceeds() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                // Given an origin that answers whole, without "Connection: close", then closes the connection
                server.route("/closing.jpg", OriginResponse.ok(Self.body).lyingContentLength(Self.body.count))
                server.route("/next.jpg", .ok(Self.body))
                let first = try await downloader.data(for: request(server, "/closing.jpg"))
                #expect(first.body == Self.body)
                // When the next request goes to the same origin (on the closed connection, sent again, or on a new
                // one, whichever the client sees first)
                let next = try await downloader.data(for: request(server, "/next.jpg"))
                // Then it succeeds, on a second connection
                #expect(next.body == Self.body)
                #expect(server.requestCount("/next.jpg") == 1)
                #expect(server.connectionCount == 2)
            }
        }
    }

    @Test func aShortErrorBodyIsReadAndTheConnectionKeptALongOneClosesIt() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/short-404", OriginResponse(status: 404, body: Array(repeating: 1, count: 1_000)))
                server.route("/long-404", OriginResponse(status: 404, body: Array(repeating: 1, count: 300_000)))
                server.route("/ok.jpg", .ok(Self.body))
                // A 404 with a short body, then a download: one connection
                _ = await Result { () async throws(DownloadError) in
                    try await downloader.data(for: request(server, "/short-404"))
                }
                _ = try await downloader.data(for: request(server, "/ok.jpg?a"))
                #expect(server.connectionCount == 1)
                // A 404 with a long body is not read to its end: its connection goes, the next download opens one
                _ = await Result { () async throws(DownloadError) in
                    try await downloader.data(for: request(server, "/long-404"))
                }
                _ = try await downloader.data(for: request(server, "/ok.jpg?b"))
                #expect(server.connectionCount == 2)
            }
        }
    }

    @Test func aBodyAnnouncedOverTheLimitIsRefusedUnreadAndTheClientGoesOn() async throws {
        try await withOriginServer { server in
            var configuration = ImageDownloader.Configuration()
            configuration.maximumBodySize = 10_000
            try await withImageDownloader(configuration: configuration) { downloader in
                server.route("/big.jpg", .ok(Array(repeating: 7, count: 50_000)))
                server.route("/small.jpg", .ok(Array(repeating: 7, count: 5_000)))
                let refused = await Result { () async throws(DownloadError) in
                    try await downloader.data(for: request(server, "/big.jpg"))
                }
                guard case .failure(.tooLarge(limit: 10_000)) = refused else {
                    Issue.record("expected too large, got \(refused)")
                    return
                }
                let small = try await downloader.data(for: request(server, "/small.jpg"))
                #expect(small.body.count == 5_000)
            }
        }
    }

    @Test func progressIsReportedAsTheBodyComesThenTheBodyArrivesWhole() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                // Given a body sent in five chunks
                server.route(
                    "/parts.jpg", OriginResponse.ok(Self.body).trickled(bytes: Self.body.count / 5 + 1, every: .zero))
                let reports = Mutex<[Int]>([])
                let response = try await downloader.data(for: request(server, "/parts.jpg")) { progress in
                    reports.withLock { $0.append(progress.receivedBytes) }
                }
                // Then progress grew, ending at the whole body, which arrived as sent
                let received = reports.withLock { $0 }
                #expect(received.count >= 2)
                #expect(received == received.sorted())
                #expect(received.last == Self.body.count)
                #expect(response.body == Self.body)
            }
        }
    }

    @Test func shutdownClosesTheKeptConnectionsAndRefusesNewTransfers() async throws {
        try await withOriginServer { server in
            let downloader = ImageDownloader()
            server.route("/kept.jpg", .ok(Self.body))
            _ = try await downloader.data(for: request(server, "/kept.jpg"))
            try await downloader.shutdown()
            let after = await Result { () async throws(DownloadError) in
                try await downloader.data(for: request(server, "/kept.jpg"))
            }
            guard case .failure(.shutDown) = after else {
                Issue.record("expected shut down, got \(after)")
                return
            }
            #expect(server.requestCount("/kept.jpg") == 1)
        }
    }
}
