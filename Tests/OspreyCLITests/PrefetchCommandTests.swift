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
            for name in ["a", "b", "c"] { server.route("/\(name).png", .ok(png)) }
            let list = """
                # images for the front page

                \(server.url("/a.png"))
                  \(server.url("/b.png"))
                \(server.url("/gone.png"))
                """
            let cache = ["--cache-dir", directory + "/cache"]
            let first = try OspreyBinary.run(["prefetch", "--json"] + cache, input: list)
            #expect(first.status == 1)
            #expect(
                first.standardOutput.hasPrefix(#"{"finished":2,"skipped":0,"failed":1,"bytes":\#(2 * png.count),"ms":"#)
            )

            // A file this time, one URL more: the two cached ones are skipped without a request.
            let file = directory + "/urls.txt"
            try Data((list.replacingOccurrences(of: server.url("/gone.png"), with: server.url("/c.png"))).utf8)
                .write(to: URL(fileURLWithPath: file))
            let counted = server.requestCount()
            let second = try OspreyBinary.run(["prefetch", "-i", file] + cache)
            #expect(second.status == 0)
            #expect(second.standardOutput.hasPrefix("1 finished, 2 skipped, 0 failed, \(png.count) bytes in "))
            #expect(server.requestCount() == counted + 1)
            #expect(server.requests(to: "/c.png").count == 1)

            let bad = try OspreyBinary.run(["prefetch"] + cache, input: "https://example.com/a.png\nnot a url\n")
            #expect(bad.status == 2 && bad.standardError.hasPrefix("osprey: line 2: invalid URL 'not a url'"))
            let missing = try OspreyBinary.run(["prefetch", "-i", directory + "/nope.txt"] + cache)
            #expect(missing.status == 2 && missing.standardError.contains("cannot read -i"))
        }
    }
}
