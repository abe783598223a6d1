import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Osprey
import OspreyTesting
import Synchronization
import Testing

@testable import OspreyServer

/// The proxy keeps what it stores in the store it is given (`ServerConfiguration.dataCache`), through the library's
/// `DataCaching` alone: a dictionary of the test's own stands for the disk cache.
@Suite("The proxy's plugged-in store", .timeLimit(.minutes(2)))
struct ProxyCacheStoreTests {
    @Test("a cold /img reads the store once per key and keeps source and result there; a later proxy answers from it")
    func aPluggedInStoreServesTheProxy() async throws {
        // An https origin, as production's are, trusted through the test's own authority.
        try await withOriginServer(testDataDirectory: nil, tls: true) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            let store = DictionaryDataCache()
            let uri = imageURI([("url", origin.url("/photo.jpg")), ("w", "50")])
            try await withTemporaryDirectory { directory in
                var configuration = testConfiguration(cacheDirectory: directory)
                configuration.dataCache = store
                let authority = directory + "/origin-ca.pem"
                try TestCertificate.certificatePEM.write(toFile: authority, atomically: true, encoding: .utf8)
                configuration.certificateAuthorities = try CertificateAuthorities(pemFile: authority)
                var logger = Logger(label: "osprey.serve.test")
                logger.logLevel = .critical

                // When a first proxy answers a cold request (and shuts down, its writes done)
                let answered = Mutex<[UInt8]>([])
                try await buildApplication(configuration: configuration, logger: logger).test(.router) { client in
                    let response = try await client.execute(uri: uri, method: .get)
                    #expect(response.status == .ok)
                    answered.withLock { $0 = Array(response.body.readableBytesView) }
                }
                let rendered = answered.withLock { $0 }
                // Then the store was asked for the result and the source once each, and holds both: nothing went to
                // the cache directory
                let reads = store.readsByKey
                #expect(reads.count == 2)
                #expect(reads.values.allSatisfy { $0 == 1 })
                #expect(store.keys == Set(reads.keys))
                #expect(store.allEntries.values.contains { $0.bytes == rendered })
                let files = try FileManager.default.subpathsOfDirectory(atPath: directory).filter {
                    $0 != "origin-ca.pem"
                }
                #expect(files.isEmpty, "\(files)")
                #expect(origin.requestCount("/photo.jpg") == 1)

                // When a second proxy on the same store gets the same request
                try await buildApplication(configuration: configuration, logger: logger).test(.router) { client in
                    let response = try await client.execute(uri: uri, method: .get)
                    #expect(response.status == .ok)
                    #expect(Array(response.body.readableBytesView) == rendered)
                    // Then /health counts the store's entries, as the store tells them
                    let health = try await client.execute(uri: "/health", method: .get).json()
                    let cache = try #require(health["cache"] as? [String: Int])
                    let totals = (store.allEntries.count, store.allEntries.values.reduce(0) { $0 + $1.bytes.count })
                    #expect(cache["entriesOnDisk"] == totals.0)
                    #expect(cache["entriesOnDiskBytes"] == totals.1)
                }
                // Then it answered from the stored result: one more read of it, none of the source, no origin request
                #expect(store.readCount == 3)
                #expect(origin.requestCount("/photo.jpg") == 1)
                #expect(store.closeCount.load(ordering: .relaxed) == 0)
            }
        }
    }
}
