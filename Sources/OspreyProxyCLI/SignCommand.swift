import ArgumentParser
import FoundationEssentials
import Osprey
import OspreyCodecs
import OspreyCommandLine
import OspreyServer

/// `osprey sign`: a signed `/img` path or URL, in the canonical form `osprey serve` checks (docs/serve.md).
struct SignCommand: ParsableCommand {
    static let configuration = SignOptions.configuration

    @OptionGroup var options: SignOptions

    func run() throws {
        print(try options.signed(environment: ProcessInfo.processInfo.environment, now: .now))
    }
}

extension SignOptions {
    /// The signed path (or URL, with `--base`) for the arguments, with `environment` for the secret and `now` for
    /// `--expires-in`.
    func signed(environment: [String: String], now: UnixTime) throws -> String {
        let secrets = ServeOptions.secrets(flags: secret.map { [$0] } ?? [], environment: environment)
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
            // Checked: a huge --expires-in is a usage error (the server takes no exp past the year 9999), not a trap.
            let (expires, overflow) = Int(saturating: now.seconds.rounded(.down)).addingReportingOverflow(expiresIn)
            guard !overflow else { throw ValidationError("--expires-in \(expiresIn) is past the year 9999") }
            pairs.append(("exp", String(expires)))
        }
        do {
            let presets = try ServeOptions.presets(flags: presetSpecifications, environment: environment)
            try ImageQuery.check(pairs, presets: presets)
        } catch {
            throw ValidationError(error.message)
        }
        let path = signer.signedPath("/img", parameters: pairs)
        guard let base else { return path }
        return (base.hasSuffix("/") ? String(base.dropLast()) : base) + path
    }
}
