import Foundation
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

/// The library as a user of Kingfisher, Nuke or SDWebImage meets it: public products only, no `@testable`.
@Suite struct PublicAPITests {
    @Test("one CacheType, without .none: made now, then from memory, then from disk; a failure is none of them")
    func oneCacheVocabulary() async throws {
        let directory = TemporaryDirectory()
        try await withOriginServer { server in
            server.route("/a.png", .ok(SyntheticImages.png(width: 8, height: 6), contentType: "image/png"))
            server.route("/missing.png", .status(404))
            var configuration = ImageCache.Configuration(namespace: "api")
            configuration.disk.baseDirectory = directory.path
            let cache = ImageCache(configuration: configuration)
            try await withImageManager(cache: cache) { manager in
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
            try await withImageDownloader { downloader in
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
