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
        guard !text.isEmpty, Self.isHostName(text), !text.hasPrefix("."), !text.contains("..") else { return nil }
        domain = text
        matchesSubdomains = wildcard
    }

    /// Whether `host` is allowed by this pattern. A host with characters no host name has (a NUL, a slash, a space)
    /// matches nothing, whatever its ending.
    public func matches(_ host: String) -> Bool {
        let host = Self.normalized(host)
        guard Self.isHostName(host) else { return false }
        return matchesSubdomains ? host.hasSuffix("." + domain) : host == domain
    }

    /// Whether `name` (lower-cased) has only the characters of a host name: letters, digits, `-`, `_` and `.`.
    private static func isHostName(_ name: String) -> Bool {
        name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
        }
    }

    /// The value as logs and messages print it.
    public var description: String { (matchesSubdomains ? "*." : "") + domain }

    private static func normalized(_ name: String) -> String {
        var name = name.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }
}
