import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

/// `osprey prefetch` against a real origin.
@Suite("osprey prefetch", .timeLimit(.minutes(2)))
struct PrefetchCommandTests {
    @Test(
        "reads URLs (comments and blank lines skipped), counts finished, skipped, failed and bytes; exit 1 on failure")
    func summaries() async throws {
        try await withOriginServer { server in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-prefetch-\(UUID())")
                .path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let png = SyntheticImages.png(width: 10, height: 10)
            for name in ["a", "b", "c", "d"] { server.route("/\(name).png", .ok(png)) }
            let list = """
                # images for the front page

                \(server.url("/a.png"))
                  \(server.url("/b.png"))
                \(server.url("/gone.png"))
                """
            let cache = ["--cache-dir", directory + "/cache"]
            let first = try await OspreyBinary.run(["prefetch", "--json"] + cache, input: list)
            #expect(first.status == 1)
            #expect(
                first.standardOutput.hasPrefix(
                    #"{"finished":2,"skipped":0,"failed":1,"notStored":0,"bytes":\#(2 * png.count),"ms":"#))

            // A file this time, one URL more: the two cached ones are skipped without a request.
            let file = directory + "/urls.txt"
            try Data((list.replacingOccurrences(of: server.url("/gone.png"), with: server.url("/c.png"))).utf8)
                .write(to: URL(fileURLWithPath: file))
            let counted = server.requestCount()
            let second = try await OspreyBinary.run(["prefetch", "-i", file] + cache)
            #expect(second.status == 0)
            #expect(
                second.standardOutput.hasPrefix("1 finished, 2 skipped, 0 failed, 0 not stored, \(png.count) bytes in ")
            )
            #expect(server.requestCount() == counted + 1)
            #expect(server.requests(to: "/c.png").count == 1)

            // A line that is not a URL is reported with its number and counted as failed; the rest are prefetched.
            let bad = try await OspreyBinary.run(
                ["prefetch"] + cache, input: "\(server.url("/d.png"))\nnot a url\n\(server.url("/a.png"))\n")
            #expect(bad.status == 1)
            #expect(bad.standardError == "line 2: invalid URL 'not a url': not an absolute URL\n")
            #expect(
                bad.standardOutput.hasPrefix("1 finished, 1 skipped, 1 failed, 0 not stored, \(png.count) bytes in "))
            #expect(server.requests(to: "/d.png").count == 1)
            let missing = try await OspreyBinary.run(["prefetch", "-i", directory + "/nope.txt"] + cache)
            #expect(missing.status == 2 && missing.standardError.contains("cannot read -i"))
        }
    }

    @Test("any readable stream is a URL list: /dev/stdin, a FIFO, a process substitution")
    func streams() async throws {
        try await withOriginServer { server in
            try await withDirectory { directory in
                let png = SyntheticImages.png(width: 10, height: 10)
                server.route("/a.png", .ok(png))
                let list = server.url("/a.png") + "\n"
                let cache = ["--cache-dir", directory + "/cache", "--json"]

                let stdin = try await OspreyBinary.run(["prefetch", "-i", "/dev/stdin"] + cache, input: list)
                #expect(stdin.status == 0, "\(stdin.standardError)")
                #expect(stdin.standardOutput.hasPrefix(#"{"finished":1,"#))

                // A named pipe, written by another process while prefetch reads it.
                let fifo = directory + "/urls.fifo"
                #expect(mkfifo(fifo, 0o600) == 0)
                let writer = try ChildProcess.spawn(
                    "/bin/sh", ["-c", "printf '%s\\n' \"$0\" > \"$1\"", server.url("/a.png"), fifo])
                let piped = try await OspreyBinary.run(["prefetch", "-i", fifo] + cache)
                _ = try await onOwnThread { ChildProcess.wait(writer) }
                #expect(piped.status == 0, "\(piped.standardError)")
                #expect(piped.standardOutput.hasPrefix(#"{"finished":0,"skipped":1,"#))

                // bash's <(cmd), a /dev/fd path.
                let shell = try await OspreyBinary.run(
                    "/bin/bash",
                    [
                        "-c", "\"$0\" prefetch -i <(printf '%s\\n' \"$1\") --cache-dir \"$2\" --json",
                        try OspreyBinary.path, server.url("/a.png"), directory + "/cache",
                    ])
                #expect(shell.status == 0, "\(shell.standardError)")
                #expect(shell.standardOutput.hasPrefix(#"{"finished":0,"skipped":1,"#))
            }
        }
    }

    @Test("images that could not be written to the disk cache are counted as not stored, and the exit status is 1")
    func notStored() async throws {
        try await withOriginServer { server in
            try await withDirectory { directory in
                for index in 0..<4 {
                    server.route("/\(index).png", .ok(SyntheticImages.png(width: 10 + index, height: 10)))
                }
                let list = (0..<4).map { server.url("/\($0).png") }.joined(separator: "\n")
                // A cache directory that cannot be made: its parent is a regular file.
                #expect(FileManager.default.createFile(atPath: directory + "/file", contents: Data([1])))
                let run = try await OspreyBinary.run(
                    ["prefetch", "--json", "--cache-dir", directory + "/file/cache"], input: list)
                #expect(run.status == 1)
                #expect(run.standardOutput.hasPrefix(#"{"finished":0,"skipped":0,"failed":0,"notStored":4,"#))
            }
        }
    }

    @Test(
        "a cache on a full disk: what fits is finished, the rest is not stored, exit 1",
        .enabled(if: geteuid() == 0, "mounting a small tmpfs needs root"))
    func fullDisk() async throws {
        try await withOriginServer { server in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-prefetch-\(UUID())")
                .path
            let mountPoint = directory + "/small"
            try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let mounted = "size=512k".withCString { mount("tmpfs", mountPoint, "tmpfs", 0, $0) }
            try #require(mounted == 0, "mount: errno \(errno)")
            defer { umount(mountPoint) }
            // 20 images of 100 KB (noise does not compress): a 512 KiB disk holds a few of them.
            var generator = SystemRandomNumberGenerator()
            for index in 0..<20 {
                let rgba = (0..<(160 * 160 * 4)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                server.route("/\(index).png", .ok(SyntheticImages.png(width: 160, height: 160, rgba: rgba)))
            }
            let list = (0..<20).map { server.url("/\($0).png") }.joined(separator: "\n")
            let run = try await OspreyBinary.run(["prefetch", "--json", "--cache-dir", mountPoint], input: list)
            #expect(run.status == 1)
            let object = try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any] ?? [:]
            let finished = object["finished"] as? Int ?? -1
            let notStored = object["notStored"] as? Int ?? -1
            #expect(finished > 0 && notStored > 0 && finished + notStored == 20, "\(run.standardOutput)")
            #expect(object["failed"] as? Int == 0)
        }
    }
}
