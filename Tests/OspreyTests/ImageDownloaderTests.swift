import Foundation
import HTTPTypes
import MetricsTestKit
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// A request for `path` on `server`: what the downloader suites send.
func request(_ server: OriginServer, _ path: String) -> DownloadRequest {
    DownloadRequest(url: URL(string: server.url(path))!)
}

/// The downloader against a real HTTP origin on 127.0.0.1, each test counting what reached it.
@Suite("ImageDownloader", .timeLimit(.minutes(2)))
struct ImageDownloaderTests {
    static let body = Array((0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    // MARK: Coalescing

    @Test func oneHundredConcurrentRequestsForOneURLMakeOneOriginRequest() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                // Given a response held at the origin until every caller has asked
                let gate = OriginGate()
                server.route("/one.jpg", .ok(Self.body).held(by: gate))
                let tasks = (0..<100).map { _ in downloader.download(request(server, "/one.jpg"), progress: nil) }
                await server.waitForRequests(to: "/one.jpg", count: 1)
                gate.open()
                // Then all 100 get the same bytes from one origin request
                var bodies: [[UInt8]] = []
                for task in tasks { bodies.append(try await task.response.body) }
                #expect(bodies.count == 100)
                #expect(bodies.allSatisfy { $0 == Self.body })
                #expect(server.requestCount("/one.jpg") == 1)
            }
        }
    }

    @Test func requestsThatDifferInHeadersDoNotShareATransfer() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                let gate = OriginGate()
                server.route("/h.jpg", .ok(Self.body).held(by: gate))
                var other = request(server, "/h.jpg")
                other.headers[HTTPField.Name("X-Variant")!] = "b"
                let first = downloader.download(request(server, "/h.jpg"), progress: nil)
                let second = downloader.download(other, progress: nil)
                await server.waitForRequests(to: "/h.jpg", count: 2)
                gate.open()
                _ = try await (first.response, second.response)
                #expect(server.requestCount("/h.jpg") == 2)
            }
        }
    }

    @Test func cancellingOneOfTwoCoalescedCallersLeavesTheOtherToComplete() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                let gate = OriginGate()
                server.route("/two.jpg", .ok(Self.body).held(by: gate))
                let first = downloader.download(request(server, "/two.jpg"), progress: nil)
                let second = downloader.download(request(server, "/two.jpg"), progress: nil)
                await server.waitForRequests(to: "/two.jpg", count: 1)
                // When the first leaves
                first.cancel()
                await #expect(throws: DownloadError.self) { try await first.response }
                gate.open()
                // Then the second still gets the body, from the same single request
                let secondBody = try await second.response.body
                #expect(secondBody == Self.body)
                #expect(server.requestCount("/two.jpg") == 1)
                #expect(server.abortedCount("/two.jpg") == 0)
            }
        }
    }

    @Test func cancellingEveryCallerAbortsTheTransferAtTheOrigin() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                let gate = OriginGate()
                server.route("/gone.jpg", .ok(Self.body).held(by: gate))
                let tasks = (0..<3).map { _ in downloader.download(request(server, "/gone.jpg"), progress: nil) }
                await server.waitForRequests(to: "/gone.jpg", count: 1)
                for task in tasks { task.cancel() }
                for task in tasks {
                    let outcome = await Result { () async throws(DownloadError) in try await task.response }
                    #expect(outcome.failure?.shortDescription == "cancelled")
                }
                // Then the origin sees its answer cut short: the connection was closed
                await server.waitForAborts(on: "/gone.jpg", count: 1)
                #expect(server.abortedCount("/gone.jpg") == 1)
                #expect(server.inFlightCount("/gone.jpg") == 0)
            }
        }
    }

    @Test func aDetachedTransferRunsToTheEndAfterEveryCallerLeaves() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                let events = downloader.events()
                let gate = OriginGate()
                server.route("/detached.jpg", .ok(Self.body).held(by: gate))
                var detached = request(server, "/detached.jpg")
                detached.isDetached = true
                let task = downloader.download(detached, progress: nil)
                await server.waitForRequests(to: "/detached.jpg", count: 1)
                task.cancel()
                gate.open()
                // Then the transfer still finishes with the whole body, and the origin answered in full
                for await event in events {
                    guard case .finished(_, let outcome, _) = event else { continue }
                    guard case .succeeded(200, let bytes) = outcome else {
                        Issue.record("the detached transfer ended with \(outcome)")
                        break
                    }
                    #expect(bytes == Self.body.count)
                    break
                }
                #expect(server.abortedCount("/detached.jpg") == 0)
            }
        }
    }

    // MARK: Progress

    @Test func aChunkedBodyReportsProgressEndingAtItsByteCountWithNoExpectedLength() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                // The rest of the body waits for the first report, so there are at least two however slow the machine
                let gate = OriginGate()
                defer { gate.open() }
                server.route(
                    "/chunked.jpg",
                    .ok(Self.body).trickled(bytes: 4_000, every: .milliseconds(1))
                        .pausing(afterBodyBytes: 4_000, until: gate))
                let reports = Mutex<[DownloadProgress]>([])
                let response = try await downloader.data(for: request(server, "/chunked.jpg")) { progress in
                    reports.withLock { $0.append(progress) }
                    gate.open()
                }
                let seen = reports.withLock { $0 }
                #expect(response.body == Self.body)
                #expect(seen.count >= 2)
                #expect(seen.allSatisfy { $0.expectedBytes == nil })
                #expect(seen.last?.receivedBytes == Self.body.count)
                #expect(seen.map(\.receivedBytes) == seen.map(\.receivedBytes).sorted())
                // The reports' bytes add up to the body: enough for an incremental decoder
                #expect(seen.flatMap(\.newBytes) == Self.body)
            }
        }
    }

    @Test func progressKnowsTheExpectedLengthWhenTheOriginSendsIt() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/sized.jpg", .ok(Self.body))
                let reports = Mutex<[DownloadProgress]>([])
                _ = try await downloader.data(for: request(server, "/sized.jpg")) { progress in
                    reports.withLock { $0.append(progress) }
                }
                let seen = reports.withLock { $0 }
                #expect(!seen.isEmpty)
                #expect(seen.allSatisfy { $0.expectedBytes == Self.body.count })
                #expect(seen.last?.fractionCompleted == 1)
            }
        }
    }

    @Test func aCallerJoiningATransferUnderWayGetsEveryByteSoFarInItsFirstReport() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/join.jpg", .ok(Self.body).trickled(bytes: 1_000, every: .milliseconds(5)))
                let firstReports = Mutex<[DownloadProgress]>([])
                let joined = Mutex<(any DataLoadingTask)?>(nil)
                let lateReports = Mutex<[DownloadProgress]>([])
                // The second caller joins from inside the first caller's third report
                let first = downloader.download(request(server, "/join.jpg")) { progress in
                    let count = firstReports.withLock { reports in
                        reports.append(progress)
                        return reports.count
                    }
                    if count == 3 {
                        let task = downloader.download(request(server, "/join.jpg")) { progress in
                            lateReports.withLock { $0.append(progress) }
                        }
                        joined.withLock { $0 = task }
                    }
                }
                let firstBody = try await first.response.body
                #expect(firstBody == Self.body)
                let late = try #require(joined.withLock { $0 })
                let lateBody = try await late.response.body
                #expect(lateBody == Self.body)
                let reports = lateReports.withLock { $0 }
                #expect(reports.first.map { $0.newBytes.count == $0.receivedBytes } == true)
                #expect((reports.first?.receivedBytes ?? 0) > 1_000)
                #expect(reports.flatMap(\.newBytes) == Self.body)
                #expect(server.requestCount("/join.jpg") == 1)
            }
        }
    }

    // MARK: Requests

    @Test func sendsTheDefaultAcceptAndUserAgentAndTheRequestsOwnHeaders() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/headers.jpg", .ok([1]))
                #expect(downloader.headers[.accept] == "image/avif,image/webp,image/*;q=0.8")
                _ = try await downloader.data(for: request(server, "/headers.jpg"))
                downloader.headers[.accept] = "image/png"
                var custom = request(server, "/headers.jpg")
                custom.headers.append(HTTPField(name: HTTPField.Name("X-Trace")!, value: "42"))
                custom.headers.append(HTTPField(name: .userAgent, value: "Mine/1"))
                _ = try await downloader.data(for: custom)
                let requests = server.requests(to: "/headers.jpg")
                #expect(requests[0].header("Accept") == "image/avif,image/webp,image/*;q=0.8")
                #expect(requests[0].header("User-Agent") == "Osprey/\(OspreyVersion.current)")
                #expect(requests[1].header("Accept") == "image/png")
                #expect(requests[1].header("X-Trace") == "42")
                #expect(requests[1].header("User-Agent") == "Mine/1")
            }
        }
    }

    @Test func aRequestModifierAddsHeadersOrCancelsBeforeAnythingIsSent() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route("/modified.jpg", .ok([1]))
                var signed = request(server, "/modified.jpg")
                signed.modifier = RequestModifier(identifier: "token") { url, headers in
                    headers[.authorization] = "Bearer fresh-\(url.lastPathComponent)"
                }
                _ = try await downloader.data(for: signed)
                #expect(
                    server.requests(to: "/modified.jpg").first?.header("Authorization") == "Bearer fresh-modified.jpg")

                struct Refused: Error {}
                var refused = request(server, "/modified.jpg")
                refused.modifier = RequestModifier(identifier: "refuse") { _, _ in throw Refused() }
                await #expect(throws: DownloadError.self) { try await downloader.data(for: refused) }
                #expect(server.requestCount("/modified.jpg") == 1)
            }
        }
    }

    @Test func basicCredentialsGoToTheOriginButNotAcrossARedirectToAnother() async throws {
        try await withOriginServer { server in
            try await withOriginServer { other in
                try await withImageDownloader { downloader in
                    other.route("/elsewhere.jpg", .ok([7]))
                    server.route("/private.jpg", .ok([1]))
                    server.route("/moved.jpg", .redirect(to: other.url("/elsewhere.jpg")))
                    var secured = request(server, "/private.jpg")
                    secured.credentials = .basic(user: "ann", password: "secret")
                    _ = try await downloader.data(for: secured)
                    #expect(
                        server.requests(to: "/private.jpg").first?.header("Authorization") == "Basic YW5uOnNlY3JldA==")

                    var moved = request(server, "/moved.jpg")
                    moved.credentials = .provider(
                        CredentialProvider(identifier: "vault") { _ in (user: "bob", password: "pw") })
                    let response = try await downloader.data(for: moved)
                    #expect(response.url.absoluteString == other.url("/elsewhere.jpg"))
                    #expect(server.requests(to: "/moved.jpg").first?.header("Authorization") != nil)
                    #expect(other.requests(to: "/elsewhere.jpg").first?.header("Authorization") == nil)
                }
            }
        }
    }

    @Test func cookiesAreKeptAndSentOnlyWhenAskedFor() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                server.route(
                    "/login.jpg",
                    .ok([1]).header("Set-Cookie", "session=abc; Path=/; HttpOnly").header("Set-Cookie", "theme=dark"))
                server.route("/next.jpg", .ok([2]))
                var login = request(server, "/login.jpg")
                login.handlesCookies = true
                _ = try await downloader.data(for: login)
                var next = request(server, "/next.jpg")
                next.handlesCookies = true
                _ = try await downloader.data(for: next)
                _ = try await downloader.data(for: request(server, "/next.jpg"))
                let sent = server.requests(to: "/next.jpg").map { $0.header("Cookie") }
                #expect(sent == ["session=abc; theme=dark", nil])
                // HttpOnly stays out of the public view of the store
                let url = URL(string: server.url("/next.jpg"))!
                #expect(downloader.cookies.cookies(for: url).map(\.name) == ["theme"])
                #expect(downloader.cookies.cookies(for: url, includingHTTPOnly: true).count == 2)
            }
        }
    }

    @Test func aStringOfAnotherSchemeFailsWithoutTouchingTheNetwork() async throws {
        try await withImageDownloader { downloader in
            let outcome = await Result { () async throws(DownloadError) in
                try await downloader.data(for: DownloadRequest(url: URL(string: "file:///etc/passwd")!))
            }
            #expect(outcome.failure?.shortDescription == "invalidRequest")
            #expect(outcome.failure?.isTransient == false)
            #expect(downloader.runningCount == 0)
        }
    }

    // MARK: Events

    @Test func publishesStartedAndFinishedEvents() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                let events = downloader.events()
                server.route("/evented.jpg", .ok(Self.body))
                server.route("/missing.jpg", .status(404))
                _ = try await downloader.data(for: request(server, "/evented.jpg"))
                _ = try? await downloader.data(for: request(server, "/missing.jpg"))
                var seen: [String] = []
                for await event in events {
                    switch event {
                    case .started(let url): seen.append("started \(url.path)")
                    case .finished(let url, .succeeded(let status, let bytes), _):
                        seen.append("finished \(url.path) \(status) \(bytes)")
                    case .finished(let url, .failed(let error), _):
                        seen.append("failed \(url.path) \(error.statusCode ?? 0)")
                    }
                    if seen.count == 4 { break }
                }
                #expect(
                    seen == [
                        "started /evented.jpg", "finished /evented.jpg 200 \(Self.body.count)",
                        "started /missing.jpg", "failed /missing.jpg 404",
                    ])
            }
        }
    }
}

