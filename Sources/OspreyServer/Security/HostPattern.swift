/// An allowed source host for the proxy's `--allow-host`: an exact name (`images.example.com`) or every subdomain of
/// one (`*.example.com`, which does not match `example.com` itself: list it too). Case-insensitive; a trailing dot
/// is ignored.
public struct HostPattern: Hashable, Sendable, CustomStringConvertible {
    /// The name, lower-cased, without the `*.`.
    public let domain: String
    /// Whether it stands for the subdomains of ``domain`` rather than the name itself.
    public let matchesSubdomains: Bool

    /// Parses `pattern`; `nil` for an empty name, a `*` anywhere but a leading `*.`, or characters a host name
    /// cannot have.
    public init?(_ pattern: String) {
        var text = Self.normalized(pattern)
        let wildcard = text.hasPrefix("*.")
        if wildcard { text.removeFirst(2) }
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-.")
        guard !text.isEmpty, text.allSatisfy({ allowed.contains($0) }), !text.hasPrefix("."), !text.contains("..")
        else { return nil }
        domain = text
        matchesSubdomains = wildcard
    }

    /// Whether `host` is allowed by this pattern.
    public func matches(_ host: String) -> Bool {
        let host = Self.normalized(host)
        return matchesSubdomains ? host.hasSuffix("." + domain) : host == domain
    }

    public var description: String { (matchesSubdomains ? "*." : "") + domain }

    private static func normalized(_ name: String) -> String {
        var name = name.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }
}
