import Foundation
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// The prefetcher against a real origin.
@Suite("ImagePrefetcher", .timeLimit(.minutes(2)))
struct ImagePrefetcherTests {
    @Test("counts are exact: finished, skipped (already cached), failed; a later load does not download again")
    func counts() async throws {
        try await withManager { harness in
            for index in 0..<4 { harness.server.route("/ok\(index).png", .ok(ManagerFixtures.png)) }
            harness.server.route("/cached.png", .ok(ManagerFixtures.png))
            _ = try await harness.manager.image(for: harness.url("/cached.png"))
            let urls =
                (0..<4).map { harness.url("/ok\($0).png") } + [harness.url("/cached.png"), harness.url("/gone.png")]
            let reports = Mutex<[ImagePrefetcher.Progress]>([])

            let summary = await ImagePrefetcher(manager: harness.manager).prefetch(urls) { progress in
                reports.withLock { $0.append(progress) }
            }

            #expect(
                summary
                    == ImagePrefetcher.Progress(
                        finished: 4, skipped: 1, failed: 1, total: 6, bytes: 4 * ManagerFixtures.png.count))
            #expect(reports.withLock { $0.map(\.completed) } == [1, 2, 3, 4, 5, 6])
            #expect(reports.withLock { $0.last } == summary)
            #expect(harness.server.requestCount("/cached.png") == 1)
            #expect(harness.loader.requests.filter { $0.url.path.hasPrefix("/ok") }.allSatisfy { $0.priority == .low })

            // Prefetched into the disk cache, as downloaded: the later load decodes from disk.
            let later = try await harness.manager.image(for: harness.url("/ok2.png"))
            #expect(later.cacheType == .disk)
            #expect(harness.server.requestCount("/ok2.png") == 1)
        }
    }

    @Test("the disk cache is asked once for the whole list; a URL listed twice loads once; refresh asks each")
    func looksUpTheListAtOnce() async throws {
        try await withManager { harness in
            for index in 0..<3 { harness.server.route("/p\(index).png", .ok(ManagerFixtures.png)) }
            // Given one URL on disk (from an earlier run) and a list naming another twice
            _ = try await harness.manager.data(for: try ImageRequest(url: harness.url("/p0.png")))
            let urls = [harness.url("/p0.png"), harness.url("/p1.png"), harness.url("/p2.png"), harness.url("/p1.png")]
            #expect(await harness.manager.urlsWithCachedData(urls) == [harness.url("/p0.png")])

            // When they are prefetched
            let summary = await ImagePrefetcher(manager: harness.manager).prefetch(urls)

            // Then the cached one and the repeat are skipped, and each other URL was asked of the origin once
            #expect(summary.finished == 2)
            #expect(summary.skipped == 2)
            #expect((0..<3).map { harness.server.requestCount("/p\($0).png") } == [1, 1, 1])
            #expect(await harness.manager.urlsWithCachedData(urls) == Set(urls))

            // With refreshCached each URL is revalidated with the origin instead (nothing changed: all skipped)
            let refreshed = await ImagePrefetcher(manager: harness.manager, options: [.refreshCached]).prefetch(
                Array(urls.prefix(3)))
            #expect(refreshed.skipped == 3)
            #expect((0..<3).map { harness.server.requestCount("/p\($0).png") } == [2, 2, 2])
        }
    }

    @Test("prefetching into memory decodes each image there; into the disk cache, nothing is decoded")
    func destinations() async throws {
        let events = Mutex<[ImageManager.Stage]>([])
        try await withManager(configure: { $0.stageObserver = { stage, _ in events.withLock { $0.append(stage) } } }) {
            harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            harness.server.route("/b.png", .ok(ManagerFixtures.png))
            let toDisk = await ImagePrefetcher(manager: harness.manager).prefetch([harness.url("/a.png")])
            #expect(toDisk.finished == 1)
            #expect(events.withLock { $0 }.isEmpty)
            #expect(await harness.manager.isCachedOnDisk(harness.url("/a.png")))
            #expect(harness.cache.imageInMemory(forKey: harness.manager.cacheKey(for: harness.url("/a.png"))) == nil)

            let prefetcher = ImagePrefetcher(manager: harness.manager, destination: .memoryCache)
            let toMemory = await prefetcher.prefetch([harness.url("/b.png")])
            #expect(toMemory.finished == 1)
            #expect(events.withLock { $0 }.contains(.decode))
            let later = try await harness.manager.image(for: harness.url("/b.png"))
            #expect(later.cacheType == .memory)
        }
    }

    @Test("at most four load at once by default")
    func boundedConcurrency() async throws {
        try await withManager { harness in
            let gate = OriginGate()
            harness.server.route("/p.png", .ok(ManagerFixtures.png).held(by: gate))
            let urls = (0..<10).map { harness.url("/p.png?i=\($0)") }
            let prefetcher = ImagePrefetcher(manager: harness.manager)
            let work = Task { await prefetcher.prefetch(urls) }
            await harness.server.waitForRequests(to: "/p.png", count: 4)
            gate.open()
            let summary = await work.value

            #expect(summary.finished == 10)
            #expect(harness.server.maxInFlightCount("/p.png") == 4)
        }
    }

    @Test("a real load of a URL being prefetched joins it and raises its priority instead of downloading again")
    func handOver() async throws {
        try await withManager(downloading: { $0.maxConcurrentDownloads = 1 }) { harness in
            harness.server.route("/p.png", .ok(ManagerFixtures.png))
            harness.downloader.isSuspended = true
            let urls = [harness.url("/p.png?i=0"), harness.url("/p.png?i=1")]
            let prefetcher = ImagePrefetcher(manager: harness.manager)
            let work = Task { await prefetcher.prefetch(urls) }
            await harness.loader.waitForDownloads(2)

            // The real load's download joins the prefetch's in the downloader's queue, at its own priority.
            let real = Deliveries()
            _ = real.load(harness.manager, try ImageRequest(url: urls[1]))
            await harness.loader.waitForDownloads(3)
            harness.downloader.isSuspended = false
            let summary = await work.value
            await harness.settle()
            let result = try #require(try real.completions.first?.get())

            #expect(result.cacheType == .notCached)
            #expect(summary.finished == 2)
            #expect(harness.loader.requests.count == 3)
            #expect(harness.server.requestCount("/p.png") == 2)
            let order = harness.server.requests(to: "/p.png").map { $0.uri.split(separator: "=").last! }
            #expect(order == ["1", "0"])
        }
    }

    @Test("cancel() stops what has not finished; it counts as failed")
    func cancel() async throws {
        try await withManager { harness in
            let gate = OriginGate()
            defer { gate.open() }
            harness.server.route("/p.png", .ok(ManagerFixtures.png).held(by: gate))
            let urls = (0..<6).map { harness.url("/p.png?i=\($0)") }
            let prefetcher = ImagePrefetcher(manager: harness.manager)
            let work = Task { await prefetcher.prefetch(urls) }
            await harness.server.waitForRequests(to: "/p.png", count: 4)

            prefetcher.cancel()
            let summary = await work.value

            #expect(summary == ImagePrefetcher.Progress(finished: 0, skipped: 0, failed: 6, total: 6))
            #expect(!harness.manager.isRunning)
            #expect(harness.server.requestCount("/p.png") == 4)
        }
    }
}
