import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

/// Runs the built `osprey` binary and pins its output and exit codes.
@Suite struct OspreyCommandTests {
    @Test func versionListsTheCodecLibraries() async throws {
        let run = try await OspreyBinary.run(["--version"])
        #expect(run.status == 0)
        let lines = run.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("osprey ") == true)
        for library in CodecLibraries.all {
            #expect(lines.contains("  \(library.name) \(library.version)"))
        }
    }

    @Test func helpNamesTheSubcommands() async throws {
        let run = try await OspreyBinary.run(["--help"])
        #expect(run.status == 0)
        #expect(run.standardOutput.contains("USAGE: osprey"))
        for command in ["fetch", "prefetch", "cache", "info", "convert"] {
            #expect(run.standardOutput.contains("\n  \(command) "), "\(command)")
        }
    }

    @Test(
        "every command's --help shows examples",
        arguments: [
            [], ["fetch"], ["prefetch"], ["cache"], ["cache", "info"], ["cache", "clean"], ["cache", "clear"],
            ["cache", "ls"], ["info"], ["convert"],
        ])
    func helpHasExamples(command: [String]) async throws {
        let run = try await OspreyBinary.run(command + ["--help"])
        #expect(run.status == 0)
        #expect(run.standardOutput.contains("Example"), "\(command)")
    }

    @Test func usageErrorsExitWithStatus2() async throws {
        let run = try await OspreyBinary.run(["--no-such-option"])
        #expect(run.status == 2)
        #expect(run.standardError.contains("no-such-option"))
        #expect(run.standardOutput.isEmpty)
        #expect(try await OspreyBinary.run(["info"]).status == 2)
    }
}
