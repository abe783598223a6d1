package import ArgumentParser
import FoundationEssentials
package import Osprey
import Synchronization

/// `--ca-file FILE`: the certificate authorities `https` origins must chain to, for every command that downloads. The
/// flag overrides `OSPREY_CA_FILE`, which overrides `SSL_CERT_FILE` (honoured as curl honours it), which overrides the
/// system's bundle. A file replaces the system's authorities, as curl's `--cacert` does.
package struct CertificateAuthorityOption: ParsableArguments {
    @Option(
        name: .customLong("ca-file"),
        help: ArgumentHelp(
            "PEM file of the certificate authorities https origins must chain to, instead of the system's.",
            discussion: "Default: $OSPREY_CA_FILE, else $SSL_CERT_FILE, else the system's bundle.",
            valueName: "file"))
    package var path: String?

    package init() {}

    /// The path the flag or `environment` names, if any.
    package func resolvedPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        path ?? ["OSPREY_CA_FILE", "SSL_CERT_FILE"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
    }

    /// The authorities the flag, `environment` or the system give; a file that gives none is a usage error.
    package func resolved(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> CertificateAuthorities {
        guard let path = resolvedPath(environment: environment) else { return .system }
        // A command resolves its options when it validates them and again when it runs: the file (the system's
        // whole bundle, when SSL_CERT_FILE names it) is parsed once, unless it changed in between.
        let version = FileSystem.stamp(of: path)
        if let version, let loaded = Self.loaded.withLock({ $0[path] }), loaded.version == version {
            return loaded.authorities
        }
        do {
            let authorities = try CertificateAuthorities(pemFile: path)
            if let version { Self.loaded.withLock { $0[path] = (version, authorities) } }
            return authorities
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// The files read so far, each with the version read.
    private static let loaded = Mutex<[String: (version: FileSystem.Stamp, authorities: CertificateAuthorities)]>([:])
}
