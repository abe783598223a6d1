import Foundation
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// The failed-URL list, the hooks and each option, asserting what reached the origin and what was stored.
@Suite("ImageManager options", .timeLimit(.minutes(2)))
struct ImageManagerOptionsTests {
    // MARK: Failed URLs

    @Test("after a 404 the next load fails at once; retryFailed asks again; a success clears the URL")
    func failedURLs() async throws {
        try await withManager { harness in
            let url = harness.url("/missing.png")
            let first = await #expect(throws: ImageError.self) { try await harness.manager.image(for: url) }
            guard case .downloadFailed(.httpStatus(404, _)) = first else { throw ExpectedFailure(first) }

            let second = await #expect(throws: ImageError.self) { try await harness.manager.image(for: url) }
            // The earlier failure comes with it, so a caller can answer as it did the first time.
            guard case .previouslyFailed(url, .downloadFailed(.httpStatus(404, _))?) = second else {
                throw ExpectedFailure(second)
            }
            #expect(harness.server.requestCount("/missing.png") == 1)

            harness.server.route("/missing.png", .ok(ManagerFixtures.png))
            let retried = try await harness.manager.image(for: url, options: [.retryFailed])
            #expect(retried.cacheType == .notCached)
            #expect(harness.server.requestCount("/missing.png") == 2)
            #expect(!harness.manager.failedURLs.contains(url))
        }
    }

