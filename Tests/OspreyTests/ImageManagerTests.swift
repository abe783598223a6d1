import Dispatch
import Foundation
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// The manager's flow and entry points against a real origin, counting what reached it.
@Suite("ImageManager", .timeLimit(.minutes(2)))
struct ImageManagerTests {
    @Test("an empty or malformed URL fails at once in every form, and nothing reaches the network")
    func malformedURLsFailAtOnce() async throws {
        try await withManager { harness in
            let manager = harness.manager
            for string in ["", "not a url at all", "ftp://example.com/a.png", "/relative/a.png", "http://"] {
                // When each form is given the bad string
                let asyncError = await #expect(throws: ImageError.self) { try await manager.image(for: string) }
                let deliveries = Deliveries()
                let task = manager.loadImage(with: string) { outcome in
                    deliveries.record(outcome)
                }
                await harness.settle()

                // Then each fails with invalidURL
                guard case .invalidURL(let reported, _) = asyncError else {
                    Issue.record("\(string): \(String(describing: asyncError))")
                    continue
                }
                #expect(reported == string)
                #expect(deliveries.completions.count == 1)
                if case .failure(.invalidURL) = deliveries.completions.first {
                } else {
                    Issue.record("callback form for '\(string)': \(deliveries.completions)")
                }
                #expect(task.isFinished)
            }
            #expect(harness.server.requestCount() == 0)
            #expect(harness.loader.requests.isEmpty)
            #expect(!manager.isRunning)
        }
    }

    @Test("a load downloads once, then comes from memory, then after memory is cleared from disk")
    func memoryThenDiskThenNetwork() async throws {
        try await withManager { harness in
            // Given an origin serving a PNG
            harness.server.route("/a.png", .ok(ManagerFixtures.png, contentType: "image/png"))
            let url = harness.url("/a.png")

            // When it is loaded three times, the memory cleared before the third
            let first = try await harness.manager.image(for: url)
            let second = try await harness.manager.image(for: url)
            await harness.settle()
            harness.cache.clearMemory()
            let third = try await harness.manager.image(for: url)

            // Then the first came from the network with its bytes, the second from memory, the third from disk,
            // and the origin was asked once
            #expect(first.cacheType == .notCached)
            #expect(first.data == ManagerFixtures.png)
            #expect(first.image.width == 8 && first.image.height == 6)
            #expect(first.url == url)
            #expect(first.isFinal)
            #expect(second.cacheType == .memory)
            #expect(third.cacheType == .disk)
            #expect(third.data == ManagerFixtures.png)
            #expect(third.image == first.image)
            #expect(harness.server.requestCount("/a.png") == 1)
        }
    }

    @Test("a manager is built from the caller's cache and loader, and the shared one exists")
    func composition() async throws {
        try await withManager { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            _ = try await harness.manager.image(for: harness.url("/a.png"), options: [.waitStoreCache])

            // The caller's loader was used and the caller's cache holds the image
            #expect(harness.loader.requests.map(\.url) == [harness.url("/a.png")])
            #expect(harness.cache.isCachedInMemory(forKey: harness.url("/a.png").absoluteString))
            #expect(await harness.cache.isCachedOnDisk(forKey: harness.url("/a.png").absoluteString))
            #expect(ImageManager.shared.loader is ImageDownloader)
            #expect(ImageManager.shared === ImageManager.shared)
        }
    }

