/// Chooses the address each connection of a download goes to, or refuses it: the hook an image proxy uses against
/// server-side request forgery (``ImageDownloader/Configuration/addressResolver``).
///
/// The downloader asks before every hop of a transfer (the requested URL and each redirect) and then connects to
/// exactly the address returned, so what was checked is what is connected to: a name that resolves to a public
/// address when checked and to a private one a moment later (DNS rebinding) cannot slip through. TLS still verifies
/// the certificate for the host name, and the `Host` header keeps it.
///
/// ```swift
/// struct PublicOnly: AddressResolving {
///     func address(forHost host: String, port: Int) async throws(DownloadError) -> String {
///         let address = try await lookUp(host)            // getaddrinfo, say
///         guard isPublic(address) else { throw .addressRefused(host: host, reason: "private address") }
///         return address
///     }
/// }
/// ```
public protocol AddressResolving: Sendable {
    /// The IPv4 or IPv6 literal to connect to for `host` (a name or a literal, as the URL has it) on `port`.
    ///
    /// - Throws: ``DownloadError/addressRefused(host:reason:)`` to refuse the connection, or
    ///   ``DownloadError/cannotConnect(reason:)`` when the name does not resolve.
    func address(forHost host: String, port: Int) async throws(DownloadError) -> String
}
