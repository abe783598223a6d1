import Foundation
import HTTPTypes
import NIOCore
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// How the downloader reads what an origin answers, including origins that misbehave.
@Suite("ImageDownloader: HTTP semantics", .timeLimit(.minutes(2)))
struct ImageDownloaderHTTPTests {
    static let body = ImageDownloaderTests.body

    /// The error `request` fails with, or `nil` when it succeeds.
    func failure(_ request: DownloadRequest, on downloader: ImageDownloader) async -> DownloadError? {
        await Result { () async throws(DownloadError) in try await downloader.data(for: request) }.failure
    }

    // MARK: Status codes

    @Test func a404IsALastingErrorCarryingItsStatusAndHeaders() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/missing.jpg", OriginResponse.status(404).header("X-Why", "gone"))
                let error = try #require(await failure(request(server, "/missing.jpg"), on: downloader))
                guard case .httpStatus(404, let headers) = error else {
                    Issue.record("expected HTTP 404, got \(error)")
                    return
                }
                #expect(headers[HTTPField.Name("X-Why")!] == "gone")
                #expect(!error.isTransient)
            }
        }
    }

    @Test func a500IsATransientError() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/broken.jpg", .status(500))
                let error = try #require(await failure(request(server, "/broken.jpg"), on: downloader))
                #expect(error.statusCode == 500)
                #expect(error.isTransient)
            }
        }
    }

    @Test func a503WithRetryAfterIsTransientAndSaysWhenToRetry() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/busy.jpg", OriginResponse.status(503).header("Retry-After", "120"))
                let error = try #require(await failure(request(server, "/busy.jpg"), on: downloader))
                #expect(error.isTransient)
                #expect(error.retryAfter == .seconds(120))
            }
        }
    }

    @Test func a304ToAConditionalRequestIsNotModifiedNotAnError() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route(
                    "/etag.jpg", .ok(Self.body).withETag("\"v1\"").withLastModified("Sat, 21 Nov 2026 10:00:00 GMT"))
                // Given validators from a first, plain download
                let first = try await downloader.data(for: request(server, "/etag.jpg"))
                #expect(first.validators.etag == "\"v1\"")
                // When they are sent back
                var conditional = request(server, "/etag.jpg")
                conditional.validators = first.validators
                let second = try await downloader.data(for: conditional)
                // Then the answer is "not modified", with no body
                #expect(second.isNotModified)
                #expect(second.body.isEmpty)
                let sent = server.requests(to: "/etag.jpg")[1]
                #expect(sent.header("If-None-Match") == "\"v1\"")
                #expect(sent.header("If-Modified-Since") == "Sat, 21 Nov 2026 10:00:00 GMT")
                // And a changed resource comes whole
                server.route("/etag.jpg", .ok([9, 9]).withETag("\"v2\""))
                let third = try await downloader.data(for: conditional)
                #expect(third.statusCode == 200)
                #expect(third.body == [9, 9])
            }
        }
    }

    // MARK: Redirects

    @Test func followsRedirectsAndReportsTheFinalURL() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/a.jpg", .redirect(to: "/b.jpg", status: 301))
                server.route("/b.jpg", .redirect(to: server.url("/c.jpg"), status: 307))
                server.route("/c.jpg", .ok(Self.body))
                let response = try await downloader.data(for: request(server, "/a.jpg"))
                #expect(response.body == Self.body)
                #expect(response.requestedURL.path == "/a.jpg")
                #expect(response.url.absoluteString == server.url("/c.jpg"))
            }
        }
    }

    @Test func aRedirectLoopStopsAfterTenRedirects() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/loop.jpg", .redirect(to: "/loop.jpg"))
                let error = try #require(await failure(request(server, "/loop.jpg"), on: downloader))
                guard case .tooManyRedirects(10) = error else {
                    Issue.record("expected too many redirects, got \(error)")
                    return
                }
                #expect(!error.isTransient)
                #expect(server.requestCount("/loop.jpg") == 11)
            }
        }
    }

    @Test func aRedirectToAnotherSchemeIsRefused() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/sneaky.jpg", .redirect(to: "file:///etc/passwd"))
                let error = try #require(await failure(request(server, "/sneaky.jpg"), on: downloader))
                guard case .invalidRedirect("file:///etc/passwd") = error else {
                    Issue.record("expected an invalid redirect, got \(error)")
                    return
                }
            }
        }
    }

    @Test(
        "a redirect to a port or host the HTTP client cannot take is refused before it is followed",
        arguments: [
            "http://127.0.0.1:99999/x.jpg", "http://127.0.0.1:0/x.jpg", "http://evil.test%00.example.com/x.jpg",
            "http://[::1]:65536/x.jpg",
        ])
    func aRedirectToAnUnusableAddressIsRefused(location: String) async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/hop.jpg", .redirect(to: location))
                let error = try #require(await failure(request(server, "/hop.jpg"), on: downloader))
                guard case .invalidRedirect(let refused) = error else {
                    Issue.record("expected an invalid redirect, got \(error)")
                    return
                }
                #expect(refused == location)
                #expect(server.requestCount("/hop.jpg") == 1)
            }
        }
    }

    @Test func aRequestForAnUnusablePortFailsAtOnce() async throws {
        try await withImageDownloader { downloader in
            let url = try #require(URL(string: "http://127.0.0.1:99999/x.jpg"))
            let error = try #require(await failure(DownloadRequest(url: url), on: downloader))
            guard case .invalidRequest = error else {
                Issue.record("expected an invalid request, got \(error)")
                return
            }
            #expect(downloader.runningCount == 0)
        }
    }

    // MARK: Size limits

    @Test func aBodyAnnouncedLargerThanTheLimitIsRefusedBeforeItIsRead() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/huge.jpg", .ok(Self.body))
                var limited = request(server, "/huge.jpg")
                limited.maximumBodySize = 10_000
                let received = Mutex(0)
                let outcome = await Result { () async throws(DownloadError) in
                    try await downloader.data(for: limited) { progress in
                        received.withLock { $0 = progress.receivedBytes }
                    }
                }
                guard case .tooLarge(10_000) = outcome.failure else {
                    Issue.record("expected too large, got \(outcome)")
                    return
                }
                #expect(received.withLock { $0 } == 0)
            }
        }
    }

    @Test func aChunkedBodyGrowingPastTheLimitIsCutOffWhileItStreams() async throws {
        try await withOriginServer { server in
            var configuration = ImageDownloader.Configuration()
            configuration.maximumBodySize = 10_000
            try await withImageDownloader(configuration: configuration) { downloader in
                // 4 MB in 2,000-byte chunks a millisecond apart: seconds of body, so the origin is still sending when
                // the downloader hangs up
                let long = [UInt8](repeating: 7, count: 4 << 20)
                server.route("/growing.jpg", .ok(long).trickled(bytes: 2_000, every: .milliseconds(1)))
                let received = Mutex(0)
                let outcome = await Result { () async throws(DownloadError) in
                    try await downloader.data(for: request(server, "/growing.jpg")) { progress in
                        received.withLock { $0 = progress.receivedBytes }
                    }
                }
                guard case .tooLarge(10_000) = outcome.failure else {
                    Issue.record("expected too large, got \(outcome)")
                    return
                }
                #expect(!(outcome.failure?.isTransient ?? true))
                // Cut off at the limit, long before the body was all sent
                #expect(received.withLock { $0 } <= 10_000)
                await server.waitForAborts(on: "/growing.jpg", count: 1)
            }
        }
    }

    // MARK: Time limits

    @Test func anOriginThatFallsSilentTimesOut() async throws {
        try await withOriginServer { server in
            var configuration = ImageDownloader.Configuration()
            configuration.timeout = .milliseconds(200)
            try await withImageDownloader(configuration: configuration) { downloader in
                server.route("/trickle.jpg", .ok(Self.body).trickled(bytes: 100, every: .seconds(2)))
                let error = try #require(await failure(request(server, "/trickle.jpg"), on: downloader))
                guard case .timedOut = error else {
                    Issue.record("expected a timeout, got \(error)")
                    return
                }
                #expect(error.isTransient)
            }
        }
    }

    @Test func aSteadyTrickleThatOverrunsTheDeadlineTimesOut() async throws {
        let clock = TestClock()
        var configuration = ImageDownloader.Configuration()
        configuration.clock = clock
        try await withOriginServer { server in
            try await withImageDownloader(configuration: configuration) { downloader in
                // Never silent for long (so the idle timeout never fires), and 50 s to send in full.
                let body = [UInt8](repeating: 0x55, count: 1_000_000)
                server.route("/steady.jpg", .ok(body).trickled(bytes: 100, every: .milliseconds(5)))
                var hurried = request(server, "/steady.jpg")
                hurried.deadline = .seconds(30)
                let received = Mutex(0)
                async let outcome = Result { () async throws(DownloadError) in
                    try await downloader.data(for: hurried) { progress in
                        received.withLock { $0 = progress.receivedBytes }
                    }
                }
                await clock.waitForSleepers(count: 1)
                // Not yet: the deadline's sleeper is still there a second before it.
                clock.advance(by: .seconds(29))
                #expect(clock.sleeperCount == 1)
                clock.advance(by: .seconds(1))
                guard case .timedOut = await outcome.failure else {
                    Issue.record("expected a timeout, got \(await outcome)")
                    return
                }
                #expect(received.withLock { $0 } < body.count)
            }
        }
    }

    @Test func aZeroTimeoutMeansTheDefault() {
        var configuration = ImageDownloader.Configuration()
        configuration.timeout = .zero
        #expect(configuration.effectiveTimeout == .seconds(15))
    }

    // MARK: Broken transfers

    @Test func aResetMidBodyIsATransientErrorNotATruncatedSuccess() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/reset.jpg", .ok(Self.body).resettingAfter(bytes: 10_000))
                let error = try #require(await failure(request(server, "/reset.jpg"), on: downloader))
                switch error {
                case .connectionLost, .incompleteBody: #expect(error.isTransient)
                default: Issue.record("expected a lost connection, got \(error)")
                }
            }
        }
    }

    @Test func aContentLengthLongerThanTheBodyIsAnError() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/liar.jpg", .ok(Self.body).lyingContentLength(Self.body.count + 5_000))
                let error = try #require(await failure(request(server, "/liar.jpg"), on: downloader))
                switch error {
                case .connectionLost, .incompleteBody: #expect(error.isTransient)
                default: Issue.record("expected an incomplete body, got \(error)")
                }
            }
        }
    }

    @Test func aRangeCapableOriginResumesABrokenTransfer() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                // Given an origin that takes ranges, whose first answer breaks after 15,000 bytes
                let resource = OriginResponse.ok(Self.body).withETag("\"r1\"").acceptingRanges()
                server.route("/resume.jpg", resource.resettingAfter(bytes: 15_000))
                #expect(await failure(request(server, "/resume.jpg"), on: downloader) != nil)
                // When it is asked again
                server.route("/resume.jpg", resource)
                let response = try await downloader.data(for: request(server, "/resume.jpg"))
                // Then only the rest was sent, and the whole body was put together
                let second = server.requests(to: "/resume.jpg")[1]
                #expect(second.header("Range") == "bytes=15000-")
                #expect(second.header("If-Range") == "\"r1\"")
                #expect(response.statusCode == 206)
                #expect(response.resumedBytes == 15_000)
                #expect(response.body == Self.body)
            }
        }
    }

    @Test func aChangedResourceIsNotGluedToTheStartOfTheOldOne() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                let old = OriginResponse.ok(Self.body).withETag("\"old\"").acceptingRanges()
                server.route("/changed.jpg", old.resettingAfter(bytes: 15_000))
                #expect(await failure(request(server, "/changed.jpg"), on: downloader) != nil)
                // The resource changed meanwhile: If-Range no longer matches, so the origin sends it all
                let new = Array(Self.body.reversed())
                server.route("/changed.jpg", OriginResponse.ok(new).withETag("\"new\"").acceptingRanges())
                let response = try await downloader.data(for: request(server, "/changed.jpg"))
                #expect(response.statusCode == 200)
                #expect(response.resumedBytes == 0)
                #expect(response.body == new)
            }
        }
    }

    @Test func aRefusedConnectionIsTransient() async throws {
        try await withImageDownloader { downloader in
            // Port 1 on loopback: nothing listens there
            let error = try #require(
                await failure(DownloadRequest(url: URL(string: "http://127.0.0.1:1/x.jpg")!), on: downloader))
            guard case .cannotConnect = error else {
                Issue.record("expected cannot connect, got \(error)")
                return
            }
            #expect(error.isTransient)
        }
    }
}

