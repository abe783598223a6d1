package import ArgumentParser
import Logging
import Osprey

/// The `main` of both executables, `osprey` and `osprey-proxy`: one logging set-up, one way of failing.
///
/// Exit status: 0 on success, 1 when the work failed (a file could not be read, a URL could not be loaded), 2 for a
/// usage error (unknown option, missing argument), as Unix tools do.
package enum CommandLineEntry {
    /// Parses the command line with `root` and runs the command it names, mapping argument-parsing failures to exit
    /// status 2 and one line on standard error.
    ///
    /// On the main actor, where `main` runs: a nonisolated function would start on the global executor, whose first
    /// job starts a thread (0.2–0.4 ms of `osprey --version`, which otherwise never leaves the main thread).
    @MainActor
    package static func run<Root: ParsableCommand>(_ root: Root.Type) async {
        // Diagnostics go to standard error, results to standard output; warnings only, unless --verbose.
        let verbose = CommandLine.arguments.contains("--verbose")
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = verbose ? .debug : .warning
            return handler
        }
        do {
            var command = try root.parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = root.exitCode(for: error)
            guard code == .validationFailure else { root.exit(withError: error) }
            // One line naming the problem and the fix; the usage screen is a --help away.
            let line =
                "osprey: "
                + root.message(for: error).trimmingWhitespace()
                .replacing("\n", with: " ") + " (see --help)"
            StandardStream.error.write(line + "\n")
            root.exit(withError: ExitCode(2))
        }
    }
}
