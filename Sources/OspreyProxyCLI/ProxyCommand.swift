import ArgumentParser
import Osprey
import OspreyCommandLine

/// `osprey-proxy`: `osprey serve` and `osprey sign`, run by `osprey` in its place (its `ProxyExecutable`), and the
/// only executable that links the server. Its commands are named and parsed exactly as `osprey`'s, whose help,
/// manual page and completions describe them.
@main
struct ProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "osprey",
        abstract: "The image proxy's commands of osprey (serve, sign), which osprey runs through this executable.",
        version: "osprey \(OspreyVersion.current)",
        subcommands: [ServeCommand.self, SignCommand.self]
    )

    static func main() async {
        await CommandLineEntry.run(Self.self)
    }
}
