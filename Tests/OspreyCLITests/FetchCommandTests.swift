import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

/// `osprey fetch` run as a binary against a real origin: outputs, files, sources and exit codes.
@Suite("osprey fetch", .timeLimit(.minutes(2)))
struct FetchCommandTests {
    static let png = SyntheticImages.png(width: 24, height: 12)

    static func jpeg() throws -> [UInt8] {
        try ImageEncoder.encode(
            try ImageDecoder.decode(SyntheticImages.png(width: 40, height: 30)), as: .jpeg, quality: 90)
    }

    /// The `--json` lines of a run, parsed, by URL.
    func objects(_ run: OspreyBinary.Run) throws -> [String: [String: Any]] {
        var byURL: [String: [String: Any]] = [:]
        for line in run.standardOutput.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            byURL[try #require(object["url"] as? String)] = object
        }
        return byURL
    }

    @Test("fetches into files named from the URLs; a 404 fails alone with status 1; a second run comes from disk")
    func fetchThenDisk() async throws {
        try await withOriginServer { server in
            try await withDirectory { directory in
                server.route("/img/cat.png", .ok(Self.png))
                server.route("/img/dog.jpg", .ok(try Self.jpeg()))
                let urls = [server.url("/img/cat.png"), server.url("/img/dog.jpg"), server.url("/img/missing.png")]
                let arguments =
                    ["fetch", "--json", "-o", directory + "/out", "--cache-dir", directory + "/cache"] + urls

                let first = try await OspreyBinary.run(arguments)
                #expect(first.status == 1)
                let results = try objects(first)
                #expect(results.count == 3)
                let cat = try #require(results[urls[0]])
                #expect(cat["status"] as? String == "ok" && cat["source"] as? String == "network")
                #expect(cat["file"] as? String == directory + "/out/cat.png")
                #expect(cat["format"] as? String == "png" && cat["width"] as? Int == 24 && cat["height"] as? Int == 12)
                #expect(cat["frames"] as? Int == 1 && cat["bytes"] as? Int == Self.png.count && cat["ms"] is Int)
                #expect(cat["error"] == nil)
                #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/out/cat.png")) == Data(Self.png))
                #expect(results[urls[1]]?["file"] as? String == directory + "/out/dog.jpg")
                let missing = try #require(results[urls[2]])
                #expect(missing["status"] as? String == "error")
                #expect((missing["error"] as? String)?.contains("404") == true)
                #expect(missing["file"] == nil && missing["source"] == nil)
                #expect(!FileManager.default.fileExists(atPath: directory + "/out/missing.png"))
                #expect(first.standardError.isEmpty)

                let counted = server.requestCount()
                let second = try await OspreyBinary.run(
                    ["fetch", "--json", "--force", "-o", directory + "/out", "--cache-dir", directory + "/cache"]
                        + urls.prefix(2))
                #expect(second.status == 0)
                let again = try objects(second)
                #expect(again.values.allSatisfy { $0["source"] as? String == "disk" })
                #expect(server.requestCount() == counted)
                // --force wrote over its own files rather than choosing new names.
                #expect(again[urls[0]]?["file"] as? String == directory + "/out/cat.png")
            }
        }
    }

    @Test("--resize, --fit and --format re-encode; the text line says where the image came from")
    func resizeAndConvert() async throws {
        try await withOriginServer { server in
            try await withDirectory { directory in
                server.route("/dog.jpg", .ok(try Self.jpeg()))
                let run = try await OspreyBinary.run([
                    "fetch", "-o", directory, "--cache-dir", directory + "/cache", "--resize", "16x16", "--fit",
                    "cover", "--format", "webp", "--quality", "70", server.url("/dog.jpg"),
                ])
                #expect(run.status == 0)
                let file = directory + "/dog.webp"
                let image = try ImageDecoder.decode(try Data(contentsOf: URL(fileURLWithPath: file)))
                #expect(image.sourceFormat == .webp && image.width == 16 && image.height == 16)
                let line = run.standardOutput
                #expect(line.hasPrefix("ok     \(server.url("/dog.jpg")) → \(file)  network  16x16 webp, "))
                #expect(line.hasSuffix(" ms\n"))
                // Not a terminal: no escape codes anywhere.
                #expect(!(run.standardOutput + run.standardError).contains("\u{1B}"))

                let inside = try await OspreyBinary.run([
                    "fetch", "--json", "-o", directory, "--cache-dir", directory + "/cache", "--resize", "20",
                    server.url("/dog.jpg"),
                ])
                let result = try #require(try objects(inside)[server.url("/dog.jpg")])
                #expect(result["width"] as? Int == 20 && result["height"] as? Int == 15)
                #expect(result["source"] as? String == "disk" && result["format"] as? String == "jpeg")
            }
        }
    }

