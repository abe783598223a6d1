public import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What the downloader accepts as a URL, checked without any request type: the downloader validates with it, and
/// ``ImageRequest`` does too, before a load reaches the network.
enum URLValidation {
    /// Checks that `url` can be sent to the network: scheme `http` or `https`, a host that is a DNS name (ASCII
    /// letters, digits, `-`, `_` and `.`, after percent-decoding) or an IP address, and no port, an empty one, or one
    /// in 1–65535.
    ///
    /// Every URL the downloader connects to passes here first: requests, and the target of every redirect. Foundation
    /// parses `http://host:99999/` and `http://evil%00.example.com/` without complaint; the HTTP client below traps
    /// on the first and resolves the second as `evil`, while `*.example.com` would have matched it.
    ///
    /// - Throws: ``ImageError/invalidURL(_:reason:)`` saying what is wrong.
    static func validate(_ url: URL) throws(ImageError) {
        try validate(url, original: url.absoluteString)
    }

    static func validate(_ url: URL, original: String) throws(ImageError) {
        guard let scheme = url.scheme?.lowercased() else { throw .invalidURL(original, reason: .notAbsolute) }
        guard scheme == "http" || scheme == "https" else {
            throw .invalidURL(original, reason: .unsupportedScheme(scheme))
        }
        guard let host = url.host(percentEncoded: false), !host.isEmpty else {
            throw .invalidURL(original, reason: .missingHost)
        }
        guard isValidHost(host) else { throw .invalidURL(original, reason: .invalidHost) }
        guard hasValidPort(url) else { throw .invalidURL(original, reason: .invalidPort) }
    }

    /// Whether `host` (percent-decoded) is a DNS name or an IP address. Only a bracketed IPv6 literal has colons;
    /// a zone index (`%eth0`) is refused with the rest.
    static func isValidHost(_ host: String) -> Bool {
        if host.utf8.contains(UInt8(ascii: ":")) {
            var address = (UInt64(0), UInt64(0))  // the 16 bytes of an in6_addr
            return withUnsafeMutableBytes(of: &address) { inet_pton(AF_INET6, host, $0.baseAddress) } == 1
        }
        return host.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                true
            default:
                false
            }
        }
    }

    /// Whether the port `url` names, if any, is one a socket can have. Foundation reports an out-of-range port as
    /// it is (`99999`) and one too long for an `Int` as none at all, so the authority's text is read too.
    static func hasValidPort(_ url: URL) -> Bool {
        if let port = url.port { return (1...65535).contains(port) }
        guard let text = portText(of: url.absoluteString) else { return true }
        return text.isEmpty  // "http://host:/" names the scheme's default port.
    }

    /// What follows the host's colon in the authority of `absolute`, or `nil` when it names no port.
    private static func portText(of absolute: String) -> Substring? {
        guard let separator = absolute.firstRange(of: "://") else { return nil }
        var authority = absolute[separator.upperBound...]
        if let end = authority.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            authority = authority[..<end]
        }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            authority = authority[authority.index(after: close)...]
        }
        guard let colon = authority.lastIndex(of: ":") else { return nil }
        return authority[authority.index(after: colon)...]
    }
}

extension ImageRequest {
    /// Checks that `url` can be sent to the network, as every request and every redirect target is before it is: scheme
    /// `http` or `https`, a host that is a DNS name (ASCII letters, digits, `-`, `_` and `.`, after percent-decoding)
    /// or an IP address, and no port, an empty one, or one in 1–65535. (Foundation parses `http://host:99999/` and
    /// `http://evil%00.example.com/` without complaint; an HTTP client may trap on the first and resolve the second
    /// as `evil`, which `*.example.com` would have matched.)
    ///
    /// - Throws: ``ImageError/invalidURL(_:reason:)`` saying what is wrong.
    public static func validate(_ url: URL) throws(ImageError) {
        try URLValidation.validate(url)
    }

    static func validate(_ url: URL, original: String) throws(ImageError) {
        try URLValidation.validate(url, original: original)
    }
}
