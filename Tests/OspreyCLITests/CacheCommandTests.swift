import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

/// `osprey cache` on a cache that `osprey fetch` filled.
@Suite("osprey cache", .timeLimit(.minutes(2)))
struct CacheCommandTests {
    @Test("info, ls, clean and clear report and change what is on disk")
    func infoListCleanClear() async throws {
        try await withOriginServer { server in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-cache-\(UUID())").path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let small = SyntheticImages.png(width: 4, height: 4)
            let large = SyntheticImages.png(width: 40, height: 40)
            server.route("/s.png", .ok(small))
            server.route("/l.png", .ok(large))
            let cache = ["--cache-dir", directory + "/cache"]
            let fetch = try await OspreyBinary.run(
                ["fetch", "-o", directory + "/out"] + cache + [server.url("/s.png"), server.url("/l.png")])
            #expect(fetch.status == 0)

            let info = try await OspreyBinary.run(["cache", "info", "--json"] + cache)
            #expect(info.status == 0)
            #expect(
                info.standardOutput
                    == #"{"path":"\#(directory)/cache/osprey/default","count":2,"bytes":\#(small.count + large.count),"limitBytes":1073741824,"maxAgeSeconds":604800}"#
                    + "\n")
            let text = try await OspreyBinary.run(["cache", "info"] + cache)
            #expect(text.standardOutput.contains("entries: 2\n"))

            let listing = try await OspreyBinary.run(["cache", "ls", "--json"] + cache)
            let entries = try listing.standardOutput.split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
            #expect(Set(entries.compactMap { $0["key"] as? String }) == [server.url("/s.png"), server.url("/l.png")])
            #expect(Set(entries.compactMap { $0["bytes"] as? Int }) == [small.count, large.count])
            #expect(entries.allSatisfy { ($0["lastAccess"] as? String)?.hasSuffix("Z") == true })
            // Both are small enough to be kept inside the index: no file of their own
            #expect(entries.allSatisfy { $0["stored"] as? String == "index" && $0["file"] == nil })

            // Limits as they are: nothing to remove. Over a 100-byte limit: the least recently used go until the
            // cache is under half of it.
            #expect(
                try await OspreyBinary.run(["cache", "clean", "--json"] + cache).standardOutput
                    == #"{"removed":0,"bytes":0}"#
                    + "\n")
            let cleaned = try await OspreyBinary.run(["cache", "clean", "--size-limit", "100"] + cache)
            #expect(cleaned.standardOutput == "removed 2 entries (\(small.count + large.count) bytes)\n")

