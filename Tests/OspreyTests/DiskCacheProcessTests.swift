import Foundation
import OspreyTesting
import Testing

@testable import Osprey

/// Two real processes (DiskCacheWorker) writing, reading and cleaning one cache directory at the same time.
@Suite struct DiskCacheProcessTests {
    /// The workload's entries are 1–4 KB: with this limit about half are kept in the index and half in files.
    static let inlineSizeLimit = 2_560

    static var workerPath: String {
        get throws {
            let candidates = [Bundle.main.bundleURL, URL(fileURLWithPath: CommandLine.arguments[0])]
                .map { $0.deletingLastPathComponent().appendingPathComponent("DiskCacheWorker").path }
            return try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0) })
        }
    }

    /// Runs `workers` workers (two by default) at once on `base` and waits for them, on a dispatch thread (waiting for a process blocks, and
    /// must not hold one of Swift's few cooperative threads); returns their exit statuses and output.
    static func runWorkers(
        base: String, count: Int, sizeLimit: Int, workers: Int = 2
    ) async throws -> [(status: Int32, output: String)] {
        let path = try workerPath
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    with: Result {
                        try runWorkersBlocking(path, base: base, count: count, sizeLimit: sizeLimit, workers: workers)
                    })
            }
        }
    }

    private static func runWorkersBlocking(
        _ workerPath: String, base: String, count: Int, sizeLimit: Int, workers: Int
    ) throws -> [(status: Int32, output: String)] {
        // Every worker opens the cache at the same instant, a moment after the last one is spawned.
        let startAt = Date().timeIntervalSince1970 + 0.05 * Double(workers) + 0.1
        let outputs = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-workers-\(UUID())").path
        try FileManager.default.createDirectory(atPath: outputs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: outputs) }
        let environment = ProcessInfo.processInfo.environment.merging(["START_AT": "\(startAt)"]) { $1 }
        let processes = try (0..<workers).map { worker -> (pid_t, String) in
            let output = outputs + "/\(worker)"
            let pid = try ChildProcess.spawn(
                workerPath, [base, "shared", "\(worker)", "\(count)", "\(sizeLimit)", "\(inlineSizeLimit)"],
                environment: environment, output: .file(output), error: .descriptor(1))
            return (pid, output)
        }
        return processes.map { pid, output in
            let outcome = ChildProcess.wait(pid)
            let text = String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self)
            return (outcome.status, text)
        }
    }

    func openCache(base: String, sizeLimit: Int) -> DiskCache {
        var configuration = DiskCache.Configuration(namespace: "shared")
        configuration.baseDirectory = base
        configuration.sizeLimit = sizeLimit
        configuration.cleaningInterval = nil
        configuration.inlineSizeLimit = Self.inlineSizeLimit
        return DiskCache(configuration: configuration)
    }

    @Test("processes creating one cache at the same instant all store to disk, none falls back to memory")
    func simultaneousCreation() async throws {
        // SQLite may answer "busy" at once, without waiting, to a process opening an index that another is creating
        for round in 0..<10 {
            let temporary = TemporaryDirectory()
            let runs = try await Self.runWorkers(base: temporary.path, count: 3, sizeLimit: 1 << 30, workers: 4)
            for run in runs {
                #expect(run.status == 0 && !run.output.contains("memory only"), "round \(round): \(run.output)")
            }
            #expect(await openCache(base: temporary.path, sizeLimit: 1 << 30).totals().count == 12, "round \(round)")
        }
    }

    @Test("two processes storing and cleaning under the limit lose nothing")
    func nothingLost() async throws {
        // Given two processes each storing 150 entries into one directory, cleaning as they go
        let temporary = TemporaryDirectory()
        let runs = try await Self.runWorkers(base: temporary.path, count: 150, sizeLimit: 1 << 30)

        // Then both succeeded, and every entry of both is there, byte for byte, with exact totals
        for run in runs { #expect(run.status == 0, "\(run.output)") }
        let cache = openCache(base: temporary.path, sizeLimit: 1 << 30)
        var expectedSize = 0
        for worker in 0..<2 {
            for index in 0..<150 {
                let expected = CacheWorkload.content(worker: worker, index: index)
                expectedSize += expected.count
                #expect(
                    await cache.data(forKey: CacheWorkload.key(worker: worker, index: index)) == expected,
                    "w\(worker)-\(index)")
            }
        }
        #expect(await cache.totals() == (expectedSize, 300))
    }

    @Test("two processes storing and evicting keep every entry whole and the index true to the directory")
    func evictionStaysConsistent() async throws {
        // Given two processes storing 200 entries each (about 1 MB) under a 150 KB limit, cleaning as they go
        let temporary = TemporaryDirectory()
        let limit = 150_000
        let runs = try await Self.runWorkers(base: temporary.path, count: 200, sizeLimit: limit)

        // Then no read in either process returned wrong bytes
        for run in runs { #expect(run.status == 0, "\(run.output)") }

        // And after a last cleaning the cache is under its limit, every entry left is whole, the index lists exactly
        // the entry files on disk, with their sizes, and its packs are the pack files on disk, holding the entries
        // kept in them
        let cache = openCache(base: temporary.path, sizeLimit: limit)
        await cache.clean()
        let totals = await cache.totals()
        #expect(totals.size <= limit)
        #expect(totals.count > 0)
        var present = 0
        for worker in 0..<2 {
            for index in 0..<200 {
                if let bytes = await cache.data(forKey: CacheWorkload.key(worker: worker, index: index)) {
                    #expect(bytes == CacheWorkload.content(worker: worker, index: index), "w\(worker)-\(index)")
                    present += 1
                }
            }
        }
        #expect(present == totals.count)
        let directory = temporary.path + "/osprey/shared"
        let names = FileSystemProbe.names(in: directory)
        let files = names.filter { !$0.hasPrefix("index.sqlite") && !$0.hasPrefix("pack-") }
        let entries = await cache.allEntries()
        let inFiles = entries.filter { !$0.isInIndex }
        #expect(Set(files) == Set(inFiles.map(\.fileName)))
        let onDisk = try files.reduce(0) { total, name in
            total + (try FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size] as? Int ?? 0)
        }
        #expect(onDisk == inFiles.reduce(0) { $0 + $1.size })
        let inPacks = entries.filter(\.isInIndex)
        #expect(!inFiles.isEmpty && !inPacks.isEmpty)
        let packs = try #require(cache.withIndex { index throws(SQLiteDatabase.Error) in try index.packs() })
        #expect(packs.reduce(0) { $0 + $1.live } == inPacks.reduce(0) { $0 + $1.size })
        #expect(Set(names.filter { $0.hasPrefix("pack-") }) == Set(packs.map { "pack-\($0.id)" }))
    }
}