extension ImageDownloaderTests {
    @Test func countsRequestsTransfersBytesAndDurationsInMetrics() async throws {
        try await withOriginServer { server in
            let metrics = TestMetrics()
            var configuration = ImageDownloader.Configuration()
            configuration.metricsFactory = metrics
            try await withImageDownloader(configuration: configuration) { downloader in
                // Given three requests for one URL (two of them joining the first) and one 404
                let gate = OriginGate()
                server.route("/metered.jpg", .ok(Self.body).held(by: gate))
                let tasks = (0..<3).map { _ in downloader.download(request(server, "/metered.jpg"), progress: nil) }
                await server.waitForRequests(to: "/metered.jpg", count: 1)
                gate.open()
                for task in tasks { _ = try await task.response }
                _ = try? await downloader.data(for: request(server, "/nothing-here.jpg"))
                // Then the counters say so
                let requests = { (coalesced: String) in
                    try metrics.expectCounter("osprey_download_requests_total", [("coalesced", coalesced)]).totalValue
                }
                #expect(try requests("false") == 2)
                #expect(try requests("true") == 2)
                let transfers = { (outcome: String) in
                    try metrics.expectCounter("osprey_download_transfers_total", [("outcome", outcome)]).totalValue
                }
                #expect(try transfers("ok") == 1)
                #expect(try transfers("httpStatus") == 1)
                #expect(try metrics.expectCounter("osprey_download_bytes_total").totalValue == Int64(Self.body.count))
                let durations = try metrics.expectTimer("osprey_download_duration_seconds", [("outcome", "ok")])
                #expect(durations.values.count == 1)
            }
        }
    }
}

extension Result {
    /// The error of a failure, or `nil`.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }

    init(catching body: () async throws(Failure) -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}

extension ImageDownloaderTests {
    @Test func releasingADownloaderFailsTheRequestsStillQueued() async throws {
        // Given a downloader whose queue is suspended, holding one request
        var downloader: ImageDownloader? = ImageDownloader()
        downloader?.isSuspended = true
        let task = try #require(downloader?.download(DownloadRequest(url: URL(string: "http://127.0.0.1:9/a.jpg")!)))
        // When the last reference to the downloader goes
        downloader = nil
        // Then the queued caller is told, instead of waiting for ever
        let outcome = await Result { () async throws(DownloadError) in try await task.response }
        #expect(outcome.failure?.shortDescription == "shutDown")
    }
}