extension ImageDownloaderHTTPTests {
    @Test func sequentialDownloadsReuseOneKeepAliveConnection() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/kept.jpg", .ok(Self.body))
                for index in 0..<10 { _ = try await downloader.data(for: request(server, "/kept.jpg?i=\(index)")) }
                #expect(server.requestCount("/kept.jpg") == 10)
                #expect(server.connectionCount == 1)
            }
        }
    }

    @Test func anUntrustedCertificateIsRefusedUnlessTheRequestAllowsIt() async throws {
        try await withOriginServer(tls: true) { server in
            try await withImageDownloader { downloader in
                server.route("/tls.jpg", .ok(Self.body))
                #expect(server.baseURL.hasPrefix("https://"))
                // By default the self-signed certificate is refused before any request is sent
                let error = try #require(await failure(request(server, "/tls.jpg"), on: downloader))
                guard case .cannotConnect(let reason) = error else {
                    Issue.record("expected cannot connect, got \(error)")
                    return
                }
                #expect(reason.hasPrefix("TLS"))
                #expect(server.requestCount("/tls.jpg") == 0)
                // A request that allows invalid certificates gets through, with its own TLS configuration
                var insecure = request(server, "/tls.jpg")
                insecure.allowsInvalidCertificates = true
                let response = try await downloader.data(for: insecure)
                #expect(response.body == Self.body)
                #expect(server.requestCount("/tls.jpg") == 1)
                // And the default stays strict afterwards
                #expect(await failure(request(server, "/tls.jpg"), on: downloader) != nil)
                #expect(server.requestCount("/tls.jpg") == 1)
            }
        }
    }
}

