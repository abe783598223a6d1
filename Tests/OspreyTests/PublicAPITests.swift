import Foundation
import HTTPTypes  // the headers' type, as Hummingbird's: no swift-nio to name them
import Osprey
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

/// The library as a user of Kingfisher, Nuke or SDWebImage meets it: public products only, no `@testable`.
@Suite struct PublicAPITests {
    /// A downloader that waits minutes, not seconds, for an origin's next byte: the tests hold responses back
    /// behind gates, and a loaded machine running the whole suite may take longer than the default 15 s to open them.
    static var patientDownloads: ImageDownloader.Configuration {
        var configuration = ImageDownloader.Configuration()
        configuration.timeout = .seconds(600)
        return configuration
    }

    /// Runs `body` with an origin on 127.0.0.1 (serving an 8x6 PNG at `/a.png`), and a manager with `downloads` and a
    /// disk cache in a temporary directory, removed afterwards.
    static func withManagerAndOrigin(
        downloads: ImageDownloader.Configuration = patientDownloads,
        _ body: (_ server: OriginServer, _ manager: ImageManager, _ cache: ImageCache) async throws -> Void
    ) async throws {
        let directory = TemporaryDirectory()
        try await withOriginServer { server in
            server.route("/a.png", .ok(SyntheticImages.png(width: 8, height: 6), contentType: "image/png"))
            var configuration = ImageCache.Configuration(namespace: "api")
            configuration.disk.baseDirectory = directory.path
            let cache = ImageCache(configuration: configuration)
            try await withImageManager(cache: cache, downloader: downloads) { manager in
                try await body(server, manager, cache)
            }
        }
    }

