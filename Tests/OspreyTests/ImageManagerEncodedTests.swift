import Foundation
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// Holds every job at the start of one stage until `count` have arrived, then lets them all on (and every later one
/// straight through).
final class StageBarrier: Sendable {
    let stage: ImageManager.Stage
    let count: Int
    private let state = Mutex<(arrived: Int, held: [CheckedContinuation<Void, Never>])>((0, []))

    init(_ stage: ImageManager.Stage, count: Int) {
        self.stage = stage
        self.count = count
    }

    var observer: @Sendable (ImageManager.Stage, URL) async -> Void {
        { [self] stage, _ in
            guard stage == self.stage else { return }
            await withCheckedContinuation { continuation in
                let released = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                    state.arrived += 1
                    state.held.append(continuation)
                    guard state.arrived >= count else { return [] }
                    defer { state.held = [] }
                    return state.held
                }
                for held in released { held.resume() }
            }
        }
    }
}

@Suite("ImageManager encoded output")
struct ImageManagerEncodedTests {
    static let widths = Array(stride(from: 100, through: 550, by: 50))
    static let formats: [ImageFormat] = [.jpeg, .webp]

    static func request(_ url: URL, width: Int) throws -> ImageRequest {
        try ImageRequest(url: url, processors: [.downsample(width: width)])
    }

    @Test("later variants of a JPEG share a decode that covers their size, first frame only or not")
    func laterVariantsShareTheDecodeThatCoversThem() async throws {
        let source = try ManagerFixtures.jpeg(width: 1600, height: 1200)
        try await withManager { harness in
            harness.server.route("/big.jpg", .ok(source, contentType: "image/jpeg"))
            let url = harness.url("/big.jpg")
            // As the proxy asks: its JPEG outputs keep the first frame only, its WebP ones every frame. 1600 px at
            // 1/8 is 200 px, which covers 64, 112 and 160; 1/4 (400 px) covers 240 and 320.
            for (width, format, decodes) in [
                (64, ImageFormat.jpeg, 1), (112, .jpeg, 1), (64, .webp, 1), (160, .webp, 1), (240, .jpeg, 2),
                (320, .webp, 2), (112, .webp, 2),
            ] {
                var request = try Self.request(url, width: width)
                if format == .jpeg { request.options.insert(.decodeFirstFrameOnly) }
                let result = try await harness.manager.encodedImage(for: request, as: ImageOutput(.format(format)))
                #expect(try ImageDecoder.decode(result.encoded.bytes).width == width)
                #expect(harness.manager.statistics.decodes == decodes, "after \(width) \(format)")
            }
            #expect(harness.server.requestCount("/big.jpg") == 1)
        }
    }

