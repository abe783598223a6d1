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
        let base = self.base.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 } ?? ""
        do {
            let presets = try ServeOptions.presets(flags: presetSpecifications, environment: environment)
            if let widths = try srcsetWidths {
                let markup = try ResponsiveImage(
                    source: source, parameters: Array(pairs.dropFirst()), widths: widths, sizes: sizes,
                    signer: signer, base: base, presets: presets)
                return picture ? markup.picture(alt: alt ?? "") : markup.attributes()
            }
            if info {
                try ImageQuery.checkInfo(pairs)
            } else {
                try ImageQuery.check(pairs, presets: presets)
            }
        } catch let error as InvalidImageQuery {
            throw ValidationError(error.message)
        }
        return base + signer.signedPath(info ? "/info" : "/img", parameters: pairs)
    }
}
