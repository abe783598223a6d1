import ArgumentParser
import FoundationEssentials
import Logging
import Osprey
import OspreyCodecs

/// `osprey`: the command line over the Osprey library.
///
/// Exit status: 0 on success, 1 when the work failed (a file could not be read, a URL could not be loaded), 2 for a
/// usage error (unknown option, missing argument), as Unix tools do.
@main
struct OspreyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "osprey",
        abstract: "Download, cache, decode and process images.",
        discussion: """
            Examples:
              osprey fetch -o thumbs --resize 256x256 --fit cover https://example.com/cat.jpg
              osprey prefetch -i urls.txt
              osprey cache info
              osprey info photo.jpg
              osprey convert photo.jpg photo.webp --quality 80
              osprey serve --allow-unsigned --port 8080
              osprey sign https://example.com/cat.jpg w=300 --expires-in 3600
            """,
        // swift-argument-parser makes the configuration for every command line, and the full text asks libwebp its
        // version, which opens the library: it is made only for `--version` itself.
        version: CommandLine.arguments.dropFirst().contains("--version")
            ? versionText : "osprey \(OspreyVersion.current)",
        subcommands: [
            FetchCommand.self, PrefetchCommand.self, CacheCommand.self, InfoCommand.self, ConvertCommand.self,
            ServeCommand.self, SignCommand.self,
        ]
    )

    /// `osprey 0.1.0` and the codec libraries it runs on, one per line.
    static var versionText: String {
        // Appended line by line: `joined(separator:)` is generic code that costs a metadata look-up at every start.
        var text = "osprey \(OspreyVersion.current)"
        for library in CodecLibraries.all { text += "\n  " + library.name + " " + library.version }
        return text
    }

    /// Parses and runs the command, mapping argument-parsing failures to exit status 2.
    static func main() async {
        // Diagnostics go to standard error, results to standard output; warnings only, unless --verbose.
        let verbose = CommandLine.arguments.contains("--verbose")
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = verbose ? .debug : .warning
            return handler
        }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            guard code == .validationFailure else { exit(withError: error) }
            // One line naming the problem and the fix; the usage screen is a --help away.
            let line =
                "osprey: "
                + message(for: error).trimmingWhitespace()
                .replacing("\n", with: " ") + " (see --help)"
            StandardStream.error.write(line + "\n")
            exit(withError: ExitCode(2))
        }
    }
}
