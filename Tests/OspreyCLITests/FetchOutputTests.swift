import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

/// What `osprey fetch` leaves on disk: whole files only, even when killed; what it says of the disk cache; and that
/// `--memory-only` writes nothing there.
@Suite("osprey fetch: outputs and the cache", .timeLimit(.minutes(3)))
struct FetchOutputTests {
    func objects(_ run: OspreyBinary.Run) throws -> [[String: Any]] {
        try run.standardOutput.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    /// A PNG of noise (it does not compress): `side` × `side`, different for each `seed`.
    static func noise(side: Int, seed: UInt64) -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        let rgba = (0..<(side * side * 4)).map { _ -> UInt8 in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
        return SyntheticImages.png(width: side, height: side, rgba: rgba)
    }

    @Test("--json says whether each image is in the disk cache, and why not when it could not be stored")
    func cachedOrNot() async throws {
        try await withOriginServer { server in
            try await withDirectory { directory in
                let png = SyntheticImages.png(width: 8, height: 8)
                server.route("/a.png", .ok(png))
                server.route(
                    "/secret.png",
                    OriginResponse(
                        status: 200, headers: [("Content-Type", "image/png"), ("Cache-Control", "no-store")], body: png)
                )
                let cache = ["--cache-dir", directory + "/cache"]
                let run = try await OspreyBinary.run(
                    ["fetch", "--json", "-o", directory + "/out"] + cache + [
                        server.url("/a.png"), server.url("/secret.png"),
                    ])
                #expect(run.status == 0)
                let results = try objects(run)
                let stored = try #require(results.first { $0["url"] as? String == server.url("/a.png") })
                #expect(stored["cached"] as? Bool == true && stored["cacheError"] == nil)
                let secret = try #require(results.first { $0["url"] as? String == server.url("/secret.png") })
                #expect(secret["cached"] as? Bool == false)
                #expect((secret["cacheError"] as? String)?.contains("no-store") == true)

                // A cache directory that cannot be made: the image is written out, and the line says it is not cached.
                #expect(FileManager.default.createFile(atPath: directory + "/file", contents: Data([1])))
                let unusable = try await OspreyBinary.run([
                    "fetch", "--json", "--force", "-o", directory + "/out", "--cache-dir", directory + "/file/cache",
                    server.url("/a.png"),
                ])
                #expect(unusable.status == 0)
                let line = try #require(try objects(unusable).first)
                #expect(line["status"] as? String == "ok" && line["cached"] as? Bool == false)
                #expect((line["cacheError"] as? String)?.contains("cannot cache") == true)
                let text = try await OspreyBinary.run([
                    "fetch", "--force", "-o", directory + "/out", "--cache-dir", directory + "/file/cache",
                    server.url("/a.png"),
                ])
                #expect(text.standardOutput.contains("(not cached: cannot cache"))
            }
        }
    }

    @Test("--memory-only and --no-cache create nothing in the cache directory")
    func memoryOnlyWritesNothing() async throws {
        try await withOriginServer { server in
            try await withDirectory { directory in
                server.route("/a.png", .ok(SyntheticImages.png(width: 8, height: 8)))
                for flag in ["--memory-only", "--no-cache"] {
                    let cacheDirectory = directory + "/cache" + flag
                    let run = try await OspreyBinary.run(
                        ["fetch", flag, "--force", "-o", directory + "/out", server.url("/a.png")],
                        environment: ["OSPREY_CACHE_DIR": cacheDirectory])
                    #expect(run.status == 0, "\(run.standardError)")
                    #expect(!FileManager.default.fileExists(atPath: cacheDirectory), "\(flag)")
                }
                // Over an existing cache, --memory-only reads it and changes nothing in it.
                let cacheDirectory = directory + "/filled"
                let fill = try await OspreyBinary.run(
                    ["fetch", "--force", "-o", directory + "/out", "--cache-dir", cacheDirectory, server.url("/a.png")])
                #expect(fill.status == 0)
                let before = try snapshot(of: cacheDirectory)
                let hit = try await OspreyBinary.run([
                    "fetch", "--json", "--memory-only", "--force", "-o", directory + "/out", "--cache-dir",
                    cacheDirectory, server.url("/a.png"),
                ])
                #expect(try objects(hit).first?["source"] as? String == "disk")
                let after = try snapshot(of: cacheDirectory)
                let changed = Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }
                #expect(
                    changed.isEmpty, "\(changed.sorted().map { "\($0): \(before[$0] ?? []) -> \(after[$0] ?? [])" })")
            }
        }
    }

    /// Every file under `directory` with its size and modification time.
    func snapshot(of directory: String) throws -> [String: [Int]] {
        var files: [String: [Int]] = [:]
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let name = enumerator?.nextObject() as? String {
            let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/" + name)
            let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            files[name] = [(attributes[.size] as? Int) ?? -1, Int(modified * 1_000_000)]
        }
        return files
    }

    @Test("killed with SIGKILL while writing, fetch leaves only whole files; the next run clears leftovers")
    func killedRunsLeaveOnlyWholeFiles() async throws {
        try await withOriginServer { server in
            try await withDirectory { directory in
                // 30 images of 250 KB each, so that writes are under way when the process dies.
                var bodies: [String: [UInt8]] = [:]
                for index in 0..<30 {
                    let body = Self.noise(side: 250, seed: UInt64(index + 1))
                    server.route("/\(index).png", .ok(body))
                    bodies["\(index).png"] = body
                }
                let urls = (0..<30).map { server.url("/\($0).png") }
                let output = directory + "/out"
                for round in 0..<6 {
                    // When a run is killed after its first `round + 1` results
                    let pipe = try ChildProcess.pipe()
                    let process = try ChildProcess.spawn(
                        try OspreyBinary.path, ["fetch", "--no-cache", "--force", "-o", output] + urls,
                        output: .descriptor(pipe.write))
                    close(pipe.write)
                    var lines = 0
                    var chunk = [UInt8](repeating: 0, count: 4096)
                    while lines <= round {
                        let count = chunk.withUnsafeMutableBytes { read(pipe.read, $0.baseAddress, $0.count) }
                        if count <= 0 { break }
                        lines += chunk[..<count].filter { $0 == UInt8(ascii: "\n") }.count
                    }
                    kill(process, SIGKILL)
                    close(pipe.read)
                    _ = try await onOwnThread { ChildProcess.wait(process) }

                    // Then every file under a result's name is whole, and nothing else is visible
                    for name in try FileManager.default.contentsOfDirectory(atPath: output) {
                        if name.hasPrefix(".") {
                            #expect(name.hasPrefix(".osprey-") && name.hasSuffix(".tmp"), "\(name)")
                            continue
                        }
                        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: output + "/" + name)))
                        #expect(bytes == bodies[name], "round \(round): \(name) is not whole")
                    }
                }

                // A leftover of a run that is gone (a process that has exited) is removed by the next run.
                let finished = try ChildProcess.spawn("/bin/true", [])
                _ = try await onOwnThread { ChildProcess.wait(finished) }
                let leftover = output + "/.osprey-\(finished)-1a2b.tmp"
                #expect(FileManager.default.createFile(atPath: leftover, contents: Data([1, 2, 3])))
                let clean = try await OspreyBinary.run(["fetch", "--no-cache", "--force", "-o", output, urls[0]])
                #expect(clean.status == 0)
                #expect(!FileManager.default.fileExists(atPath: leftover))
                #expect(try FileManager.default.contentsOfDirectory(atPath: output).allSatisfy { !$0.hasPrefix(".") })
            }
        }
    }

    @Test("re-encoded output: sRGB without EXIF by default; the profile and the copyright fields when asked")
    func profileAndMetadata() async throws {
        try await withOriginServer { server in
            try await withDirectory { directory in
                var tagging = EncodingOptions()
                tagging.tagsSRGB = true
                tagging.metadata = .all
                let tagged = try ImageEncoder.encode(
                    try ImageDecoder.decode(try TaggedImages.jpeg()), as: .jpeg, options: tagging)
                #expect(ColorProfile(embeddedIn: tagged) != nil && ImageMetadata(embeddedIn: tagged).exif != nil)
                server.route("/t.jpg", .ok(tagged))
                func fetched(_ arguments: [String]) async throws -> [UInt8] {
                    let run = try await OspreyBinary.run(
                        ["fetch", "--force", "--no-cache", "--format", "png", "-o", directory + "/out"] + arguments
                            + [server.url("/t.jpg")])
                    #expect(run.status == 0, "\(run.standardError)")
                    return Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/out/t.png")))
                }
                let plain = try await fetched([])
                #expect(ColorProfile(embeddedIn: plain) == nil && ImageMetadata(embeddedIn: plain).isEmpty)
                let kept = try await fetched(["--keep-profile", "--keep-metadata", "copyright"])
                #expect(ColorProfile(embeddedIn: kept) == ColorProfile(embeddedIn: tagged))
                #expect(TaggedImages.ifd0Tags(try #require(ImageMetadata(embeddedIn: kept).exif)) == [0x013B, 0x8298])
            }
        }
    }
}