    @Test("20 concurrent loads of 10 sizes × 2 formats of one cold source: 1 origin request, 1 decode, 20 encodes")
    func oneFetchOneDecodeForManyVariants() async throws {
        // The two formats of a size share one image load: ten of them reach the decode.
        let barrier = StageBarrier(.decode, count: 10)
        let source = try ManagerFixtures.jpeg(width: 1600, height: 1200)
        try await withManager(configure: { $0.stageObserver = barrier.observer }) { harness in
            harness.server.route("/big.jpg", .ok(source, contentType: "image/jpeg"))
            let url = harness.url("/big.jpg")
            let manager = harness.manager
            let results = try await withThrowingTaskGroup(of: (Int, ImageFormat, EncodedResult).self) { group in
                for width in Self.widths {
                    for format in Self.formats {
                        group.addTask {
                            let result = try await manager.encodedImage(
                                for: try Self.request(url, width: width), as: ImageOutput(.format(format)))
                            return (width, format, result)
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 20)
            for (width, format, result) in results {
                #expect(result.encoded.format == format)
                #expect(result.cacheType == .notCached)
                #expect(result.imageCacheType == CacheType.notCached)
                let image = try ImageDecoder.decode(result.encoded.bytes)
                #expect(image.sourceFormat == format)
                #expect((image.width, image.height) == (width, Int((Double(width) * 0.75).rounded())))
            }
            #expect(harness.server.requestCount("/big.jpg") == 1)
            var statistics = harness.manager.statistics
            #expect(statistics.decodes == 1)
            #expect(statistics.sharedDecodes == 9)
            #expect(statistics.encodes == 20)

            // A later size comes from the decoded source in memory: no fetch, no decode.
            let later = try await harness.manager.encodedImage(
                for: try Self.request(url, width: 120), as: ImageOutput(.format(.png)))
            #expect(later.imageCacheType == .memory)
            #expect(try ImageDecoder.decode(later.encoded.bytes).width == 120)
            // The same variant again is its bytes from memory: nothing encoded.
            let again = try await harness.manager.encodedImage(
                for: try Self.request(url, width: 120), as: ImageOutput(.format(.png)))
            #expect(again.cacheType == .memory)
            #expect(again.encoded.bytes == later.encoded.bytes)
            #expect(again.encoded.digest == later.encoded.digest)
            statistics = harness.manager.statistics
            #expect(statistics.decodes == 1)
            #expect(statistics.encodes == 21)
            #expect(harness.server.requestCount("/big.jpg") == 1)
        }
    }

    @Test("with storesProcessedImagesOnDisk the encoded bytes are kept on disk and served from there")
    func encodedBytesOnDisk() async throws {
        let source = try ManagerFixtures.jpeg(width: 400, height: 300)
        try await withManager(configure: { $0.storesProcessedImagesOnDisk = true }) { harness in
            harness.server.route("/a.jpg", .ok(source, contentType: "image/jpeg"))
            let request = try Self.request(harness.url("/a.jpg"), width: 100)
            var output = ImageOutput(.format(.webp))
            output.options.quality = 60
            var waiting = request
            waiting.options.insert(.waitStoreCache)
            let first = try await harness.manager.encodedImage(for: waiting, as: output)
            #expect(first.diskStore == .stored)
            let key = harness.manager.cacheKey(for: request, as: output)
            #expect(key.contains("output=webp") && key.contains("q=60"))
            #expect(await harness.cache.diskCache!.data(forKey: key) == first.encoded.bytes)

            harness.cache.clearMemory()
            let second = try await harness.manager.encodedImage(for: request, as: output)
            #expect(second.cacheType == .disk)
            #expect(second.encoded.bytes == first.encoded.bytes)
            #expect(second.encoded.format == .webp)
            #expect(harness.manager.statistics.encodes == 1)
            // Another quality is another variant.
            output.options.quality = 70
            #expect(harness.manager.cacheKey(for: request, as: output) != key)
            #expect(harness.server.requestCount("/a.jpg") == 1)
        }
    }

    @Test("a disk hit tells the quality a perceptual search chose, as the encode did")
    func searchedQualityOnDisk() async throws {
        let source = try ManagerFixtures.jpeg(width: 400, height: 300)
        try await withManager(configure: { $0.storesProcessedImagesOnDisk = true }) { harness in
            harness.server.route("/a.jpg", .ok(source, contentType: "image/jpeg"))
            var request = try Self.request(harness.url("/a.jpg"), width: 160)
            request.options.insert(.waitStoreCache)
            var output = ImageOutput(.format(.webp))
            output.quality = .perceptual(target: 60)
            let first = try await harness.manager.encodedImage(for: request, as: output)
            let quality = try #require(first.encoded.quality)
            harness.cache.clearMemory()
            let second = try await harness.manager.encodedImage(for: request, as: output)
            #expect(second.cacheType == .disk && second.encoded.bytes == first.encoded.bytes)
            #expect(second.encoded.quality == quality)
            // A fixed quality searched for nothing: none told, and nothing kept beside its bytes.
            let fixed = ImageOutput(.format(.webp))
            _ = try await harness.manager.encodedImage(for: request, as: fixed)
            harness.cache.clearMemory()
            #expect(try await harness.manager.encodedImage(for: request, as: fixed).encoded.quality == nil)
            let key = harness.manager.cacheKey(for: request, as: fixed)
            #expect(await harness.cache.diskCache!.extendedData(forKey: key) == nil)
        }
    }

    @Test("the source rule keeps the source's format when accepted, else PNG for alpha and JPEG otherwise")
    func sourceFormatRule() throws {
        let opaque = Image(
            pixels: try PixelBuffer(width: 2, height: 2, format: .rgb8, bytes: [UInt8](repeating: 9, count: 12)),
            sourceFormat: .webp)
        let clear = Image(
            pixels: try PixelBuffer(width: 2, height: 2, format: .rgba8, bytes: [UInt8](repeating: 9, count: 16)),
            sourceFormat: .webp)
        #expect(ImageOutput(.source()).format(for: opaque) == .webp)
        #expect(ImageOutput(.source(accepted: [.jpeg, .png, .gif])).format(for: opaque) == .jpeg)
        #expect(ImageOutput(.source(accepted: [.jpeg, .png, .gif])).format(for: clear) == .png)
        #expect(ImageOutput(.format(.gif)).format(for: clear) == .gif)
    }

    @Test("a caller that leaves gets cancelled at once; the others still get the encode")
    func leavingWaiterDoesNotDisturbOthers() async throws {
        let gate = StageGate(.download)
        let source = try ManagerFixtures.jpeg(width: 200, height: 150)
        try await withManager(configure: { $0.stageObserver = gate.observer }) { harness in
            harness.server.route("/a.jpg", .ok(source, contentType: "image/jpeg"))
            let request = try Self.request(harness.url("/a.jpg"), width: 50)
            let output = ImageOutput(.format(.png))
            let manager = harness.manager
            let leaving = Task { try await manager.encodedImage(for: request, as: output) }
            let staying = Task { try await manager.encodedImage(for: request, as: output) }
            await gate.reached()
            leaving.cancel()
            await #expect(throws: ImageError.self) { try await leaving.value }
            gate.release()
            let result = try await staying.value
            #expect(try ImageDecoder.decode(result.encoded.bytes).width == 50)
            #expect(harness.manager.statistics.encodes == 1)
        }
    }

    @Test("the last caller leaving abandons the encode unless it is detached; a later load starts afresh")
    func lastWaiterLeavingAbandonsTheWork() async throws {
        for detached in [false, true] {
            let gate = StageGate(.download)
            let source = try ManagerFixtures.jpeg(width: 200, height: 150)
            try await withManager(configure: { $0.stageObserver = gate.observer }) { harness in
                harness.server.route("/a.jpg", .ok(source, contentType: "image/jpeg"))
                var made = try Self.request(harness.url("/a.jpg"), width: 50)
                if detached { made.options.insert(.detached) }
                let request = made
                let output = ImageOutput(.format(.png))
                let manager = harness.manager
                let leaving = Task { try await manager.encodedImage(for: request, as: output) }
                await gate.reached()
                leaving.cancel()
                await #expect(throws: ImageError.self) { try await leaving.value }
                gate.release()
                await harness.settle()
                // Detached, the encode ran to its end and its bytes are in memory; else nothing was encoded.
                #expect(harness.manager.statistics.encodes == (detached ? 1 : 0))
                let again = try await manager.encodedImage(for: request, as: output)
                #expect(again.cacheType == (detached ? .memory : CacheType.notCached))
                #expect(try ImageDecoder.decode(again.encoded.bytes).width == 50)
            }
        }
    }

    @Test("shutdown with encoded loads under way ends each exactly once, cancelled")
    func shutdownCancelsEncodedLoads() async throws {
        let gate = StageGate(.download)
        let source = try ManagerFixtures.jpeg(width: 200, height: 150)
        try await withManager(configure: { $0.stageObserver = gate.observer }) { harness in
            harness.server.route("/a.jpg", .ok(source, contentType: "image/jpeg"))
            let url = harness.url("/a.jpg")
            let manager = harness.manager
            let loads = (0..<4).map { index in
                Task { () -> Result<EncodedResult, ImageError> in
                    do throws(ImageError) {
                        return .success(
                            try await manager.encodedImage(
                                for: try! Self.request(url, width: 40 + index), as: ImageOutput(.format(.png))))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            await gate.reached()
            let shutdown = Task { await manager.shutdown() }
            gate.release()
            await shutdown.value
            for load in loads {
                guard case .failure(.cancelled) = await load.value else {
                    Issue.record("a load under way at shutdown was not cancelled")
                    continue
                }
            }
            let after = try Self.request(url, width: 30)
            do throws(ImageError) {
                _ = try await harness.manager.encodedImage(for: after, as: ImageOutput(.format(.png)))
                Issue.record("a load after shutdown ran")
            } catch {
                guard case .cancelled = error else { Issue.record("\(error)"); return }
            }
        }
    }
}
