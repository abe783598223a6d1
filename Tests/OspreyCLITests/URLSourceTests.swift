import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

/// `osprey info` and `osprey convert` with URLs, and `convert --resize`.
@Suite("info and convert with URLs", .timeLimit(.minutes(2)))
struct URLSourceTests {
    @Test("info and convert read URLs through the disk cache; convert resizes")
    func urlsAndResize() async throws {
        try await withOriginServer { server in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-url-\(UUID())").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            server.route("/p.png", .ok(SyntheticImages.png(width: 30, height: 20)))
            let environment = ["OSPREY_CACHE_DIR": directory + "/cache"]

            let info = try await OspreyBinary.run(
                ["info", server.url("/p.png"), server.url("/none.png")], environment: environment)
            #expect(info.status == 1)
            // An RGBA PNG: the file carries an alpha channel, so info says so.
            #expect(info.standardOutput == "\(server.url("/p.png")): png 30x20, alpha\n")
            #expect(info.standardError.contains("\(server.url("/none.png")): download failed"))

            let output = directory + "/small.jpg"
            let convert = try await OspreyBinary.run(
                ["convert", server.url("/p.png"), output, "--resize", "15x15", "--fit", "fill"],
                environment: environment)
            #expect(convert.status == 0)
            let image = try ImageDecoder.decode(try Data(contentsOf: URL(fileURLWithPath: output)))
            #expect(image.sourceFormat == .jpeg && image.width == 15 && image.height == 15)
            // Both loads of /p.png after the first came from the disk cache.
            #expect(server.requestCount("/p.png") == 1)
            // Each command closed the cache at exit: its index's log was folded in and removed, so a reader that
            // cannot use the log (a read-only copy of the directory) sees every entry.
            let index = directory + "/cache/osprey/default/index.sqlite"
            #expect(FileManager.default.fileExists(atPath: index))
            #expect(!FileManager.default.fileExists(atPath: index + "-wal"))

            let inside = try await OspreyBinary.run(
                ["convert", server.url("/p.png"), directory + "/w.png", "--resize", "12"], environment: environment)
            #expect(inside.status == 0)
            let resized = try ImageDecoder.decode(try Data(contentsOf: URL(fileURLWithPath: directory + "/w.png")))
            #expect(resized.width == 12 && resized.height == 8)
            let usage = try await OspreyBinary.run(
                ["convert", "a.png", "b.png", "--fit", "cover"], environment: environment)
            #expect(usage.status == 2 && usage.standardError.contains("--fit needs --resize"))
        }
    }
}
