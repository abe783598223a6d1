import ArgumentParser
import FoundationEssentials
import Osprey
import OspreyServer

/// `osprey sign`: a signed `/img` path or URL, in the canonical form `osprey serve` checks (docs/serve.md).
struct SignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
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
    var source: String

    @Argument(help: "Parameters as NAME=VALUE: w=300 h=200 fit=cover format=webp q=75 ...")
    var parameters: [String] = []

    @Option(help: "The signing secret (default: the first of $OSPREY_SECRET). Prefer the variable: flags show in ps.")
    var secret: String?

    @Option(help: "The proxy's address, to print a whole URL: https://img.example.com (default: the path alone).")
    var base: String?

    @Option(help: "Expire the URL this many seconds from now: the server answers 410 after (exp=).")
    var expiresIn: Int?

    @Option(help: "Expire the URL at this Unix time, in seconds (exp=).")
    var expiresAt: Int?

    @Option(
        name: .customLong("preset"),
        help: "A preset the server has, to check p= against: as osprey serve --preset (default: $OSPREY_PRESETS).")
    var presetSpecifications: [String] = []

    func validate() throws {
        guard expiresIn == nil || expiresAt == nil else {
            throw ValidationError("give --expires-in or --expires-at, not both")
        }
        if let expiresIn, expiresIn < 0 { throw ValidationError("--expires-in must be at least 0") }
    }

    func run() throws {
        print(try signed(environment: ProcessInfo.processInfo.environment, now: .now))
    }

    /// The signed path (or URL, with `--base`) for the arguments, with `environment` for the secret and `now` for
    /// `--expires-in`.
    func signed(environment: [String: String], now: UnixTime) throws -> String {
        let secrets = ServeCommand.secrets(flags: secret.map { [$0] } ?? [], environment: environment)
        guard let signer = URLSigner(secrets: secrets) else {
            throw ValidationError("give the secret that signs: --secret or OSPREY_SECRET")
        }
        var pairs: [(name: String, value: String)] = [("url", source)]
        for parameter in parameters {
            guard let equals = parameter.firstIndex(of: "="), equals != parameter.startIndex else {
                throw ValidationError("'\(parameter)' is not NAME=VALUE")
            }
            let name = String(parameter[..<equals])
            guard !["url", "sig", "exp"].contains(name) else {
                throw ValidationError(
                    "'\(name)' is set by osprey sign itself: give the source, --expires-in or --expires-at")
            }
            pairs.append((name, String(parameter[parameter.index(after: equals)...])))
        }
        if let expiresAt {
            pairs.append(("exp", String(expiresAt)))
        } else if let expiresIn {
            pairs.append(("exp", String(Int(now.seconds.rounded(.down)) + expiresIn)))
        }
        do {
            let presets = try ServeCommand.presets(flags: presetSpecifications, environment: environment)
            try ImageQuery.check(pairs, presets: presets)
        } catch {
            throw ValidationError(error.message)
        }
        let path = signer.signedPath("/img", parameters: pairs)
        guard let base else { return path }
        return (base.hasSuffix("/") ? String(base.dropLast()) : base) + path
    }
}
