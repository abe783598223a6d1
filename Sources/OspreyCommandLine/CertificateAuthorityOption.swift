package import ArgumentParser
import FoundationEssentials
package import Osprey
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
        let version = Self.version(of: path)
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

    /// What identifies one content of a file: its inode, size and modification time.
    private struct FileVersion: Equatable {
        var inode: UInt
        var size: Int
        var modified: timespec

        static func == (a: Self, b: Self) -> Bool {
            (a.inode, a.size, a.modified.tv_sec, a.modified.tv_nsec)
                == (b.inode, b.size, b.modified.tv_sec, b.modified.tv_nsec)
        }
    }

    private static let loaded = Mutex<[String: (version: FileVersion, authorities: CertificateAuthorities)]>([:])

    private static func version(of path: String) -> FileVersion? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return FileVersion(inode: UInt(status.st_ino), size: Int(status.st_size), modified: status.st_mtim)
    }
}