extension ImageDownloaderHTTPTests {
    /// A downloader made to offer HTTP/2 as well as HTTP/1.1.
    static var offeringHTTP2: ImageDownloader.Configuration {
        var configuration = ImageDownloader.Configuration()
        configuration.httpVersion = .automatic
        return configuration
    }

    /// By default an origin that offers HTTP/2 is asked in HTTP/1.1, the only version offered, over a keep-alive
    /// connection.
    @Test func offersOnlyHTTP1ByDefault() async throws {
        try await withOriginServer(http2: true) { server in
            try await withImageDownloader { downloader in
                server.route("/h1.jpg", .ok(Self.body))
                for index in 0..<2 {
                    var h1 = request(server, "/h1.jpg?i=\(index)")
                    h1.allowsInvalidCertificates = true
                    let data = try await downloader.data(for: h1)
                    #expect(data.body == Self.body)
                }
                #expect(server.requests(to: "/h1.jpg").map(\.httpVersion) == ["HTTP/1.1", "HTTP/1.1"])
                #expect(server.connectionCount == 1)
            }
        }
    }

    /// An origin that speaks HTTP/2 only, asked by a downloader that offers HTTP/1.1 only: a failure that says so and
    /// what to change, not retried; offering HTTP/2 reaches it.
    @Test func anOriginThatSpeaksOnlyHTTP2IsNamedWhenHTTP2IsNotOffered() async throws {
        try await withOriginServer(http2: true, offersHTTP1: false) { server in
            server.route("/only.jpg", .ok(Self.body))
            var only = request(server, "/only.jpg")
            only.allowsInvalidCertificates = true
            try await withImageDownloader { downloader in
                let error = try #require(await failure(only, on: downloader))
                guard case .invalidRequest(let reason) = error else {
                    Issue.record("expected an invalid request, got \(error)")
                    return
                }
                #expect(reason.contains("HTTP/2 only") && reason.contains(".automatic"), "\(reason)")
                #expect(!error.isTransient)
            }
            try await withImageDownloader(configuration: Self.offeringHTTP2) { downloader in
                let data = try await downloader.data(for: only)
                #expect(data.body == Self.body)
            }
            #expect(server.requests(to: "/only.jpg").map(\.httpVersion) == ["HTTP/2.0"])
        }
    }

