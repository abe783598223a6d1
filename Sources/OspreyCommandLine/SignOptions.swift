package import ArgumentParser

/// `osprey sign`'s arguments, declared once for both executables, as ``ServeOptions`` are: `osprey` parses them and
/// hands the command line to `osprey-proxy`, which signs with the proxy's own parameter checks.
package struct SignOptions: ParsableArguments {
    /// The command's name, abstract and help text, for both executables.
    package static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Print a signed /img path or URL for a source and parameters, as osprey serve checks them.",
        discussion: """
            The parameters are checked as the server checks them, so a URL that would be refused (an unknown \
            parameter, a value out of range) is not printed. The secret is --secret or the first of $OSPREY_SECRET \
            (comma-separated, as osprey serve reads it): the one that signs.

            Examples:
              OSPREY_SECRET=... osprey sign https://example.com/cat.jpg w=300 h=200 fit=cover
              osprey sign https://example.com/cat.jpg w=300 format=auto --base https://img.example.com --expires-in 3600
            """
    )

    @Argument(help: "The source image's URL (http or https).")
    package var source: String

    @Argument(help: "Parameters as NAME=VALUE: w=300 h=200 fit=cover format=webp q=75 ...")
    package var parameters: [String] = []

    @Option(help: "The signing secret (default: the first of $OSPREY_SECRET). Prefer the variable: flags show in ps.")
    package var secret: String?

    @Option(help: "The proxy's address, to print a whole URL: https://img.example.com (default: the path alone).")
    package var base: String?

    @Option(
        help: "Expire the URL this many seconds from now: the server answers 410 after (exp=).",
        transform: DecimalArgument.integer)
    package var expiresIn: Int?

    @Option(help: "Expire the URL at this Unix time, in seconds (exp=).", transform: DecimalArgument.integer)
    package var expiresAt: Int?

    @Option(
        name: .customLong("preset"),
        help: "A preset the server has, to check p= against: as osprey serve --preset (default: $OSPREY_PRESETS).")
    package var presetSpecifications: [String] = []

    package func validate() throws {
        guard expiresIn == nil || expiresAt == nil else {
            throw ValidationError("give --expires-in or --expires-at, not both")
        }
        if let expiresIn, expiresIn < 0 { throw ValidationError("--expires-in must be at least 0") }
    }

    package init() {}
}
