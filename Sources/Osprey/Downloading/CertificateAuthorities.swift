import FoundationEssentials
internal import NIOSSL

/// The certificate authorities an `https` origin's certificate must chain to: the system's bundle, or the ones in a
/// PEM file (a private CA, a corporate one), which then replace the system's as curl's `--cacert` does.
///
/// ```swift
/// var configuration = ImageDownloader.Configuration()
/// configuration.certificateAuthorities = try CertificateAuthorities(pemFile: "/etc/osprey/internal-ca.pem")
/// ```
public struct CertificateAuthorities: Sendable, CustomStringConvertible {
    /// What a PEM file could not give.
    public struct LoadingError: Error, Sendable, CustomStringConvertible {
        /// The file's path.
        public let path: String
        /// Why it gave no certificate.
        public let reason: String

        /// What went wrong, in a sentence for logs and error messages.
        public var description: String { "cannot read certificate authorities from '\(path)': \(reason)" }
    }

    enum Source {
        case system
        case file(path: String, certificates: [NIOSSLCertificate])
    }

    let source: Source

    /// The system's bundle (on Debian and Ubuntu `/etc/ssl/certs/ca-certificates.crt`).
    public static let system = CertificateAuthorities(source: .system)

    private init(source: Source) {
        self.source = source
    }

    /// The certificates of the PEM file at `path`, read now: a missing, unreadable or empty file is an error here,
    /// not a failure of every download later.
    public init(pemFile path: String) throws(LoadingError) {
        guard FileManager.default.isReadableFile(atPath: path) else {
            let exists = FileManager.default.fileExists(atPath: path)
            throw LoadingError(path: path, reason: exists ? "permission denied" : "no such file")
        }
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            throw LoadingError(path: path, reason: "not a PEM file of certificates (\(error))")
        }
        guard !certificates.isEmpty else { throw LoadingError(path: path, reason: "no certificate in it") }
        self.init(source: .file(path: path, certificates: certificates))
    }

    /// The PEM file these come from, or `nil` for the system's bundle.
    public var path: String? {
        if case .file(let path, _) = source { return path }
        return nil
    }

    /// The value as logs and messages print it.
    public var description: String { path ?? "the system's certificate authorities" }

    /// A client TLS configuration that trusts these.
    var tlsConfiguration: TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if case .file(_, let certificates) = source { tls.trustRoots = .certificates(certificates) }
        return tls
    }
}