    @Test func speaksHTTP2WithAnOriginThatOffersItAndMultiplexesOneConnection() async throws {
        try await withOriginServer(http2: true) { server in
            try await withImageDownloader(configuration: Self.offeringHTTP2) { downloader in
                server.route("/h2.jpg", OriginResponse.ok(Self.body).withETag("\"h2\""))
                // Given an origin that offers HTTP/2, a downloader that offers it too, and a first download that opens
                // a connection to it
                var requests = (0..<7).map { request(server, "/h2.jpg?i=\($0)") }
                for index in requests.indices { requests[index].allowsInvalidCertificates = true }
                _ = try await downloader.data(for: requests[0])
                // When six more run at once
                let tasks = requests.dropFirst().map { downloader.download($0, progress: nil) }
                // Then each arrives whole, over HTTP/2, on one connection
                for task in tasks {
                    let body = try await task.response.body
                    #expect(body == Self.body)
                }
                #expect(server.requests(to: "/h2.jpg").map(\.httpVersion) == Array(repeating: "HTTP/2.0", count: 7))
                #expect(server.connectionCount == 1)
                // And conditional requests work the same way
                var conditional = requests[0]
                conditional.validators = HTTPValidators(etag: "\"h2\"")
                let answer = try await downloader.data(for: conditional)
                #expect(answer.isNotModified)
            }
        }
    }

