import Foundation
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// Data-only loads: the bytes as served, checked by their header and stored, never decoded.
@Suite("ImageManager data loads", .timeLimit(.minutes(2)))
struct ImageManagerDataTests {
    @Test("a data load downloads, checks the header and stores the bytes without decoding; the next is a disk hit")
    func downloadsAndStoresWithoutDecoding() async throws {
        let stages = Mutex<[ImageManager.Stage]>([])
        try await withManager(configure: { $0.stageObserver = { stage, _ in stages.withLock { $0.append(stage) } } }) {
            harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            let url = harness.url("/a.png")
            let first = try await harness.manager.data(for: try ImageRequest(url: url))
            #expect(first.data == ManagerFixtures.png)
            #expect(first.cacheType == .notCached)
            #expect(first.diskStore == .stored)
            #expect(first.header.format == .png)
            #expect(first.header.width == 8)
            #expect(
                await harness.cache.diskCache!.data(forKey: harness.manager.cacheKey(for: url)) == ManagerFixtures.png)

            let second = try await harness.manager.data(for: try ImageRequest(url: url))
            #expect(second.cacheType == .disk)
            #expect(second.data == ManagerFixtures.png)
            #expect(second.diskStore == nil)
            #expect(harness.server.requestCount("/a.png") == 1)
            // Nothing was decoded, and memory holds no image.
            #expect(stages.withLock { $0 }.isEmpty)
            #expect(harness.cache.imageInMemory(forKey: harness.manager.cacheKey(for: url)) == nil)
            // An image load then decodes from the disk.
            #expect(try await harness.manager.image(for: url).cacheType == .disk)
        }
    }

    @Test("bytes that are not an image fail from their header, are not stored, and the URL is remembered")
    func notAnImage() async throws {
        try await withManager { harness in
            harness.server.route("/page.png", .ok(Array("<html>not an image</html>".utf8), contentType: "text/html"))
            let url = harness.url("/page.png")
            do throws(ImageError) {
                _ = try await harness.manager.data(for: try! ImageRequest(url: url))
                Issue.record("a page loaded as an image")
            } catch {
                guard case .decodingFailed(.unsupportedFormat) = error else {
                    Issue.record("\(error)")
                    return
                }
            }
            #expect(!(await harness.manager.isCachedOnDisk(url)))
            do throws(ImageError) {
                _ = try await harness.manager.data(for: try! ImageRequest(url: url))
                Issue.record("a remembered failure loaded again")
            } catch {
                guard case .previouslyFailed = error else {
                    Issue.record("\(error)")
                    return
                }
            }
            #expect(harness.server.requestCount("/page.png") == 1)
        }
    }

    @Test("cache options: fromCacheOnly misses, cacheMemoryOnly stores nothing, no-store is reported")
    func cacheOptions() async throws {
        try await withManager { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            harness.server.route(
                "/private.png", OriginResponse.ok(ManagerFixtures.png).header("Cache-Control", "no-store"))
            let url = harness.url("/a.png")
            do throws(ImageError) {
                _ = try await harness.manager.data(for: try! ImageRequest(url: url, options: [.fromCacheOnly]))
                Issue.record("a cache-only load downloaded")
            } catch {
                guard case .notCached = error else {
                    Issue.record("\(error)")
                    return
                }
            }
            let memoryOnly = try await harness.manager.data(
                for: try ImageRequest(url: url, options: [.cacheMemoryOnly]))
            #expect(memoryOnly.diskStore == nil)
            #expect(!(await harness.manager.isCachedOnDisk(url)))
            let forbidden = try await harness.manager.data(for: try ImageRequest(url: harness.url("/private.png")))
            #expect(forbidden.diskStore == .forbiddenByOrigin)
            #expect(forbidden.storagePermission == StoragePermission.none)
            #expect(!(await harness.manager.isCachedOnDisk(harness.url("/private.png"))))
        }
    }
}
