import ArgumentParser
import FoundationEssentials
import Osprey
import OspreyCodecs
import OspreyCommandLine

/// `osprey`: the command line over the Osprey library. `serve` and `sign` are parsed here and run by `osprey-proxy`
/// (``ProxyExecutable``), the executable that links the server.
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
            ServeCommand.self, SignCommand.self, CompareCommand.self,
        ]
    )

    /// `osprey 0.2.0` and the codec libraries it runs on, one per line.
    static var versionText: String {
        // Appended line by line: `joined(separator:)` is generic code that costs a metadata look-up at every start.
        var text = "osprey \(OspreyVersion.current)"
        for library in CodecLibraries.all { text += "\n  " + library.name + " " + library.version }
        return text
    }

    static func main() async {
        await CommandLineEntry.run(Self.self)
    }
}