    @Test func anHTTP2ConnectionWithNoStreamLeftClosesAfterTheIdleTimeout() async throws {
        try await withOriginServer(http2: true) { server in
            var configuration = Self.offeringHTTP2
            configuration.idleConnectionTimeout = .milliseconds(50)
            try await withImageDownloader(configuration: configuration) { downloader in
                server.route("/idle.jpg", .ok(Self.body))
                var request = request(server, "/idle.jpg")
                request.allowsInvalidCertificates = true
                _ = try await downloader.data(for: request)
                #expect(server.requests(to: "/idle.jpg").map(\.httpVersion) == ["HTTP/2.0"])
                // Its one stream ended: the connection closes by itself, and the pool forgets it (on a busy machine
                // perhaps before this line runs, else while it waits).
                if let channel = downloader.connections.multiplexedChannels.first {
                    try await channel.closeFuture.get()
                }
                #expect(downloader.connections.openConnectionCount == 0)
                // The next download opens another.
                _ = try await downloader.data(for: request)
                #expect(server.connectionCount == 2)
            }
        }
    }
    /// Requests to the HTTP/2 test origin for `path`, answered with `response`, and for `/fine.jpg`, answered whole.
    func http2Routes(
        _ server: OriginServer, _ path: String, _ response: OriginResponse
    ) -> (DownloadRequest, fine: DownloadRequest) {
        server.route(path, response)
        server.route("/fine.jpg", .ok(Self.body))
        var (other, fine) = (request(server, path), request(server, "/fine.jpg"))
        other.allowsInvalidCertificates = true
        fine.allowsInvalidCertificates = true
        return (other, fine)
    }