    @Test("one CacheType, without .none: made now, then from memory, then from disk; a failure is none of them")
    func oneCacheVocabulary() async throws {
        try await Self.withManagerAndOrigin { server, manager, cache in
            server.route("/missing.png", .status(404))
            let first = try await manager.image(for: server.url("/a.png"))
            #expect(first.cacheType == .notCached && !first.cacheType.isCached)
            #expect(try await manager.image(for: server.url("/a.png")).cacheType == .memory)

            cache.clearMemory()
            let key = manager.cacheKey(for: try #require(URL(string: server.url("/a.png"))))
            let hit: CacheType? = try await cache.query(forKey: key)?.cacheType  // the same type as a result's
            #expect(hit == .disk)

            let failed = await Result { () async throws(ImageError) -> ImageResult in
                try await manager.image(for: server.url("/missing.png"))
            }
            // With a `.none` case this compared equal to Optional.none, and so was true for a failure.
            #expect((try? failed.get())?.cacheType != .notCached)
            #expect((try? failed.get())?.cacheType == nil)
        }
    }

    @Test("cancel(url:) cancels every load of the URL, each completing once as cancelled, and no other load")
    func cancelByURL() async throws {
        try await Self.withManagerAndOrigin { server, manager, cache in
            let gate = OriginGate()
            let png = SyntheticImages.png(width: 8, height: 6)
            server.route("/a.png", OriginResponse.ok(png, contentType: "image/png").held(by: gate))
            server.route("/b.png", OriginResponse.ok(png, contentType: "image/png").held(by: gate))
            let a = try #require(URL(string: server.url("/a.png")))
            let b = try #require(URL(string: server.url("/b.png")))
            let outcomes = Outcomes()
            let callbackA = manager.loadImage(with: a) { outcomes.append("a", $0) }
            let resizedA = manager.loadImage(with: try ImageRequest(url: a, processors: [.resize(width: 4)])) {
                outcomes.append("a resized", $0)
            }
            let streamA = manager.task(for: try ImageRequest(url: a))
            let callbackB = manager.loadImage(with: b) { outcomes.append("b", $0) }
            await server.waitForRequests(to: "/a.png", count: 1)
            await server.waitForRequests(to: "/b.png", count: 1)
            #expect(manager.runningCount == 4)

            #expect(manager.cancel(url: a) == 3)
            #expect(manager.cancel(url: a) == 0)  // nothing left to cancel
            var events: [ImageTask.Event] = []
            for await event in streamA.events { events.append(event) }
            gate.open()
            let bResult = try await outcomes.wait(for: "b")
            #expect(bResult.image.width == 8)
            let cancelled = await outcomes.waitAll(["a", "a resized"])
            for outcome in cancelled {
                guard case .failure(.cancelled) = outcome else { throw OutcomeError(outcome) }
            }
            guard case .finished(.failure(.cancelled))? = events.last, events.count == 1 else {
                throw OutcomeError(nil)
            }
            #expect(callbackA.isCancelled && resizedA.isCancelled && !callbackB.isCancelled)
            #expect(outcomes.count == 3)  // one completion each, no second one
        }
    }

    @Test("a response validator refuses a response from its head; a data modifier decrypts what the caches keep")
    func responseValidatorAndDataModifier() async throws {
        let png = SyntheticImages.png(width: 8, height: 6)
        var downloads = ImageDownloader.Configuration()
        struct NotAnImage: Error { let contentType: String }
        downloads.responseValidator = ResponseValidator(identifier: "no-html") { head in
            if let type = head.headers[.contentType], type == "text/html" { throw NotAnImage(contentType: type) }
        }
        downloads.dataModifier = DataModifier(identifier: "xor") { body, url in
            guard url.path.hasSuffix(".bin") else { return body }
            guard body.count > 3 else { throw Refusal("too short to be encrypted") }
            return body.map { $0 ^ 0x5A }
        }
        try await Self.withManagerAndOrigin(downloads: downloads) { server, manager, cache in
            let page = Array("<html>".utf8) + [UInt8](repeating: 32, count: 100_000)
            server.route("/page", .ok(page, contentType: "text/html"))
            server.route("/secret.bin", .ok(png.map { $0 ^ 0x5A }, contentType: "application/octet-stream"))
            server.route("/broken.bin", .ok([1, 2, 3], contentType: "application/octet-stream"))
            let refused = await Result { () async throws(ImageError) -> ImageResult in
                try await manager.image(for: server.url("/page"))
            }
            // The validator's own error reaches the caller as the value it threw, not only its text.
            guard case .failure(.downloadFailed(.responseRejected("no-html", let error as NotAnImage))) = refused
            else { throw OutcomeError(refused) }
            #expect(error.contentType == "text/html")

            let secret = try #require(URL(string: server.url("/secret.bin")))
            let decrypted = try await manager.image(for: try ImageRequest(url: secret, options: [.waitStoreCache]))
            #expect(decrypted.image.width == 8 && decrypted.image.height == 6)
            #expect(decrypted.data == png)
            #expect(decrypted.diskStore == .stored)
            cache.clearMemory()
            let stored = try await cache.query(forKey: manager.cacheKey(for: secret))
            #expect(stored?.cacheType == .disk)
            #expect(stored?.data == png)

            let broken = await Result { () async throws(ImageError) -> ImageResult in
                try await manager.image(for: server.url("/broken.bin"))
            }
            guard case .failure(.downloadFailed(.dataModificationFailed("xor", let error as Refusal))) = broken else {
                throw OutcomeError(broken)
            }
            #expect(error.description == "too short to be encrypted")
        }
    }

    @Test("a retry strategy tries a transient failure again after its interval, and a lasting one never")
    func retryStrategy() async throws {
        let png = SyntheticImages.png(width: 8, height: 6)
        try await withOriginServer { server in
            server.route("/flaky.png", .status(503))
            server.route("/gone.png", .status(404))
            let clock = TestClock()
            var configuration = ImageDownloader.Configuration()
            configuration.clock = clock
            configuration.retryStrategy = RetryStrategy(maximumRetries: 2, interval: .constant(.seconds(5)))
            try await withImageDownloader(configuration: configuration) { downloader in
                let flaky = downloader.downloadTask(
                    DownloadRequest(url: try #require(URL(string: server.url("/flaky.png")))))
                await server.waitForRequests(to: "/flaky.png", count: 1)
                await clock.waitForSleepers(count: 1)
                server.route("/flaky.png", .ok(png, contentType: "image/png"))
                clock.advance(by: .seconds(5))
                #expect(try await flaky.response.body == png)
                #expect(server.requestCount("/flaky.png") == 2)

                let gone = downloader.downloadTask(
                    DownloadRequest(url: try #require(URL(string: server.url("/gone.png")))))
                await #expect(throws: DownloadError.self) { try await gone.response }
                #expect(server.requestCount("/gone.png") == 1)  // 404 is lasting: not retried
            }
        }
    }

    @Test("the wait before a retry: constant, doubling to a cap, or the origin's Retry-After when longer")
    func retryDelays() {
        let exponential = RetryStrategy(interval: .exponential(base: .seconds(1), cap: .seconds(5)))
        #expect(
            (1...4).map { exponential.delay(beforeRetry: $0, after: .timedOut) } == [
                .seconds(1), .seconds(2), .seconds(4), .seconds(5),
            ])
        let busy = DownloadError.httpStatus(code: 503, headers: [.retryAfter: "30"])
        #expect(RetryStrategy(interval: .constant(.seconds(2))).delay(beforeRetry: 1, after: busy) == .seconds(30))
        #expect(RetryStrategy.retriesTransientFailures(busy, 1))
        #expect(!RetryStrategy.retriesTransientFailures(.cancelled, 1))
        #expect(!RetryStrategy.retriesTransientFailures(.httpStatus(code: 404, headers: [:]), 1))
    }

    @Test("alternative sources are tried in order when the URL fails; what answers is cached under the request")
    func alternativeSources() async throws {
        let png = SyntheticImages.png(width: 8, height: 6)
        try await Self.withManagerAndOrigin { server, manager, cache in
            server.route("/missing.png", .status(404))
            server.route("/down.png", .status(503))
            server.route("/mirror.png", .ok(png, contentType: "image/png"))
            let urls = try ["/missing.png", "/down.png", "/mirror.png"].map {
                try #require(URL(string: server.url($0)))
            }
            var request = try ImageRequest(url: urls[0])
            request.alternativeURLs = [urls[1], urls[2]]
            let result = try await manager.image(for: request)
            #expect(result.image.width == 8)
            #expect(result.url == urls[2])
            #expect(server.arrivalOrder == ["/missing.png", "/down.png", "/mirror.png"])
            // The lasting 404 is listed, the transient 503 is not, and the mirror answered.
            #expect(manager.failedURLs.contains(urls[0]) && !manager.failedURLs.contains(urls[1]))
            #expect(!manager.failedURLs.contains(urls[2]))
            #expect(try await manager.image(for: request).cacheType == .memory)

            // Again from another manager state: the listed URL is skipped, the others tried in order.
            manager.cache.clearMemory()
            await manager.cache.clearDisk()
            _ = try await manager.image(for: request)
            #expect(
                server.arrivalOrder == ["/missing.png", "/down.png", "/mirror.png", "/down.png", "/mirror.png"])

            // Every source failing: the URL's own failure.
            var hopeless = try ImageRequest(url: urls[1])
            hopeless.alternativeURLs = [urls[0]]
            let failed = await Result { () async throws(ImageError) -> ImageResult in
                try await manager.image(for: hopeless)
            }
            guard case .failure(.downloadFailed(.httpStatus(503, _))) = failed else { throw OutcomeError(failed) }

            // A source that answers ends the search, even with an empty body: the alternative is not asked.
            server.route("/empty.png", .ok([], contentType: "image/png"))
            var empty = try ImageRequest(url: try #require(URL(string: server.url("/empty.png"))))
            empty.alternativeURLs = [urls[2]]
            let before = server.arrivalOrder.count
            let emptyResult = await Result { () async throws(ImageError) -> ImageResult in
                try await manager.image(for: empty)
            }
            guard case .failure(.decodingFailed) = emptyResult else { throw OutcomeError(emptyResult) }
            #expect(Array(server.arrivalOrder.dropFirst(before)) == ["/empty.png"])
        }
    }

    @Test("a rate limit starts a burst at once, then one transfer per interval")
    func rateLimit() async throws {
        try await withOriginServer { server in
            server.route("/r.png", .ok(SyntheticImages.png(width: 8, height: 6), contentType: "image/png"))
            let clock = TestClock()
            var configuration = ImageDownloader.Configuration()
            configuration.clock = clock
            configuration.rateLimit = RateLimit(rate: 2, burst: 2)  // a start every 500 ms past two
            try await withImageDownloader(configuration: configuration) { downloader in
                let tasks = try (0..<5).map { index in
                    downloader.downloadTask(
                        DownloadRequest(url: try #require(URL(string: server.url("/r.png?\(index)")))))
                }
                await server.waitForRequests(to: "/r.png", count: 2)
                await clock.waitForSleepers(count: 3)
                #expect(server.requestCount("/r.png") == 2)
                clock.advance(by: .milliseconds(500))
                await server.waitForRequests(to: "/r.png", count: 3)
                await clock.waitForSleepers(count: 2)
                #expect(server.requestCount("/r.png") == 3)
                clock.advance(by: .seconds(1))
                for task in tasks { #expect(try await task.response.statusCode == 200) }
                #expect(server.requestCount("/r.png") == 5)
            }
        }
    }

    @Test("a prefetcher cancels one URL, started or not, and holds new URLs back while paused")
    func prefetcherCancelOneAndPause() async throws {
        let png = SyntheticImages.png(width: 8, height: 6)
        try await Self.withManagerAndOrigin { server, manager, cache in
            let gate = OriginGate()
            server.route("/held.png", OriginResponse.ok(png, contentType: "image/png").held(by: gate))
            for name in ["a", "b", "c", "d"] { server.route("/\(name).png", .ok(png, contentType: "image/png")) }
            let url: @Sendable (String) -> URL = { path in URL(string: server.url(path))! }
            let prefetcher = ImagePrefetcher(manager: manager, maxConcurrentPrefetches: 1)
            // One at a time: the held URL loads, b waits behind it; both are cancelled, c and d load.
            let (reports, continuation) = AsyncStream.makeStream(of: ImagePrefetcher.Progress.self)
            let run = Task {
                await prefetcher.prefetch([url("/held.png"), url("/b.png"), url("/c.png")]) {
                    continuation.yield($0)
                }
            }
            await server.waitForRequests(to: "/held.png", count: 1)
            prefetcher.cancel(url: url("/b.png"))  // not started yet
            prefetcher.cancel(url: url("/held.png"))  // loading
            let summary = await run.value
            continuation.finish()
            #expect(summary == ImagePrefetcher.Progress(finished: 1, failed: 2, total: 3, bytes: png.count))
            #expect(server.requestCount("/b.png") == 0 && server.requestCount("/c.png") == 1)
            var seen: [Int] = []
            for await report in reports { seen.append(report.completed) }
            #expect(seen == [1, 2, 3])
            // A prefetch started after the cancellation loads the URL again.
            #expect(await prefetcher.prefetch([url("/b.png")]).finished == 1)

            // Paused before it starts: nothing reaches the origin until resume().
            prefetcher.pause()
            #expect(prefetcher.isPaused)
            let paused = Task { await prefetcher.prefetch([url("/d.png"), url("/a.png")]) }
            let before = server.requestCount()
            prefetcher.resume()
            let resumed = await paused.value
            #expect(resumed.finished == 2 && resumed.total == 2)
            #expect(server.requestCount() == before + 2)
            gate.open()
        }
    }

    @Test("a callback load's task has events too: progress, then its one outcome, the same the callbacks get")
    func callbackLoadEvents() async throws {
        try await Self.withManagerAndOrigin { server, manager, cache in
            let gate = OriginGate()
            server.route("/held.png", OriginResponse.ok([1], contentType: "image/png").held(by: gate))
            let outcomes = Outcomes()
            let task = manager.loadImage(with: try #require(URL(string: server.url("/a.png")))) {
                outcomes.append("a", $0)
            }
            var events: [ImageTask.Event] = []
            for await event in task.events { events.append(event) }
            #expect(try await outcomes.wait(for: "a").image.width == 8)
            guard case .finished(.success(let result))? = events.last else { throw OutcomeError(nil) }
            #expect(result.image.width == 8)
            #expect(events.dropLast().allSatisfy { if case .progress = $0 { true } else { false } })
            #expect(events.count >= 2)

            let held = manager.loadImage(with: try #require(URL(string: server.url("/held.png")))) { _ in }
            await server.waitForRequests(to: "/held.png", count: 1)
            held.cancel()
            var cancelled: [ImageTask.Event] = []
            for await event in held.events { cancelled.append(event) }
            guard case .finished(.failure(.cancelled))? = cancelled.last, cancelled.count == 1 else {
                throw OutcomeError(nil)
            }
            gate.open()
        }
    }

    @Test("fromMemoryCacheOrRefresh takes memory, and otherwise downloads though the disk has it")
    func memoryOrRefresh() async throws {
        try await Self.withManagerAndOrigin { server, manager, cache in
            let url = try #require(URL(string: server.url("/a.png")))
            _ = try await manager.image(for: try ImageRequest(url: url, options: [.waitStoreCache]))
            let memoryOrRefresh = try ImageRequest(url: url, options: [.fromMemoryCacheOrRefresh])
            #expect(try await manager.image(for: memoryOrRefresh).cacheType == .memory)
            #expect(server.requestCount("/a.png") == 1)

            cache.clearMemory()
            #expect(try await manager.image(for: memoryOrRefresh).cacheType == .notCached)
            #expect(server.requestCount("/a.png") == 2)
            cache.clearMemory()
            #expect(try await manager.image(for: url).cacheType == .disk)  // it was on disk all along
            #expect(server.requestCount("/a.png") == 2)
        }
    }

    @Test("a memory cache's limits change at run time: lowering them evicts the least recently used at once")
    func memoryCacheLimitsAtRunTime() {
        var configuration = MemoryCache<String, Int>.Configuration(costLimit: 100)
        configuration.respondsToMemoryPressure = false
        let cache = MemoryCache<String, Int>(configuration: configuration)
        for index in 0..<10 { cache.setValue(index, forKey: "\(index)", cost: 10) }
        #expect(cache.totalCost == 100 && cache.count == 10)
        _ = cache.value(forKey: "0")  // now the most recently used

        cache.costLimit = 50
        #expect(cache.totalCost == 50 && cache.count == 5)
        #expect(["0", "7", "8", "9", "6"].allSatisfy { cache.containsValue(forKey: $0) })
        cache.setValue(99, forKey: "big", cost: 6)  // above a tenth of the new limit: not cached
        #expect(!cache.containsValue(forKey: "big"))

        cache.countLimit = 2
        #expect(cache.count == 2 && cache.containsValue(forKey: "0") && cache.containsValue(forKey: "9"))
        cache.costLimit = 1_000
        cache.countLimit = .max
        cache.setValue(99, forKey: "big", cost: 60)
        #expect(cache.containsValue(forKey: "big") && cache.configuration.costLimit == 100)
    }

    @Test("a processor's error reaches the caller as it was thrown, and the processed variant's key is public")
    func processingErrorsAndVariantKeys() async throws {
        struct Refused: Error, Equatable { let code: Int }
        struct Failing: ImageProcessing {
            var identifier: String { "test.failing" }
            func process(_ image: Image) throws -> Image { throw Refused(code: 7) }
        }
        try await Self.withManagerAndOrigin { server, manager, cache in
            let url = try #require(URL(string: server.url("/a.png")))
            let failing = await Result { () async throws(ImageError) -> ImageResult in
                try await manager.image(for: try! ImageRequest(url: url, processors: [Failing()]))
            }
            guard case .failure(.processingFailed("test.failing", let error as Refused)) = failing else {
                throw OutcomeError(failing)
            }
            #expect(error == Refused(code: 7))

            // The variant key covers the processors: seed it, probe it, remove it.
            let small = try ImageRequest(url: url, processors: [.resize(width: 4)])
            let key = manager.cacheKey(for: small)
            #expect(key != manager.cacheKey(for: url))
            let seeded = Image(
                pixels: try PixelBuffer(width: 2, height: 2, format: .rgb8, bytes: [UInt8](repeating: 9, count: 12))
            )
            try await cache.store(seeded, forKey: key, toDisk: false)
            let hit = try await manager.image(for: small)
            #expect(hit.cacheType == .memory && hit.image.width == 2)
            #expect(server.requestCount("/a.png") == 1)  // the failing load's only
            await cache.removeImage(forKey: key, fromDisk: true)
            #expect(try await manager.image(for: small).image.width == 4)
        }
    }

    @Test("a bad URL is ImageError.invalidURL whether the request or the manager refuses it: one catch for both")
    func oneErrorTypeForABadURL() async throws {
        try await withImageManager { manager in
            func load(_ string: String) async -> ImageError? {
                do {
                    let request = try ImageRequest(string: string)
                    _ = try await manager.image(for: request)
                    return nil
                } catch {
                    return error  // typed: ImageError, from either call
                }
            }
            guard
                case .invalidURL("ftp://example.com/a.png", .unsupportedScheme("ftp"))? = await load(
                    "ftp://example.com/a.png")
            else { throw OutcomeError(nil) }
            let viaManager = await Result { () async throws(ImageError) -> ImageResult in
                try await manager.image(for: "http://")
            }
            guard case .failure(.invalidURL("http://", .missingHost)) = viaManager else {
                throw OutcomeError(viaManager)
            }
        }
    }

    @Test("the decoding and processing stages hold loads while suspended and report their operations")
    func stageQueues() async throws {
        try await Self.withManagerAndOrigin { server, manager, cache in
            let url = try #require(URL(string: server.url("/a.png")))
            let decoding = manager.decodingQueue.events()
            let processing = manager.processingQueue.events()
            manager.decodingQueue.isSuspended = true
            manager.processingQueue.isSuspended = true
            let request = try ImageRequest(url: url, processors: [.resize(width: 4)])
            let load = Task { try await manager.image(for: request) }

            var decodingEvents = decoding.makeAsyncIterator()
            #expect(await decodingEvents.next() == .waiting(url))
            #expect(manager.decodingQueue.waitingCount == 1 && manager.decodingQueue.runningCount == 0)
            manager.decodingQueue.isSuspended = false
            #expect(await decodingEvents.next() == .started(url))
            #expect(await decodingEvents.next() == .finished(url))

            var processingEvents = processing.makeAsyncIterator()
            #expect(await processingEvents.next() == .waiting(url))
            manager.processingQueue.isSuspended = false
            #expect(await processingEvents.next() == .started(url))
            #expect(await processingEvents.next() == .finished(url))
            #expect(try await load.value.image.width == 4)

            // A load cancelled while it waits leaves without decoding.
            manager.decodingQueue.isSuspended = true
            let other = try #require(URL(string: server.url("/a.png?again")))
            let cancelled = Task {
                try await manager.image(for: try ImageRequest(url: other, options: [.fromLoaderOnly]))
            }
            let event = await decodingEvents.next()
            #expect(event == .waiting(other), "\(String(describing: event))")
            cancelled.cancel()
            let error = await #expect(throws: ImageError.self) { try await cancelled.value }
            guard case .cancelled? = error else { throw OutcomeError(nil) }
            #expect(manager.decodingQueue.waitingCount == 0)
            manager.decodingQueue.isSuspended = false
        }
    }

    @Test("a data provider's bytes go through the pipeline under its own key; a local file is read only through one")
    func dataProviders() async throws {
        struct Unavailable: Error {}
        let directory = TemporaryDirectory()
        let png = SyntheticImages.png(width: 8, height: 6)
        try await Self.withManagerAndOrigin { server, manager, cache in
            let calls = Mutex(0)
            let provider = ClosureDataProvider(cacheKey: "avatar-42") {
                calls.withLock { $0 += 1 }
                return png
            }
            let first = try await manager.image(for: ImageRequest(provider: provider, options: [.waitStoreCache]))
            #expect(first.image.width == 8 && first.cacheType == .notCached)
            #expect(try await manager.image(for: ImageRequest(provider: provider)).cacheType == .memory)
            cache.clearMemory()
            let resized = ImageRequest(provider: provider, processors: [.resize(width: 4)])
            let fromDisk = try await manager.image(for: resized)
            #expect(fromDisk.image.width == 4 && calls.withLock { $0 } == 1)  // from the disk, not the provider
            #expect(server.requestCount() == 0)

            let failing = ClosureDataProvider(cacheKey: "gone") { throw Unavailable() }
            let failed = await Result { () async throws(ImageError) -> ImageResult in
                try await manager.image(for: ImageRequest(provider: failing))
            }
            guard case .failure(.providerFailed("gone", let error)) = failed, error is Unavailable else {
                throw OutcomeError(failed)
            }

            // A file: through a provider the caller made, never through a URL's request.
            let path = directory.path + "/local.png"
            #expect(FileManager.default.createFile(atPath: path, contents: Data(png)))
            let file = try #require(LocalFileDataProvider(fileURL: URL(fileURLWithPath: path)))
            #expect(try await manager.image(for: ImageRequest(provider: file)).image.height == 6)
            let refused = Result { () throws(ImageError) -> ImageRequest in
                try ImageRequest(string: "file://" + path)
            }
            guard case .failure(.invalidURL(_, .unsupportedScheme("file"))) = refused else { throw OutcomeError(nil) }
            let tooLarge = LocalFileDataProvider(path: path, maximumSize: 10)
            let large = await Result { () async throws(ImageError) -> ImageResult in
                try await manager.image(for: ImageRequest(provider: tooLarge, options: [.fromLoaderOnly]))
            }
            guard case .failure(.providerFailed) = large else { throw OutcomeError(large) }
        }
    }

    @Test("a resize of an empty source is an error, never a 1x1 enlargement")
    func resizeOfAnEmptySource() {
        #expect(throws: ImageProcessingError.self) {
            try ImageProcessors.Resize(width: 150, height: 150).plan(sourceWidth: 0, sourceHeight: 0)
        }
    }

    @Test("the origin server keeps the order requests arrived in, across paths, and the most ever in flight")
    func originServerOrderAndConcurrency() async throws {
        try await withOriginServer { server in
            let gate = OriginGate()
            server.route("/slow", OriginResponse.ok([1]).held(by: gate))
            server.route("/fast", .ok([2]))
            let (slowURL, fastURL) = (
                try #require(URL(string: server.url("/slow"))), try #require(URL(string: server.url("/fast")))
            )
            try await withImageDownloader(configuration: Self.patientDownloads) { downloader in
                let slow = downloader.downloadTask(DownloadRequest(url: slowURL))
                await server.waitForRequests(to: "/slow", count: 1)
                _ = try await downloader.downloadTask(DownloadRequest(url: fastURL)).response
                #expect(server.inFlightCount == 1)  // the held one
                gate.open()
                #expect(try await slow.response.body == [1])
            }
            #expect(server.arrivalOrder == ["/slow", "/fast"])
            #expect(server.maxInFlightCount == 2)
            #expect(server.inFlightCount == 0)
        }
    }
}

/// The completions of callback loads, by name, for a test to await.
final class Outcomes: Sendable {
    private typealias Outcome = (name: String, outcome: Result<ImageResult, ImageError>)
    private let state = Mutex<(outcomes: [Outcome], waiters: [CheckedContinuation<Void, Never>])>(([], []))

    var count: Int { state.withLock { $0.outcomes.count } }

    func append(_ name: String, _ outcome: Result<ImageResult, ImageError>) {
        let waiters = state.withLock { state in
            state.outcomes.append((name, outcome))
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The outcome of the load named `name`, once it has come.
    func wait(for name: String) async throws -> ImageResult {
        try await waitAll([name])[0].get()
    }

    /// The outcomes of the loads named `names`, in that order, once all have come.
    func waitAll(_ names: [String]) async -> [Result<ImageResult, ImageError>] {
        func found(_ outcomes: [Outcome]) -> [Result<ImageResult, ImageError>]? {
            let found = names.compactMap { name in outcomes.first { $0.name == name }?.outcome }
            return found.count == names.count ? found : nil
        }
        while true {
            if let all = state.withLock({ found($0.outcomes) }) { return all }
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state in
                    if found(state.outcomes) != nil { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }
}

struct OutcomeError: Error {
    let outcome: Result<ImageResult, ImageError>?
    init(_ outcome: Result<ImageResult, ImageError>?) { self.outcome = outcome }
}
