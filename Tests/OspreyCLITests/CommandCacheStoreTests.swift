import ArgumentParser
import Foundation
import Osprey
import OspreyTesting
import Synchronization
import Testing

@testable import OspreyCLI

/// `fetch` and `prefetch` reach the cache through the library's `DataCaching` alone: run in-process with a store of
/// the test's own in place of the disk cache, they fill it, answer from it and close it, and leave the cache
/// directory empty.
@Suite("commands on a plugged-in store", .timeLimit(.minutes(2)))
struct CommandCacheStoreTests {
    @Test("prefetch fills the store, fetch answers from it without the origin, and each run closes it")
    func commandsUseAPluggedInStore() async throws {
        // An https origin, as production's are, trusted with --ca-file.
        try await withOriginServer(testDataDirectory: nil, tls: true) { origin in
            try await withTemporaryDirectory { directory in try await run(origin: origin, in: directory) }
        }
    }

    private func run(origin: OriginServer, in directory: String) async throws {
        let jpeg = try TaggedImages.jpeg()
        origin.route("/a.jpg", .ok(jpeg, contentType: "image/jpeg"))
        let list = directory + "/urls.txt"
        try Data((origin.url("/a.jpg") + "\n").utf8).write(to: URL(fileURLWithPath: list))
        let cacheDirectory = directory + "/cache"
        let output = directory + "/out"
        let store = DictionaryDataCache()
        let authority = directory + "/origin-ca.pem"
        try TestCertificate.certificatePEM.write(toFile: authority, atomically: true, encoding: .utf8)

        // When prefetch runs on the store
        let prefetch = try PrefetchCommand.parse([
            "-i", list, "--cache-dir", cacheDirectory, "--ca-file", authority, "--quiet",
        ])
        try await LoadingOptions.$dataStore.withValue(store) { try await prefetch.run() }
        // Then the image's bytes are in the store, once, and the run closed it
        let key = origin.url("/a.jpg")
        #expect(store.keys == [key])
        #expect(store.bytes(forKey: key) == jpeg)
        #expect(store.closeCount.load(ordering: .relaxed) == 1)

        // When fetch runs on the same store
        let fetch = try FetchCommand.parse([
            origin.url("/a.jpg"), "-o", output, "--cache-dir", cacheDirectory, "--ca-file", authority,
        ])
        try await LoadingOptions.$dataStore.withValue(store) { try await fetch.run() }
        // Then the file written is the stored bytes, the origin was asked once in all, and nothing was written to
        // the cache directory
        let written = try FileManager.default.contentsOfDirectory(atPath: output)
        #expect(written.count == 1)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: output + "/" + written[0])))
        #expect(bytes == jpeg)
        #expect(origin.requestCount("/a.jpg") == 1)
        #expect(store.readsByKey[key] == 1)
        #expect(store.closeCount.load(ordering: .relaxed) == 2)
        #expect(!FileManager.default.fileExists(atPath: cacheDirectory))
    }
}
