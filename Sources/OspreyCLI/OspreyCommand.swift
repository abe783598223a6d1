import ArgumentParser
import Foundation
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
        version: versionText,
        subcommands: [InfoCommand.self, ConvertCommand.self]
    )

    /// `osprey 0.1.0` and the codec libraries it runs on, one per line.
    static var versionText: String {
        (["osprey \(OspreyVersion.current)"] + CodecLibraries.all.map { "  \($0.name) \($0.version)" })
            .joined(separator: "\n")
    }

    /// Parses and runs the command, mapping argument-parsing failures to exit status 2.
    static func main() async {
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
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(2)
        }
    }
}
