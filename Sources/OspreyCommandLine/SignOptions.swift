package import ArgumentParser
import Osprey

/// `osprey sign`'s arguments, declared once for both executables, as ``ServeOptions`` are: `osprey` parses them and
/// hands the command line to `osprey-proxy`, which signs with the proxy's own parameter checks.
package struct SignOptions: ParsableArguments {
    /// The command's name, abstract and help text, for both executables.
    package static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Print a signed /img or /info URL, or a srcset of them, for a source, as osprey serve checks them.",
        discussion: """
            The parameters are checked as the server checks them, so a URL that would be refused (an unknown \
            parameter, a value out of range) is not printed. The secret is --secret or the first of $OSPREY_SECRET \
            (comma-separated, as osprey serve reads it): the one that signs.

            Examples:
              OSPREY_SECRET=... osprey sign https://example.com/cat.jpg w=300 h=200 fit=cover
              osprey sign https://example.com/cat.jpg w=300 format=auto --base https://img.example.com --expires-in 3600
              osprey sign https://example.com/cat.jpg q=75 --srcset 320,640,1280 --sizes '(max-width: 700px) 100vw, 700px'
              osprey sign https://example.com/cat.jpg --srcset 480,960 --picture --alt 'A cat'
              osprey sign https://example.com/cat.jpg --info bh=4:3
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

    @Option(
        help: """
            Print a srcset of signed URLs instead, one candidate per width: --srcset 320,640,1280 (w is set per \
            candidate: give neither w, h nor dpr).
            """)
    package var srcset: String?

    @Option(help: "With --srcset, the sizes attribute to print beside it: '(max-width: 700px) 100vw, 700px'.")
    package var sizes: String?

    @Flag(help: "With --srcset, print a <picture> element: AVIF and WebP sources before a JPEG <img>.")
    package var picture = false

    @Option(help: "With --picture, the <img>'s alt text.")
    package var alt: String?

    @Flag(help: "Sign an /info URL (parameters bh and colors) instead of an /img one.")
    package var info = false

    /// The widths of ``srcset``.
    package var srcsetWidths: [Int]? {
        get throws {
            guard let srcset else { return nil }
            return try srcset.split(separator: ",", omittingEmptySubsequences: false).map { item in
                guard let width = DecimalText.integer(item), (1...16384).contains(width) else {
                    throw ValidationError("--srcset takes widths from 1 to 16384, separated by commas: not '\(item)'")
                }
                return width
            }
        }
    }

    package func validate() throws {
        if srcset == nil, sizes != nil || picture || alt != nil {
            throw ValidationError("--sizes, --picture and --alt go with --srcset")
        }
        if info, srcset != nil { throw ValidationError("--info signs one /info URL: it takes no --srcset") }
        if alt != nil, !picture { throw ValidationError("--alt goes with --picture") }
        _ = try srcsetWidths
        guard expiresIn == nil || expiresAt == nil else {
            throw ValidationError("give --expires-in or --expires-at, not both")
        }
        if let expiresIn, expiresIn < 0 { throw ValidationError("--expires-in must be at least 0") }
    }

    package init() {}
}
