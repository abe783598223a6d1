import Foundation
import InMemoryTracing
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// The downloader's own HTTP/1.1 client for `http` origins (`HTTP1Connections`): which transfers it carries, how it
/// keeps and gives up connections, and what it does with bodies it must not keep. The HTTP semantics suite runs
/// through it too (its origins are `http`).
@Suite("ImageDownloader: HTTP/1.1 connections", .timeLimit(.minutes(2)))
struct HTTP1ConnectionsTests {
    static let body = ImageDownloaderTests.body

    @Test func itCarriesPlainHTTPUnlessATracerOrAConnectionLimitAsksForTheOtherClient() {
        #expect(ImageDownloader().http1 != nil)
        var limited = ImageDownloader.Configuration()
        limited.connectionsPerHost = 2
        #expect(ImageDownloader(configuration: limited).http1 == nil)
        var traced = ImageDownloader.Configuration()
        traced.tracer = InMemoryTracer()
        #expect(ImageDownloader(configuration: traced).http1 == nil)
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
