import ArgumentParser
import Foundation
import HTTPTypes
import Logging
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyCLI

/// The loading flags: what each does to the manager's downloader and to every request, and the order flags, the
/// environment and the defaults take; then the ones whose effect shows at the origin, through the binary.
@Suite("loading options", .timeLimit(.minutes(2)))
struct LoadingOptionsTests {
    @Test("each download flag reaches the downloader's configuration; each cache flag the requests' options")
    func flagsToConfiguration() throws {
        let options = try LoadingOptions.parse([
            "--max-concurrent", "3", "--lifo", "--timeout", "2.5", "--header", "X-A: one", "--header", "User-Agent: t",
            "--insecure", "--retry-failed", "--refresh", "--memory-only", "--verbose", "--cache-dir", "/tmp/c",
            "--http2",
        ])
        let settings = try options.settings(environment: [:])
        let downloader = options.downloaderConfiguration(settings)
        #expect(downloader.maxConcurrentDownloads == 3)
        #expect(downloader.order == .lifo)
        #expect(downloader.timeout == .milliseconds(2500))
        #expect(downloader.headers[HTTPField.Name("X-A")!] == "one" && downloader.headers[values: .userAgent] == ["t"])
        #expect(downloader.logger.logLevel == .debug)
        #expect(downloader.httpVersion == .automatic)
        #expect(
            options.requestOptions
                == [.waitStoreCache, .allowsInvalidCertificates, .retryFailed, .refreshCached, .cacheMemoryOnly])
        #expect(options.cacheConfiguration(settings).disk.directory == "/tmp/c/osprey/default")

        let plain = try LoadingOptions.parse([])
        let defaults = try plain.settings(environment: [:])
        #expect(defaults.maxConcurrent == 6 && defaults.timeout == 15)
        #expect(defaults.cacheDirectory == DiskCache.Configuration.platformCacheDirectory)
        #expect(plain.downloaderConfiguration(defaults).order == .fifo)
        #expect(plain.downloaderConfiguration(defaults).logger.logLevel == .warning)
        #expect(plain.downloaderConfiguration(defaults).httpVersion == .http1Only)
        #expect(plain.requestOptions == [.waitStoreCache])
        #expect(
            try LoadingOptions.parse(["--no-cache"]).requestOptions == [
                .waitStoreCache, .fromLoaderOnly, .cacheMemoryOnly,
            ])
    }

    @Test("flags override the environment, which overrides the defaults")
    func precedence() throws {
        let environment = ["OSPREY_CACHE_DIR": "/env", "OSPREY_MAX_CONCURRENT": "9", "OSPREY_TIMEOUT": "4"]
        let fromEnvironment = try LoadingOptions.parse([]).settings(environment: environment)
        #expect(fromEnvironment.cacheDirectory == "/env" && fromEnvironment.maxConcurrent == 9)
        #expect(fromEnvironment.timeout == 4)
        let fromFlags = try LoadingOptions.parse(["--cache-dir", "/flag", "--max-concurrent", "2", "--timeout", "1"])
            .settings(environment: environment)
        #expect(fromFlags.cacheDirectory == "/flag" && fromFlags.maxConcurrent == 2 && fromFlags.timeout == 1)
        #expect(throws: (any Error).self) {
            try LoadingOptions.parse([]).settings(environment: ["OSPREY_TIMEOUT": "never"])
        }
    }

    @Test("--timeout and OSPREY_TIMEOUT fail a stalled origin; --memory-only writes nothing; --refresh revalidates")
    func effectsAtTheOrigin() async throws {
        try await withOriginServer { server in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-flags-\(UUID())").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let gate = OriginGate()
            defer { gate.open() }
            server.route("/stall.png", .ok(SyntheticImages.png(width: 4, height: 4)).held(by: gate))
            server.route("/tagged.png", .ok(SyntheticImages.png(width: 6, height: 6)).withETag("\"v1\""))
            let common = ["fetch", "--json", "--force", "-o", directory, "--cache-dir", directory + "/cache"]

            let stalled = try await OspreyBinary.run(common + ["--timeout", "0.3", server.url("/stall.png")])
            #expect(stalled.status == 1 && stalled.standardOutput.contains("timed out"))
            let stalledByEnvironment = try await OspreyBinary.run(
                common + [server.url("/stall.png")], environment: ["OSPREY_TIMEOUT": "0.3"])
            #expect(stalledByEnvironment.status == 1 && stalledByEnvironment.standardOutput.contains("timed out"))

            let memoryOnly = try await OspreyBinary.run(common + ["--memory-only", server.url("/tagged.png")])
            #expect(memoryOnly.status == 0)
            let info = try await OspreyBinary.run(["cache", "info", "--json", "--cache-dir", directory + "/cache"])
            #expect(info.standardOutput.contains(#""count":0"#))

            _ = try await OspreyBinary.run(common + [server.url("/tagged.png")])
            let refreshed = try await OspreyBinary.run(common + ["--refresh", server.url("/tagged.png")])
            #expect(refreshed.status == 0 && refreshed.standardOutput.contains(#""source":"disk""#))
            #expect(server.requests(to: "/tagged.png").last?.header("If-None-Match") == "\"v1\"")
            #expect(server.requestCount("/tagged.png") == 3)
        }
    }
}