            _ = try await OspreyBinary.run(
                ["fetch", "--force", "-o", directory + "/out"] + cache + [server.url("/s.png")])
            let cleared = try await OspreyBinary.run(["cache", "clear", "--json"] + cache)
            #expect(cleared.standardOutput == #"{"removed":1,"bytes":\#(small.count)}"# + "\n")
            #expect(try await OspreyBinary.run(["cache", "ls"] + cache).standardOutput.isEmpty)
            #expect(try await OspreyBinary.run(["cache", "clean", "--max-age", "-1"] + cache).status == 2)
        }
    }

    @Test("a cache that cannot be opened fails each command, saying why, rather than report it empty")
    func unusableCacheFails() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-cache-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // An index that is not SQLite: a read-only cache does not rebuild it.
        let cacheDirectory = directory + "/damaged/osprey/default"
        try FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: 4096).write(to: URL(fileURLWithPath: cacheDirectory + "/index.sqlite"))
        for command in ["info", "ls"] {
            let run = try await OspreyBinary.run(["cache", command, "--cache-dir", directory + "/damaged"])
            #expect(run.status == 1 && run.standardOutput.isEmpty, "cache \(command): \(run.standardOutput)")
            #expect(run.standardError.contains("disk cache index cannot be read"), "\(run.standardError)")
            #expect(run.standardError.contains("osprey: cannot read the disk cache at \(cacheDirectory)"))
        }
        // A file where the directory should be: nothing can be cleaned or cleared.
        try Data("a file".utf8).write(to: URL(fileURLWithPath: directory + "/file"))
        for command in ["clean", "clear"] {
            let run = try await OspreyBinary.run(["cache", command, "--cache-dir", directory + "/file"])
            #expect(run.status == 1 && run.standardOutput.isEmpty, "cache \(command): \(run.standardOutput)")
            #expect(run.standardError.contains("osprey: cannot use the disk cache at"), "\(run.standardError)")
        }
        // No cache there yet: an empty one, not an error.
        let fresh = try await OspreyBinary.run(["cache", "info", "--cache-dir", directory + "/none"])
        #expect(fresh.status == 0 && fresh.standardOutput.contains("entries: 0\n"))
    }

    @Test("info and ls read a cache in a directory that cannot be written, and fetch serves hits from it")
    func readOnlyDirectory() async throws {
        try await withOriginServer { server in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-cache-\(UUID())").path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // Given 40 entries, small ones kept in the index and larger ones as files
            var urls: [String] = []
            for index in 0..<40 {
                let side = index % 2 == 0 ? 4 + index : 200 + index
                let rgba = (0..<(side * side * 4)).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ index) }
                server.route("/\(index).png", .ok(SyntheticImages.png(width: side, height: side, rgba: rgba)))
                urls.append(server.url("/\(index).png"))
            }
            let base = directory + "/cache"
            let fill = try await OspreyBinary.run(["fetch", "-o", directory + "/out", "--cache-dir", base] + urls)
            #expect(fill.status == 0)

            // When the directory can no longer be written: a read-only bind mount (as root, for whom permissions
            // are no obstacle), else its permissions taken away
            let readOnly = directory + "/read-only"
            try FileManager.default.createDirectory(atPath: readOnly, withIntermediateDirectories: true)
            var mounted = false
            if geteuid() == 0 {
                try #require(mount(base, readOnly, nil, UInt(MS_BIND), nil) == 0, "bind: errno \(errno)")
                mounted = true
                try #require(
                    mount(nil, readOnly, nil, UInt(MS_REMOUNT | MS_BIND | MS_RDONLY), nil) == 0,
                    "remount read-only: errno \(errno)")
            } else {
                try FileManager.default.removeItem(atPath: readOnly)
                try FileManager.default.moveItem(atPath: base, toPath: readOnly)
                chmod(readOnly + "/osprey/default", 0o555)
            }
            defer {
                if mounted { umount(readOnly) } else { chmod(readOnly + "/osprey/default", 0o755) }
            }
            let cache = ["--cache-dir", readOnly]

            // Then info and ls show all 40
            let info = try await OspreyBinary.run(["cache", "info", "--json"] + cache)
            #expect(info.status == 0)
            #expect(info.standardOutput.contains(#""count":40,"#), "\(info.standardOutput) \(info.standardError)")
            let listing = try await OspreyBinary.run(["cache", "ls", "--json"] + cache)
            #expect(listing.standardOutput.split(separator: "\n").count == 40)
            // And fetch serves them from disk without the origin
            let counted = server.requestCount()
            let hits = try await OspreyBinary.run(
                ["fetch", "--json", "--force", "-o", directory + "/again"] + cache + urls)
            #expect(hits.status == 0)
            #expect(hits.standardOutput.split(separator: "\n").allSatisfy { $0.contains(#""source":"disk""#) })
            #expect(server.requestCount() == counted)
        }
    }

    @Test("info on a cache directory that does not exist reports an empty cache and creates nothing")
    func infoCreatesNothing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-cache-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let info = try await OspreyBinary.run(["cache", "info", "--json", "--cache-dir", directory])
        #expect(info.status == 0 && info.standardOutput.contains(#""count":0,"bytes":0"#))
        let listing = try await OspreyBinary.run(["cache", "ls", "--cache-dir", directory])
        #expect(listing.status == 0 && listing.standardOutput.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: directory))
    }
}