    @Test("a timeout and a 503 are transient and never enter the list; undecodable data does")
    func transientFailuresAreNotListed() async throws {
        // The deadline runs on a test clock: /slow.png times out when the test moves the clock past it, once the
        // origin holds the request, and nothing else can time out however slow the machine (ThreadSanitizer).
        let clock = TestClock()
        try await withManager(downloading: {
            $0.deadline = .seconds(1)
            $0.clock = clock
        }) { harness in
            let gate = OriginGate()
            defer { gate.open() }
            harness.server.route("/slow.png", .ok(ManagerFixtures.png).held(by: gate))
            harness.server.route("/busy.png", .status(503))
            harness.server.route("/garbage.png", .ok(Array("not an image".utf8)))
            let manager = harness.manager

            // Both tries of each reach the downloader (a listed URL would fail with previouslyFailed instead).
            var slowRequests = 0
            for path in ["/slow.png", "/busy.png", "/slow.png", "/busy.png"] {
                let url = harness.url(path)
                async let outcome = Result { () async throws(ImageError) in try await manager.image(for: url) }
                if path == "/slow.png" {
                    slowRequests += 1
                    await harness.server.waitForRequests(to: path, count: slowRequests)
                    clock.advance(by: .seconds(1))
                }
                let error = await outcome.failure
                switch (path, error) {
                case ("/slow.png", .downloadFailed(.timedOut)?), ("/busy.png", .downloadFailed(.httpStatus(503, _))?):
                    break
                default: Issue.record("\(path): \(String(describing: error))")
                }
            }
            #expect(harness.server.requestCount("/busy.png") == 2)

            let undecodable = await #expect(throws: ImageError.self) {
                try await harness.manager.image(for: harness.url("/garbage.png"))
            }
            guard case .decodingFailed = undecodable else { throw ExpectedFailure(undecodable) }
            #expect(harness.manager.failedURLs.contains(harness.url("/garbage.png")))
            #expect(!harness.manager.failedURLs.contains(harness.url("/slow.png")))
            #expect(!harness.manager.failedURLs.contains(harness.url("/busy.png")))

            harness.manager.removeFailedURL(harness.url("/garbage.png"))
            #expect(harness.manager.failedURLs.count == 0)
        }
    }

    @Test("with a time-to-live an entry expires, and removeAllFailedURLs empties the list")
    func failedURLTimeToLive() async throws {
        try await withManager(configure: { $0.failedURLTimeToLive = .zero }) { harness in
            let url = harness.url("/missing.png")
            for _ in 0..<2 {
                await #expect(throws: ImageError.self) { try await harness.manager.image(for: url) }
            }
            #expect(harness.server.requestCount("/missing.png") == 2)
        }
        try await withManager { harness in
            let url = harness.url("/missing.png")
            await #expect(throws: ImageError.self) { try await harness.manager.image(for: url) }
            harness.manager.removeAllFailedURLs()
            await #expect(throws: ImageError.self) { try await harness.manager.image(for: url) }
            #expect(harness.server.requestCount("/missing.png") == 2)
        }
    }

    // MARK: Hooks

    @Test("shouldDownload can forbid the download of a miss; nothing is asked and nothing is listed")
    func shouldDownload() async throws {
        try await withManager(configure: { configuration in
            configuration.shouldDownload = { url in !url.path.hasPrefix("/forbidden") }
        }) { harness in
            harness.server.route("/forbidden.png", .ok(ManagerFixtures.png))
            harness.server.route("/allowed.png", .ok(ManagerFixtures.png))
            let declined = await #expect(throws: ImageError.self) {
                try await harness.manager.image(for: harness.url("/forbidden.png"))
            }
            guard case .downloadDeclined = declined else { throw ExpectedFailure(declined) }
            _ = try await harness.manager.image(for: harness.url("/allowed.png"))

            #expect(harness.server.requestCount("/forbidden.png") == 0)
            #expect(harness.server.requestCount("/allowed.png") == 1)
            #expect(harness.manager.failedURLs.count == 0)
        }
    }

    @Test("the transform hook runs for a still image (stored re-encoded), not for an animated one unless asked")
    func transformDownloadedImage() async throws {
        let runs = RunCounter()
        try await withManager(configure: { configuration in
            configuration.transformDownloadedImage = { image, _ in
                runs.increment()
                let pixels = try PixelBuffer(
                    width: 2, height: 2, format: image.pixelFormat,
                    bytes: [UInt8](repeating: 9, count: 4 * image.pixelFormat.bytesPerPixel))
                return Image(pixels: pixels, sourceFormat: .png)
            }
        }) { harness in
            let gif = try ManagerFixtures.animatedGIF()
            harness.server.route("/still.png", .ok(ManagerFixtures.png))
            harness.server.route("/animated.gif", .ok(gif))
            harness.server.route("/animated-too.gif", .ok(gif))
            let key = { (path: String) in harness.url(path).absoluteString }

            let still = try await harness.manager.image(for: harness.url("/still.png"), options: [.waitStoreCache])
            let animated = try await harness.manager.image(
                for: harness.url("/animated.gif"), options: [.waitStoreCache])
            #expect(runs.value == 1)
            let transformed = try await harness.manager.image(
                for: harness.url("/animated-too.gif"), options: [.transformAnimatedImage, .waitStoreCache])
            #expect(runs.value == 2)

            #expect(still.image.width == 2)
            #expect(still.data == nil)
            #expect(animated.image.frames.count == 2)
            #expect(animated.data == gif)
            #expect(transformed.image.width == 2)
            let stillOnDisk = try #require(await harness.cache.diskCache!.data(forKey: key("/still.png")))
            #expect(stillOnDisk != ManagerFixtures.png)
            #expect(try ImageDecoder.decode(stillOnDisk).width == 2)
            #expect(await harness.cache.diskCache!.data(forKey: key("/animated.gif")) == gif)
        }
    }

    // MARK: Caching options

    @Test("cacheMemoryOnly writes nothing to disk")
    func cacheMemoryOnly() async throws {
        try await withManager { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            _ = try await harness.manager.image(for: harness.url("/a.png"), options: [.cacheMemoryOnly])
            await harness.settle()

            #expect(await harness.cache.diskCache!.totals().count == 0)
            #expect(try await harness.manager.image(for: harness.url("/a.png")).cacheType == .memory)
        }
    }

    @Test("fromCacheOnly never reaches the network; fromLoaderOnly always does")
    func fromCacheOnlyAndFromLoaderOnly() async throws {
        try await withManager { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            let url = harness.url("/a.png")
            let miss = await #expect(throws: ImageError.self) {
                try await harness.manager.image(for: url, options: [.fromCacheOnly])
            }
            guard case .notCached = miss else { throw ExpectedFailure(miss) }
            #expect(harness.server.requestCount("/a.png") == 0)

            _ = try await harness.manager.image(for: url)
            let cached = try await harness.manager.image(for: url, options: [.fromCacheOnly])
            let reloaded = try await harness.manager.image(for: url, options: [.fromLoaderOnly])

            #expect(cached.cacheType == .memory)
            #expect(reloaded.cacheType == .notCached)
            #expect(harness.server.requestCount("/a.png") == 2)
        }
    }

    @Test("waitStoreCache delivers only once the image is on disk")
    func waitStoreCache() async throws {
        try await withManager { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            _ = try await harness.manager.image(for: harness.url("/a.png"), options: [.waitStoreCache])
            // No settling: the store is already done.
            #expect(harness.cache.diskCache!.blockingData(forKey: harness.url("/a.png").absoluteString) != nil)
        }
    }

    // MARK: Downloading options

    @Test("a high priority goes before normal, a low one after, in a queue of one")
    func priorities() async throws {
        try await withManager(downloading: { $0.maxConcurrentDownloads = 1 }) { harness in
            harness.server.route("/order.png", .ok(ManagerFixtures.png))
            harness.downloader.isSuspended = true
            let priorities: [DownloadPriority] = [.low, .normal, .high, .low, .high]
            let tasks = try priorities.enumerated().map { index, priority in
                harness.manager.loadImage(
                    with: try ImageRequest(url: harness.url("/order.png?i=\(index)"), priority: priority)
                ) { _ in }
            }
            await harness.loader.waitForDownloads(priorities.count)
            harness.downloader.isSuspended = false
            await harness.settle()

            // Each load reaches the downloader from its own job task, so equal priorities are queued in the order the
            // downloader saw them, not necessarily the order of the calls: first in, first out within a priority.
            func index(_ uri: String) -> Int { Int(uri.split(separator: "=").last!)! }
            let order = harness.server.requests(to: "/order.png").map { index($0.uri) }
            let arrivals = harness.loader.requests
            let expected = [DownloadPriority.high, .normal, .low].flatMap { priority in
                arrivals.filter { $0.priority == priority }.map { index($0.url.absoluteString) }
            }
            #expect(Set(order.prefix(2)) == [2, 4] && order[2] == 1 && Set(order.suffix(2)) == [0, 3])
            #expect(order == expected)
            #expect(harness.loader.requests.map(\.priority).sorted() == [.low, .low, .normal, .high, .high])
            let finished = tasks.allSatisfy { $0.isFinished }
            #expect(finished)
        }
    }

    @Test("handlesCookies sends the cookies the origin set; without it none are sent")
    func handlesCookies() async throws {
        try await withManager { harness in
            harness.server.route("/set.png", .ok(ManagerFixtures.png).header("Set-Cookie", "session=42; Path=/"))
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            harness.server.route("/b.png", .ok(ManagerFixtures.png))
            _ = try await harness.manager.image(for: harness.url("/set.png"), options: [.handlesCookies])
            _ = try await harness.manager.image(for: harness.url("/a.png"), options: [.handlesCookies])
            _ = try await harness.manager.image(for: harness.url("/b.png"))

            #expect(harness.server.requests(to: "/a.png").first?.header("Cookie") == "session=42")
            #expect(harness.server.requests(to: "/b.png").first?.header("Cookie") == nil)
        }
    }

    @Test("allowsInvalidCertificates accepts a self-signed origin that is refused otherwise")
    func allowsInvalidCertificates() async throws {
        try await withManager(tls: true) { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            let refused = await #expect(throws: ImageError.self) {
                try await harness.manager.image(for: harness.url("/a.png"))
            }
            guard case .downloadFailed(let error) = refused, error.isTransient else { throw ExpectedFailure(refused) }
            let accepted = try await harness.manager.image(
                for: harness.url("/a.png"), options: [.allowsInvalidCertificates])
            #expect(accepted.image.width == 8)
        }
    }

    @Test("a detached load whose caller cancelled still finishes into the cache; otherwise it is aborted")
    func detached() async throws {
        try await withManager { harness in
            // Both answers are held at the origin until the test lets them go, so neither can finish before the
            // cancel however slowly the machine runs (a trickled answer could, and then no abort ever came)
            let gate = OriginGate()
            let droppedGate = OriginGate()
            defer { droppedGate.open() }
            harness.server.route("/kept.png", .ok(ManagerFixtures.png).held(by: gate))
            harness.server.route("/dropped.png", .ok(ManagerFixtures.png).held(by: droppedGate))
            let kept = Deliveries()
            let dropped = Deliveries()
            let keptTask = kept.load(
                harness.manager, try ImageRequest(url: harness.url("/kept.png"), options: [.detached]))
            let droppedTask = dropped.load(harness.manager, try ImageRequest(url: harness.url("/dropped.png")))
            await harness.server.waitForRequests(to: "/kept.png", count: 1)
            await harness.server.waitForRequests(to: "/dropped.png", count: 1)

            keptTask.cancel()
            droppedTask.cancel()
            #expect(!harness.manager.isRunning)
            await harness.server.waitForAborts(on: "/dropped.png", count: 1)
            gate.open()
            await harness.settle()

            #expect(kept.isCancelledOnce && dropped.isCancelledOnce)
            #expect(await harness.manager.isCachedOnDisk(harness.url("/kept.png")))
            #expect(!(await harness.manager.isCached(harness.url("/dropped.png"))))
        }
    }

    // MARK: Decoding options

    @Test("scaleDownLargeImages decodes within the pixel budget; without it the image is full size")
    func scaleDownLargeImages() async throws {
        try await withManager(configure: { $0.scaleDownPixelBudget = 20_000 }) { harness in
            harness.server.route("/big.jpg", .ok(try ManagerFixtures.jpeg(width: 512, height: 384)))
            let url = harness.url("/big.jpg")
            let scaled = try await harness.manager.image(for: url, options: [.scaleDownLargeImages])
            let full = try await harness.manager.image(for: url)

            #expect(scaled.image.width * scaled.image.height <= 20_000)
            #expect(scaled.image.width >= 64)
            #expect(full.image.width == 512 && full.image.height == 384)
            #expect(harness.server.requestCount("/big.jpg") == 1)
        }
    }

    @Test("decodeFirstFrameOnly decodes one frame of an animation, as its own cache entry")
    func decodeFirstFrameOnly() async throws {
        try await withManager { harness in
            harness.server.route("/a.gif", .ok(try ManagerFixtures.animatedGIF()))
            let url = harness.url("/a.gif")
            let first = try await harness.manager.image(for: url, options: [.decodeFirstFrameOnly])
            let all = try await harness.manager.image(for: url)

            #expect(first.image.frames.count == 1)
            #expect(all.image.frames.count == 2)
            #expect(all.cacheType == .disk || all.cacheType == .notCached)
        }
    }

    @Test("progressiveDownload delivers not-final previews of a progressive JPEG, then the final image")
    func progressiveDownload() async throws {
        try await withManager { harness in
            let body = try ManagerFixtures.jpeg(width: 256, height: 256, progressive: true)
            // The origin sends the first half (its first scans) in pieces, then holds the rest until a preview came,
            // so the preview cannot lose a race with the whole body however slowly the machine runs
            let gate = OriginGate()
            defer { gate.open() }
            harness.server.route(
                "/p.jpg",
                .ok(body).trickled(bytes: body.count / 6, every: .milliseconds(5))
                    .pausing(afterBodyBytes: body.count / 2, until: gate))
            let task = harness.manager.task(
                for: try ImageRequest(url: harness.url("/p.jpg"), options: [.progressiveDownload]))

            let (previews, final) = try await task.previewsAndFinal(onPreview: gate.open)
            #expect(!previews.isEmpty)
            #expect(previews.allSatisfy { !$0.isFinal && $0.image.width == 256 })
            #expect(final.isFinal)
            #expect(final.data == body)
        }
    }

    // Bounded in time: a preview that never comes (decoded before the stage, or not at all) fails instead of hanging.
    @Test(
        "with decoding suspended, a progressive load's data queues one preview, which decodes all that came",
        .timeLimit(.minutes(1)))
    func progressivePreviewsPassTheDecodingStage() async throws {
        try await withManager { harness in
            let body = try ManagerFixtures.jpeg(width: 256, height: 256, progressive: true)
            // Three quarters of the body in twelfths, then the rest held until the preview came.
            let gate = OriginGate()
            defer { gate.open() }
            let held = body.count * 3 / 4
            harness.server.route(
                "/p.jpg",
                .ok(body).trickled(bytes: body.count / 12, every: .milliseconds(2))
                    .pausing(afterBodyBytes: held, until: gate))
            let queue = harness.manager.decodingQueue
            let decoding = queue.events()
            queue.isSuspended = true
            defer { queue.isSuspended = false }
            let task = harness.manager.task(
                for: try ImageRequest(url: harness.url("/p.jpg"), options: [.progressiveDownload]))
            var events = task.events.makeAsyncIterator()
            var chunks = 0
            var received = 0
            while received < held {
                guard case .progress(let progress)? = await events.next() else {
                    Issue.record("the load ended before its data came")
                    return
                }
                (chunks, received) = (chunks + 1, progress.receivedBytes)
            }

            // Every chunk after the first would have started a preview of its own: one waits, for all of them.
            #expect(chunks >= 6)
            #expect(queue.waitingCount == 1)
            queue.isSuspended = false
            var previews: [ImageResult] = []
            while previews.isEmpty, let event = await events.next() {
                if case .preview(let preview) = event { previews.append(preview) }
            }
            gate.open()
            var final: ImageResult?
            while let event = await events.next() {
                if case .finished(let outcome) = event { final = try outcome.get() }
            }
            #expect(previews.count == 1 && previews.allSatisfy { !$0.isFinal && $0.image.width == 256 })
            #expect(final?.data == body)

            // The decoding stage saw the preview wait, start and finish, then the final decode (all published before
            // the outcome was delivered).
            var stage = decoding.makeAsyncIterator()
            let url = harness.url("/p.jpg")
            let first = await stage.next()
            #expect(first == .waiting(url))
            guard first == .waiting(url) else { return }
            #expect(await stage.next() == .started(url))
            #expect(await stage.next() == .finished(url))
            #expect(await stage.next() == .started(url))
            #expect(await stage.next() == .finished(url))
        }
    }

    // MARK: Revalidation

    @Test("refreshCached delivers the cached image then, on 304, nothing new")
    func refreshCachedNotModified() async throws {
        try await withManager { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png).withETag("\"v1\""))
            let url = harness.url("/a.png")
            _ = try await harness.manager.image(for: url, options: [.waitStoreCache])

            let (previews, final) = try await refresh(harness, url)

            #expect(previews.map(\.cacheType) == [.memory])
            #expect(previews.allSatisfy { !$0.isFinal })
            #expect(final.cacheType == .memory)
            #expect(final.image == previews.first?.image)
            #expect(harness.server.requestCount("/a.png") == 2)
            #expect(harness.server.requests(to: "/a.png").last?.header("If-None-Match") == "\"v1\"")
        }
    }

    @Test("refreshCached delivers the cached image, then the changed one, which replaces it on disk")
    func refreshCachedChanged() async throws {
        try await withManager { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png).withETag("\"v1\""))
            let url = harness.url("/a.png")
            _ = try await harness.manager.image(for: url, options: [.waitStoreCache])
            harness.cache.clearMemory()
            harness.server.route("/a.png", .ok(ManagerFixtures.otherPNG).withETag("\"v2\""))

            let (previews, final) = try await refresh(harness, url)
            await harness.settle()

            #expect(previews.map(\.cacheType) == [.disk])
            #expect(previews.first?.image.width == 8)
            #expect(final.cacheType == .notCached)
            #expect(final.image.width == 5)
            #expect(await harness.cache.diskCache!.data(forKey: url.absoluteString) == ManagerFixtures.otherPNG)
            #expect(await harness.cache.diskCache!.entry(forKey: url.absoluteString)?.validators.etag == "\"v2\"")
            #expect(try await harness.manager.image(for: url).image.width == 5)
        }
    }

    @Test("an origin without validators that sends the same bytes changes nothing")
    func refreshCachedSameBytes() async throws {
        try await withManager { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            let url = harness.url("/a.png")
            _ = try await harness.manager.image(for: url, options: [.waitStoreCache])

            let (previews, final) = try await refresh(harness, url)

            #expect(previews.count == 1)
            #expect(final.cacheType == .memory)
            #expect(harness.server.requestCount("/a.png") == 2)
        }
    }

    /// Loads `url` with refreshCached through the event stream; returns the previews and the final result.
    private func refresh(_ harness: ManagerHarness, _ url: URL) async throws -> ([ImageResult], ImageResult) {
        try await harness.manager.task(for: try ImageRequest(url: url, options: [.refreshCached])).previewsAndFinal()
    }
}

/// Thrown when an error is not the case a test expected.
struct ExpectedFailure: Error, CustomStringConvertible {
    let description: String
    init(_ error: (any Error)?) {
        description = "unexpected: \(String(describing: error))"
    }
}
