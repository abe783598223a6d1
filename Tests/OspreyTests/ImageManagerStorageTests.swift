import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

@testable import Osprey

/// What an origin's `Cache-Control` lets the manager keep, and what a load reports of its disk write.
@Suite("ImageManager storage", .timeLimit(.minutes(2)))
struct ImageManagerStorageTests {
    static func png(cacheControl: String) -> OriginResponse {
        OriginResponse(
            status: 200, headers: [("Content-Type", "image/png"), ("Cache-Control", cacheControl)],
            body: ManagerFixtures.png)
    }

    @Test("no-store: kept in memory for this process, never written to disk")
    func noStoreStaysOffDisk() async throws {
        try await withManager { harness in
            // Given an origin that answers with no-store (among other directives, in any case)
            harness.server.route("/secret.png", Self.png(cacheControl: "max-age=60, No-Store"))
            let url = harness.url("/secret.png")

            // When it is loaded, waiting for the store
            let first = try await harness.manager.image(for: url, options: [.waitStoreCache])

            // Then the load says so, and the disk has nothing
            #expect(first.storagePermission == StoragePermission.none)
            #expect(first.diskStore == .forbiddenByOrigin)
            #expect(await !harness.manager.isCachedOnDisk(url))
            #expect(await harness.cache.diskCache!.totals().count == 0)
            // Memory keeps it: the next load does not reach the origin
            #expect(try await harness.manager.image(for: url).cacheType == .memory)
            harness.cache.clearMemory()
            #expect(try await harness.manager.image(for: url).cacheType == .notCached)
            #expect(harness.server.requestCount("/secret.png") == 2)
        }
    }

    @Test("private: cached as usual by a manager that serves one user")
    func privateIsCachedByAPrivateCache() async throws {
        try await withManager { harness in
            harness.server.route("/mine.png", Self.png(cacheControl: "private, max-age=60"))
            let url = harness.url("/mine.png")
            let result = try await harness.manager.image(for: url, options: [.waitStoreCache])
            #expect(result.storagePermission == .privateCacheOnly)
            #expect(result.diskStore == .stored)
            #expect(await harness.manager.isCachedOnDisk(url))
        }
    }

    @Test("a shared cache keeps neither private nor no-store images, in memory or on disk")
    func aSharedCacheKeepsNeither() async throws {
        try await withManager(configure: { $0.isSharedCache = true }) { harness in
            harness.server.route("/private.png", Self.png(cacheControl: "private"))
            harness.server.route("/nostore.png", Self.png(cacheControl: "no-store"))
            harness.server.route("/public.png", Self.png(cacheControl: "public, max-age=60"))
            for path in ["/private.png", "/nostore.png", "/public.png"] {
                for _ in 0..<2 {
                    _ = try await harness.manager.image(for: harness.url(path), options: [.waitStoreCache])
                }
            }
            #expect(harness.server.requestCount("/private.png") == 2)
            #expect(harness.server.requestCount("/nostore.png") == 2)
            #expect(harness.server.requestCount("/public.png") == 1)
            #expect(await !harness.manager.isCachedOnDisk(harness.url("/private.png")))
            #expect(await harness.manager.isCachedOnDisk(harness.url("/public.png")))
        }
    }

    @Test("a copy stored before the origin said no-store is removed when a refresh says it")
    func aRefreshThatSaysNoStoreRemovesTheCopy() async throws {
        try await withManager { harness in
            let url = harness.url("/changed.png")
            harness.server.route("/changed.png", .ok(ManagerFixtures.png))
            _ = try await harness.manager.image(for: url, options: [.waitStoreCache])
            #expect(await harness.manager.isCachedOnDisk(url))

            harness.server.route("/changed.png", Self.png(cacheControl: "no-store"))
            _ = try await harness.manager.image(for: url, options: [.refreshCached, .waitStoreCache])
            #expect(await !harness.manager.isCachedOnDisk(url))
        }
    }

    @Test("a store the disk cache could not make is reported, and the prefetcher counts it as not stored")
    func aFailedStoreIsReported() async throws {
        // Given a cache whose directory cannot be made: its parent is a regular file
        let blocker = TemporaryDirectory()
        let file = blocker.path + "/not-a-directory"
        #expect(FileManager.default.createFile(atPath: file, contents: Data([1])))
        try await withManager(cache: { $0.disk.baseDirectory = file }) { harness in
            #expect(harness.cache.diskCache!.isMemoryOnly)
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            harness.server.route("/b.png", .ok(ManagerFixtures.png))
            harness.server.route("/c.png", .ok(ManagerFixtures.png))

            // When a load waits for its store
            let result = try await harness.manager.image(for: harness.url("/a.png"), options: [.waitStoreCache])
            // Then it says the write failed
            guard case .failed(.cacheWriteFailed)? = result.diskStore else {
                Issue.record("expected a failed store, got \(String(describing: result.diskStore))")
                return
            }
            // And a prefetch of the others counts them as loaded but not stored
            let prefetcher = ImagePrefetcher(manager: harness.manager)
            let summary = await prefetcher.prefetch([harness.url("/b.png"), harness.url("/c.png")])
            #expect(summary.notStored == 2)
            #expect(summary.finished == 0 && summary.failed == 0)
            #expect(summary.completed == 2)
        }
    }
}