    /// Bodies larger than HTTP/2's windows arrive whole: the stream's window (8 MiB) and then the connection's (32 MiB)
    /// are opened again as they are read. Without the updates, the origin stops at the window and the read times out.
    @Test func http2BodiesLargerThanTheWindowsArriveWhole() async throws {
        try await withOriginServer(http2: true) { server in
            try await withImageDownloader(configuration: Self.offeringHTTP2) { downloader in
                let bodies = (0..<3).map { index in
                    (0..<(14 << 20)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761 &+ index) >> 11) }
                }
                for (index, body) in bodies.enumerated() {
                    server.route("/large-\(index).jpg", .ok(body))
                    var large = request(server, "/large-\(index).jpg")
                    large.allowsInvalidCertificates = true
                    let data = try await downloader.data(for: large)
                    #expect(data.body == body)
                    #expect(server.requests(to: "/large-\(index).jpg").map(\.httpVersion) == ["HTTP/2.0"])
                }
                #expect(server.connectionCount == 1)
            }
        }
    }

    /// One stream falls silent: it times out alone, while another on the same connection completes, and the
    /// connection serves the next download.
    @Test func aSilentHTTP2StreamTimesOutAloneOnItsConnection() async throws {
        let gate = OriginGate()
        defer { gate.open() }
        try await withOriginServer(http2: true) { server in
            // Long enough that the other streams never stay silent for it on a machine busy with the whole suite.
            var configuration = Self.offeringHTTP2
            configuration.timeout = .seconds(2)
            try await withImageDownloader(configuration: configuration) { downloader in
                let (silent, fine) = http2Routes(
                    server, "/silent.jpg", .ok(Self.body).pausing(afterBodyBytes: 1_000, until: gate))
                _ = try await downloader.data(for: fine)
                async let stalled = failure(silent, on: downloader)
                let other = try await downloader.data(for: fine)
                #expect(other.body == Self.body)
                let error = try #require(await stalled)
                guard case .timedOut = error else {
                    Issue.record("expected a timeout, got \(error)")
                    return
                }
                #expect(try await downloader.data(for: fine).body == Self.body)
                #expect(server.connectionCount == 1)
            }
        }
    }

    /// The origin resets a stream mid-body: that download fails (transiently), the connection goes on.
    @Test func anHTTP2StreamResetByTheOriginFailsAloneAndTheConnectionGoesOn() async throws {
        try await withOriginServer(http2: true) { server in
            var configuration = Self.offeringHTTP2
            configuration.retryStrategy = nil
            try await withImageDownloader(configuration: configuration) { downloader in
                let (reset, fine) = http2Routes(server, "/reset.jpg", .ok(Self.body).resettingAfter(bytes: 10_000))
                _ = try await downloader.data(for: fine)
                let error = try #require(await failure(reset, on: downloader))
                #expect(error.isTransient)
                #expect(try await downloader.data(for: fine).body == Self.body)
                #expect(server.connectionCount == 1)
            }
        }
    }

    /// A download cancelled mid-body ends its stream; the connection serves the next one.
    @Test func aCancelledHTTP2DownloadEndsItsStreamOnly() async throws {
        let gate = OriginGate()
        defer { gate.open() }
        try await withOriginServer(http2: true) { server in
            try await withImageDownloader(configuration: Self.offeringHTTP2) { downloader in
                let (held, fine) = http2Routes(
                    server, "/held.jpg", .ok(Self.body).pausing(afterBodyBytes: 1_000, until: gate))
                _ = try await downloader.data(for: fine)
                // Once the first of the body has come, the download is cancelled.
                let (begun, began) = AsyncStream.makeStream(of: Void.self)
                let task = downloader.download(held) { _ in began.yield() }
                for await _ in begun { break }
                task.cancel()
                await #expect(throws: (any Error).self) { try await task.response.body }
                #expect(try await downloader.data(for: fine).body == Self.body)
                #expect(server.connectionCount == 1)
            }
        }
    }
}
