import ArgumentParser
import Foundation
import Osprey
import OspreyCommandLine
import OspreyServer
import Testing

@testable import OspreyProxyCLI

/// `osprey serve --config FILE`: the file's settings under the environment and the flags, refusals, and
/// `--print-config` with secrets masked.
@Suite struct ServeConfigurationFileTests {
    /// Writes `json` to a file of its own and returns its path (removed by the caller's `defer`).
    static func file(_ json: String) throws -> String {
        let path = NSTemporaryDirectory() + "osprey-config-" + UUID().uuidString + ".json"
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("the file's settings apply where neither a flag nor a variable gives one")
    func precedence() async throws {
        let path = try Self.file(
            """
            {"port": 9000, "max-in-flight": 12, "allow-unsigned": true, "allow-hosts": ["a.example.com", "*.b.example.com"],
             "presets": ["thumb=w:100", "hero=w:1600"], "secret": ["new secret", "old secret"], "cache-max-age": 60}
            """)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try await ServeConfigurationFile.settings(fromFile: path)
        #expect(file["OSPREY_PORT"] == "9000" && file["OSPREY_ALLOW_UNSIGNED"] == "1")
        #expect(file["OSPREY_PRESETS"] == "thumb=w:100;hero=w:1600")

        // The variable wins over the file, the flag over both.
        let environment = file.merging(["OSPREY_MAX_IN_FLIGHT": "7", "OSPREY_CACHE_MAX_AGE": "5"]) { $1 }
        let configuration = try ServeOptions.parse(["--cache-max-age", "3"]).serverConfiguration(
            environment: environment)
        #expect(configuration.port == 9000)
        #expect(configuration.maxInFlight == 7)
        #expect(configuration.cacheMaxAge == 3)
        #expect(configuration.allowsUnsigned)
        #expect(configuration.allowedHosts.map(\.description) == ["a.example.com", "*.b.example.com"])
        #expect(configuration.presets.map(\.name) == ["thumb", "hero"])
        #expect(configuration.secrets == [Array("new secret".utf8), Array("old secret".utf8)])

        // --print-config shows it, secrets masked.
        let printed = ServeConfigurationFile.describe(configuration)
        #expect(printed.contains("\"max-in-flight\" : 7"))
        #expect(!printed.contains("new secret") && printed.contains("********"))
    }

    @Test("HTTP/2 is offered to https origins with --http2, OSPREY_HTTP2=1 or the file's http2; else HTTP/1.1 only")
    func http2() async throws {
        let path = try Self.file(#"{"allow-unsigned": true, "http2": true}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try await ServeConfigurationFile.settings(fromFile: path)
        let unsigned = ["OSPREY_ALLOW_UNSIGNED": "1"]
        for (arguments, environment, version) in [
            ([], unsigned, ImageDownloader.HTTPVersion.http1Only), (["--http2"], unsigned, .automatic),
            ([], unsigned.merging(["OSPREY_HTTP2": "1"]) { $1 }, .automatic), ([], file, .automatic),
        ] {
            let configuration = try ServeOptions.parse(arguments).serverConfiguration(environment: environment)
            #expect(configuration.httpVersion == version, "\(arguments) \(environment)")
            let printed = ServeConfigurationFile.describe(configuration).filter { !$0.isWhitespace }
            #expect(printed.contains(#""http2":\#(version == .automatic)"#), "\(printed)")
        }
    }

    @Test("--max-connections-per-origin, its variable and the file's key reach the proxy's configuration; 0 is refused")
    func connectionsPerOrigin() async throws {
        let path = try Self.file(#"{"allow-unsigned": true, "max-connections-per-origin": 4}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try await ServeConfigurationFile.settings(fromFile: path)
        let unsigned = ["OSPREY_ALLOW_UNSIGNED": "1"]
        for (arguments, environment, limit) in [
            ([], unsigned, nil), (["--max-connections-per-origin", "2"], unsigned, 2),
            ([], unsigned.merging(["OSPREY_MAX_CONNECTIONS_PER_ORIGIN": "3"]) { $1 }, 3), ([], file, Int?(4)),
        ] {
            let configuration = try ServeOptions.parse(arguments).serverConfiguration(environment: environment)
            #expect(configuration.connectionsPerOrigin == limit, "\(arguments) \(environment)")
            let printed = ServeConfigurationFile.describe(configuration).filter { !$0.isWhitespace }
            #expect(printed.contains(#""max-connections-per-origin":"#) == (limit != nil), "\(printed)")
        }
        #expect(throws: ValidationError.self) {
            try ServeOptions.parse(["--max-connections-per-origin", "0"]).serverConfiguration(environment: unsigned)
        }
    }

    @Test("an unknown key, a value of the wrong kind, a missing or malformed file: refused with the reason")
    func refusals() async throws {
        for (json, message) in [
            (#"{"max-in-fligth": 3}"#, "'max-in-fligth' is not a setting"),
            (#"{"port": "eighty"}"#, "'port' does not have a value of its kind"),
            (#"{"port": 80"#, "cannot be read as JSON"),
        ] {
            let path = try Self.file(json)
            defer { try? FileManager.default.removeItem(atPath: path) }
            await #expect { try await ServeConfigurationFile.settings(fromFile: path) } throws: { error in
                "\(error)".contains(message)
            }
        }
        await #expect(throws: ValidationError.self) {
            try await ServeConfigurationFile.settings(fromFile: "/nonexistent/osprey.json")
        }
    }

    @Test("osprey serve --config FILE --print-config prints the effective configuration and exits")
    func printConfig() async throws {
        let path = try Self.file(#"{"allow-unsigned": true, "port": 9123, "secret": "do not show me"}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let run = try await OspreyBinary.run(
            ["serve", "--config", path, "--print-config"], environment: ["OSPREY_PORT": "9124"])
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardOutput.contains("\"port\" : 9124"))
        #expect(!run.standardOutput.contains("do not show me"))
    }

    @Test("--auto-format takes best beside the formats, --max-effort 1-9; --print-config shows both")
    func autoFormatBestAndMaxEffort() async throws {
        let run = try await OspreyBinary.run([
            "serve", "--allow-unsigned", "--auto-format", "best,webp", "--max-effort", "7", "--print-config",
        ])
        #expect(run.status == 0, "\(run.standardError)")
        let printed = run.standardOutput.filter { !$0.isWhitespace }
        #expect(printed.contains(#""auto-formats":["webp","best"]"#), "\(run.standardOutput)")
        #expect(printed.contains(#""max-effort":7"#))
        let refused = try await OspreyBinary.run(["serve", "--allow-unsigned", "--max-effort", "10", "--print-config"])
        #expect(refused.status == 2 && refused.standardError.contains("--max-effort must be between 1 and 9"))
    }
}