    @Test("never overwrites an unrelated file: names are made unique, within a run and against the directory")
    func uniqueNames() async throws {
        try await withOriginServer { server in
            try await withDirectory { directory in
                server.route("/a/pic.png", .ok(Self.png))
                server.route("/b/pic.png", .ok(SyntheticImages.png(width: 5, height: 5)))
                let mine = try write(Array("my notes".utf8), to: directory + "/pic.png")
                let run = try await OspreyBinary.run([
                    "fetch", "--json", "-o", directory, "--cache-dir", directory + "/cache", server.url("/a/pic.png"),
                    server.url("/b/pic.png"),
                ])
                #expect(run.status == 0)
                let files = Set(try objects(run).values.compactMap { $0["file"] as? String })
                #expect(files == [directory + "/pic-1.png", directory + "/pic-2.png"])
                #expect(try String(contentsOfFile: mine, encoding: .utf8) == "my notes")
            }
        }
    }

    @Test("--no-cache goes to the network every time; --header reaches the origin; OSPREY_CACHE_DIR is the cache")
    func cacheHeadersAndEnvironment() async throws {
        try await withOriginServer { server in
            try await withDirectory { directory in
                server.route("/h.png", .ok(Self.png))
                let url = server.url("/h.png")
                for _ in 0..<2 {
                    let run = try await OspreyBinary.run([
                        "fetch", "--json", "--no-cache", "--force", "-o", directory, url,
                    ])
                    #expect(try objects(run)[url]?["source"] as? String == "network")
                }
                #expect(server.requestCount("/h.png") == 2)

                let environment = ["OSPREY_CACHE_DIR": directory + "/env-cache"]
                let first = try await OspreyBinary.run(
                    ["fetch", "--json", "--force", "-o", directory, "--header", "X-Trace: abc 1", url],
                    environment: environment)
                #expect(try objects(first)[url]?["source"] as? String == "network")
                #expect(server.requests(to: "/h.png").last?.header("X-Trace") == "abc 1")
                #expect(first.standardError.isEmpty)
                let verbose = try await OspreyBinary.run([
                    "fetch", "--verbose", "--no-cache", "--force", "-o", directory, url,
                ])
                #expect(verbose.standardError.contains("download started") && verbose.standardError.contains(url))
                #expect(verbose.standardError.contains("download finished") && verbose.standardOutput.hasPrefix("ok "))
                #expect(FileManager.default.fileExists(atPath: directory + "/env-cache/osprey/default"))
                let second = try await OspreyBinary.run(
                    ["fetch", "--json", "--force", "-o", directory, url], environment: environment)
                #expect(try objects(second)[url]?["source"] as? String == "disk")
                #expect(server.requestCount("/h.png") == 4)
            }
        }
    }