    @Test("the callback form calls back on the caller's queue: progress in order, then one completion")
    func callbacksOnTheCallersQueue() async throws {
        try await withManager { harness in
            // Given a chunked body whose rest waits until the first progress report came, so there are several
            let body = try ManagerFixtures.jpeg(width: 64, height: 64)
            let gate = OriginGate()
            defer { gate.open() }
            harness.server.route(
                "/a.jpg",
                .ok(body).trickled(bytes: 256, every: .milliseconds(1)).pausing(afterBodyBytes: 256, until: gate))
            let queue = DispatchQueue(label: "caller")
            let key = DispatchSpecificKey<String>()
            queue.setSpecific(key: key, value: "caller")
            let onQueue = Mutex<[Bool]>([])
            let completions = Mutex<[Result<ImageResult, ImageError>]>([])

            // When it is loaded with callbacks on the caller's queue
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                harness.manager.loadImage(
                    with: harness.url("/a.jpg"), callbackQueue: queue,
                    progress: { _ in
                        onQueue.withLock { $0.append(DispatchQueue.getSpecific(key: key) == "caller") }
                        gate.open()
                    },
                    completion: { outcome in
                        onQueue.withLock { $0.append(DispatchQueue.getSpecific(key: key) == "caller") }
                        completions.withLock { $0.append(outcome) }
                        done.resume()
                    })
            }
            await harness.settle()

            // Then every call ran on the queue and the completion came once, with the image (chunked, so the
            // length was unknown)
            #expect(onQueue.withLock { $0.count } > 2)
            #expect(onQueue.withLock { $0.allSatisfy { $0 } })
            #expect(completions.withLock { $0.count } == 1)
            let result = try completions.withLock { $0[0] }.get()
            #expect(result.image.width == 64)
            #expect(!harness.manager.isRunning)
        }
    }

    @Test("the event stream reports progress adding up to the body, then the final result")
    func eventStream() async throws {
        try await withManager { harness in
            let body = try ManagerFixtures.jpeg(width: 64, height: 64)
            harness.server.route("/a.jpg", .ok(body))
            let task = harness.manager.task(for: try ImageRequest(url: harness.url("/a.jpg")))

            var received = 0
            var expected: Int?
            var finals: [ImageResult] = []
            for await event in task.events {
                switch event {
                case .progress(let progress):
                    received = progress.receivedBytes
                    expected = progress.expectedBytes
                case .preview: Issue.record("no preview without progressiveDownload")
                case .finished(let outcome): finals.append(try outcome.get())
                }
            }
            #expect(received == body.count)
            #expect(expected == body.count)
            #expect(finals.count == 1)
            #expect(finals.first?.cacheType == CacheType.notCached)
            #expect(task.isFinished && !task.isCancelled)
        }
    }

    @Test("the key of a redirected image is the requested URL's, and the result names the final URL")
    func redirectedImageIsKeyedByTheRequestedURL() async throws {
        try await withManager { harness in
            harness.server.route("/new.png", .ok(ManagerFixtures.png))
            harness.server.route("/old.png", .redirect(to: harness.server.url("/new.png")))

            let result = try await harness.manager.image(for: harness.url("/old.png"), options: [.waitStoreCache])

            #expect(result.url == harness.url("/new.png"))
            #expect(await harness.manager.isCached(harness.url("/old.png")))
            #expect(await harness.manager.isCachedOnDisk(harness.url("/old.png")))
            #expect(!(await harness.manager.isCached(harness.url("/new.png"))))
        }
    }

    @Test("a key filter that drops the query serves ?token=a and ?token=b from one entry")
    func cacheKeyFilter() async throws {
        try await withManager(configure: { configuration in
            configuration.cacheKeyFilter = { url in
                var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
                components.query = nil
                return components.string!
            }
        }) { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))

            let first = try await harness.manager.image(for: harness.url("/a.png?token=a"))
            let second = try await harness.manager.image(for: harness.url("/a.png?token=b"))

            #expect(first.cacheType == .notCached)
            #expect(second.cacheType == .memory)
            #expect(harness.server.requestCount("/a.png") == 1)
            #expect(harness.manager.cacheKey(for: harness.url("/a.png?token=z")) == harness.server.url("/a.png"))
        }
    }

    @Test("a source URL spelling a variant's suffix in its fragment or query does not take that variant's key")
    func variantKeysCannotBeSpelledByAURL() async throws {
        try await withManager { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            let resized = try ImageRequest(url: harness.url("/a.png"), processors: [.resize(width: 4)])
            let variantKey = harness.manager.cacheKey(for: resized)
            let source = harness.server.url("/a.png")
            let suffix = String(variantKey.dropFirst(source.count))
            let parts = suffix.dropFirst(ImageManager.variantSeparator.count)
            #expect(suffix == ImageManager.variantSeparator + parts)
            // The suffix's parts as the fragment the separator once was, and the whole suffix as a fragment or query.
            let spellings = [source + "#osprey:" + parts, source + "#" + suffix, source + "?" + suffix]
            for spelling in spellings {
                guard let forged = URL(string: spelling) else { continue }
                #expect(harness.manager.cacheKey(for: forged) != variantKey, "\(spelling)")
                // Loaded as it is (8 pixels wide), it must not answer the resized request.
                #expect(try await harness.manager.image(for: forged).image.width == 8)
            }
            #expect(try await harness.manager.image(for: resized).image.width == 4)
        }
    }

    @Test("different processors share one download; the same processors share one processing run")
    func coalescingAcrossStages() async throws {
        try await withManager { harness in
            // Given an origin held until four loads are waiting: two cropping alike, one cropping otherwise, one plain
            let gate = OriginGate()
            harness.server.route("/a.png", .ok(ManagerFixtures.png).held(by: gate))
            let url = harness.url("/a.png")
            let sameRuns = RunCounter()
            let otherRuns = RunCounter()
            let crop = CropProcessor(width: 4, height: 3, runs: sameRuns)
            let other = CropProcessor(width: 2, height: 2, runs: otherRuns)
            let manager = harness.manager
            async let a = manager.image(for: try ImageRequest(url: url, processors: [crop]))
            async let b = manager.image(for: try ImageRequest(url: url, processors: [crop]))
            async let c = manager.image(for: try ImageRequest(url: url, processors: [other]))
            async let d = manager.image(for: url)
            await harness.server.waitForRequests(to: "/a.png", count: 1)
            await harness.loader.waitForDownloads(3)
            gate.open()
            let results = try await [a, b, c, d]

            // Then one download served all, the shared crop ran once, and each got its own variant
            #expect(harness.server.requestCount("/a.png") == 1)
            #expect(sameRuns.value == 1)
            #expect(otherRuns.value == 1)
            #expect(results.map { "\($0.image.width)x\($0.image.height)" } == ["4x3", "4x3", "2x2", "8x6"])

            // And variants never collide with the original: each is in memory under its own key
            await harness.settle()
            let again = try await harness.manager.image(for: try ImageRequest(url: url, processors: [other]))
            #expect(again.cacheType == .memory)
            #expect(again.image.width == 2)
        }
    }

    @Test("a variant not in memory is derived from the original on disk, without a new download")
    func variantsAreDerivedFromTheOriginalOnDisk() async throws {
        try await withManager { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            let url = harness.url("/a.png")
            _ = try await harness.manager.image(for: url, options: [.waitStoreCache])
            harness.cache.clearMemory()

            let runs = RunCounter()
            let request = try ImageRequest(url: url, processors: [CropProcessor(width: 3, height: 3, runs: runs)])
            let variant = try await harness.manager.image(for: request)

            #expect(variant.cacheType == .disk)
            #expect(variant.image.width == 3)
            #expect(variant.data == ManagerFixtures.png)
            #expect(runs.value == 1)
            #expect(harness.server.requestCount("/a.png") == 1)
            #expect(await harness.cache.diskCache!.totals().count == 1)
        }
    }

    @Test("storesProcessedImagesOnDisk keeps the variant on disk too, decoded later without processing")
    func processedVariantsOnDisk() async throws {
        try await withManager(configure: { $0.storesProcessedImagesOnDisk = true }) { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            let runs = RunCounter()
            let request = try ImageRequest(
                url: harness.url("/a.png"), options: [.waitStoreCache],
                processors: [CropProcessor(width: 3, height: 2, runs: runs)])
            _ = try await harness.manager.image(for: request)
            harness.cache.clearMemory()

            let again = try await harness.manager.image(for: request)

            #expect(await harness.cache.diskCache!.totals().count == 2)
            #expect(again.cacheType == .disk)
            #expect(again.image.width == 3 && again.image.height == 2)
            #expect(runs.value == 1)
        }
    }

    @Test("a coder registered for another format (PPM) loads through the manager, its variants stored as PPM")
    func registeredCoder() async throws {
        let coders = ImageCoderRegistry()
        coders.register(PortablePixmapCoder() as any ImageDecoding)
        coders.register(PortablePixmapCoder() as any ImageEncoding)
        let samples: [UInt8] = (0..<24).map { UInt8($0 * 10) }
        let ppm = Array("P6\n4 2\n255\n".utf8) + samples
        let configure: (inout ImageManager.Configuration) -> Void = {
            $0.decoding.coders = coders
            $0.storesProcessedImagesOnDisk = true
        }
        // The manager's registry is the only one set: the cache has none of its own to disagree with.
        try await withManager(configure: configure) { harness in
            harness.server.route("/a.ppm", .ok(ppm, contentType: "image/x-portable-pixmap"))
            let runs = RunCounter()
            let request = try ImageRequest(
                url: harness.url("/a.ppm"), options: [.waitStoreCache],
                processors: [CropProcessor(width: 2, height: 1, runs: runs)])

            let loaded = try await harness.manager.image(for: request)
            #expect(loaded.image.sourceFormat == PortablePixmapCoder.format)
            #expect(loaded.image.pixels.row(0) == Array(samples[0..<6]))
            #expect(loaded.data == ppm)

            // The variant went to disk in its own format and decodes from there with the registry.
            #expect(await harness.cache.diskCache!.totals().count == 2)
            let variantKey = harness.manager.cacheKey(for: request)
            let stored = try #require(await harness.cache.diskCache!.data(forKey: variantKey))
            #expect(stored == Array("P6\n2 1\n255\n".utf8) + samples[0..<6])
            harness.cache.clearMemory()
            let again = try await harness.manager.image(for: request)
            #expect(again.cacheType == .disk)
            #expect(again.image.pixels.row(0) == Array(samples[0..<6]))
            #expect(runs.value == 1)
            #expect(harness.server.requestCount("/a.ppm") == 1)

            // The manager's own store encodes with the same registry: the cropped image, kept without bytes, is PPM.
            let other = harness.url("/b.ppm")
            try await harness.manager.store(loaded.image, for: other)
            #expect(await harness.cache.diskCache!.data(forKey: harness.manager.cacheKey(for: other)) == stored)
        }
        // Without the coder, the same bytes are an unsupported format.
        try await withManager { harness in
            harness.server.route("/a.ppm", .ok(ppm, contentType: "image/x-portable-pixmap"))
            let request = try ImageRequest(url: harness.url("/a.ppm"))
            do throws(ImageError) {
                _ = try await harness.manager.image(for: request)
                Issue.record("a PPM decoded without its coder")
            } catch {
                guard case .decodingFailed(.unsupportedFormat) = error else {
                    Issue.record("\(error)")
                    return
                }
            }
        }
    }

    @Test("one caller cancelling leaves the other caller of the same download undisturbed")
    func cancellingOneCallerLeavesTheOther() async throws {
        try await withManager { harness in
            let gate = OriginGate()
            harness.server.route("/a.png", .ok(ManagerFixtures.png).held(by: gate))
            let url = harness.url("/a.png")
            let cancelled = Deliveries()
            let kept = Deliveries()
            let first = cancelled.load(harness.manager, try ImageRequest(url: url))
            _ = kept.load(harness.manager, try ImageRequest(url: url))
            await harness.server.waitForRequests(to: "/a.png", count: 1)

            first.cancel()
            gate.open()
            await harness.settle()

            #expect(cancelled.isCancelledOnce)
            #expect(kept.completions.count == 1)
            #expect((try? kept.completions.first?.get())?.image.width == 8)
            #expect(harness.server.requestCount("/a.png") == 1)
            #expect(!harness.manager.isRunning)
        }
    }

    @Test("isCached, isCachedOnDisk and store")
    func bookkeeping() async throws {
        try await withManager { harness in
            let url = harness.url("/stored.png")
            #expect(!(await harness.manager.isCached(url)))

            try await harness.manager.store(try ImageDecoder.decode(ManagerFixtures.png), for: url, toDisk: false)
            #expect(await harness.manager.isCached(url))
            #expect(!(await harness.manager.isCachedOnDisk(url)))

            try await harness.manager.store(
                try ImageDecoder.decode(ManagerFixtures.png), data: ManagerFixtures.png, for: url)
            #expect(await harness.manager.isCachedOnDisk(url))
            let loaded = try await harness.manager.image(for: url)
            #expect(loaded.cacheType == .memory)
            #expect(harness.server.requestCount() == 0)
        }
    }
}