    @Test(
        "every usage mistake is one line on stderr, status 2, nothing written",
        arguments: [
            (["not a url"], "invalid URL"),
            (["ftp://example.com/a.png"], "http or https"),
            (["http://127.0.0.1:99999/x.jpg"], "the port is not between 1 and 65535"),
            (["http://evil.test%00.example.com/x.jpg"], "the host is not a valid host name"),
            (["--resize", "0x10", "http://example.com/a.png"], "--resize '0x10'"),
            (["--fit", "cover", "http://example.com/a.png"], "--fit needs --resize"),
            (["--no-cache", "--refresh", "http://example.com/a.png"], "--no-cache cannot be combined with --refresh"),
            (["--header", "nocolon", "http://example.com/a.png"], "'Name: value'"),
            (["--quality", "101", "--format", "jpeg", "http://example.com/a.png"], "between 0 and 100"),
            (["--format", "bmp", "http://example.com/a.png"], "bmp"),
            (["--max-concurrent", "0", "http://example.com/a.png"], "--max-concurrent"),
            ([String](), "give the URLs to fetch, or -i FILE listing them"),
            (["-i", "/nonexistent/urls.txt"], "cannot read -i /nonexistent/urls.txt"),
        ])
    func usageErrors(arguments: [String], expected: String) async throws {
        try await withDirectory { directory in
            let run = try await OspreyBinary.run(
                ["fetch", "-o", directory + "/out"] + arguments, environment: ["OSPREY_CACHE_DIR": directory],
                input: "# a list with a bad line\nnot a url\n")
            #expect(run.status == 2)
            #expect(run.standardOutput.isEmpty)
            #expect(
                run.standardError.hasPrefix("osprey: ") && run.standardError.contains(expected), "\(run.standardError)")
            #expect(run.standardError.split(separator: "\n").count == 1)
            #expect((try? FileManager.default.contentsOfDirectory(atPath: directory + "/out"))?.isEmpty ?? true)
        }
    }

    @Test("-i adds the URLs a list gives to those of the command line, from a file or stdin; comments are skipped")
    func urlList() async throws {
        try await withOriginServer { server in
            try await withDirectory { directory in
                for name in ["a", "b", "c"] { server.route("/\(name).png", .ok(Self.png)) }
                let list = "# images\n\n  \(server.url("/b.png"))  \n\(server.url("/c.png"))\n"
                let listFile = try write(Array(list.utf8), to: directory + "/urls.txt")
                for input in [listFile, "-"] {
                    let run = try await OspreyBinary.run(
                        [
                            "fetch", "--json", "--force", "-o", directory + "/out", "--no-cache", server.url("/a.png"),
                            "-i", input,
                        ],
                        input: list)
                    #expect(run.status == 0, "\(run.standardError)")
                    let results = try objects(run)
                    #expect(Set(results.keys) == Set(["a", "b", "c"].map { server.url("/\($0).png") }))
                    #expect(results.values.allSatisfy { $0["status"] as? String == "ok" })
                }
                #expect(
                    try FileManager.default.contentsOfDirectory(atPath: directory + "/out").sorted() == [
                        "a.png", "b.png", "c.png",
                    ])
                #expect(server.requests(to: "/b.png").count == 2)
            }
        }
    }

    @Test(
        "a list's line that is not a URL is an error line of its own, with its number; the others are fetched, exit 1")
    func badLineInAList() async throws {
        try await withOriginServer { server in
            try await withDirectory { directory in
                for name in ["a", "b"] { server.route("/\(name).png", .ok(Self.png)) }
                // Given a list whose second and fourth lines are not URLs
                let list = "\(server.url("/a.png"))\nnot a url\n\(server.url("/b.png"))\nftp://example.com/c.png\n"
                // When it is fetched, as text and as JSON
                for json in [false, true] {
                    let run = try await OspreyBinary.run(
                        ["fetch", "--force", "-o", directory + "/out", "--no-cache", "-i", "-"]
                            + (json ? ["--json"] : []),
                        input: list)
                    // Then both URLs are written, each bad line is reported with its number, and the status is 1
                    #expect(run.status == 1, "\(run.standardError)")
                    let lines = run.standardOutput.split(separator: "\n").map(String.init)
                    #expect(lines.count == 4, "\(lines)")
                    if json {
                        let results = try objects(run)
                        #expect(
                            results["not a url"]?["error"] as? String
                                == "line 2: invalid URL 'not a url': not an absolute URL")
                        #expect(
                            (results["ftp://example.com/c.png"]?["error"] as? String)?.hasPrefix("line 4: ") == true)
                        #expect(results[server.url("/a.png")]?["status"] as? String == "ok")
                        #expect(results[server.url("/b.png")]?["status"] as? String == "ok")
                    } else {
                        #expect(
                            lines.contains("error  not a url: line 2: invalid URL 'not a url': not an absolute URL"))
                        #expect(lines.contains { $0.hasPrefix("error  ftp://example.com/c.png: line 4: ") })
                        #expect(lines.filter { $0.hasPrefix("ok ") }.count == 2)
                    }
                }
                #expect(
                    try FileManager.default.contentsOfDirectory(atPath: directory + "/out").sorted() == [
                        "a.png", "b.png",
                    ])
                #expect(server.requests(to: "/a.png").count == 2)
            }
        }
    }

    @Test("an output path that is a file, and a bad OSPREY_MAX_CONCURRENT, are usage errors")
    func badOutputAndEnvironment() async throws {
        try await withDirectory { directory in
            let file = try write([1, 2, 3], to: directory + "/file")
            let run = try await OspreyBinary.run(["fetch", "-o", file, "http://example.com/a.png"])
            #expect(run.status == 2 && run.standardError.contains("is a file, not a directory"))
            let environment = try await OspreyBinary.run(
                ["fetch", "-o", directory, "http://example.com/a.png"], environment: ["OSPREY_MAX_CONCURRENT": "lots"])
            #expect(environment.status == 2 && environment.standardError.contains("OSPREY_MAX_CONCURRENT='lots'"))
        }
    }
}
