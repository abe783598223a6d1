import FoundationEssentials
import NIOCore

/// The forward proxies downloads go through, read as curl reads them: `http_proxy` for `http` URLs (the request in
/// absolute form), `https_proxy` or `HTTPS_PROXY` for `https` ones (a `CONNECT` tunnel, TLS end to end), and
/// `no_proxy` or `NO_PROXY` for the hosts that are asked directly. Like curl, the upper-case `HTTP_PROXY` is not read:
/// a CGI program gets it from a request's `Proxy:` header.
///
/// ```swift
/// var configuration = ImageDownloader.Configuration()
/// configuration.proxies = try EgressProxies(environment: ProcessInfo.processInfo.environment)
/// ```
///
/// An address resolver (``ImageDownloader/Configuration/addressResolver``) still decides every destination: Osprey
/// resolves and checks it before it asks the proxy, and asks for the address it checked, so a proxy is never used to
/// reach what would be refused directly. The proxy's own address is the operator's choice and is not checked.
public struct EgressProxies: Sendable, Hashable {
    /// One proxy: an `http://` URL's host and port (1080 when it names none, as curl's default), and the
    /// credentials it carries, sent as `Proxy-Authorization: Basic`.
    public struct Proxy: Sendable, Hashable, CustomStringConvertible {
        /// The proxy's host name or address.
        public var host: String
        /// The proxy's port.
        public var port: Int
        /// The user name of the proxy's Basic authentication, if it asks for one.
        public var user: String?
        /// The password of the proxy's Basic authentication.
        public var password: String?

        /// Makes a proxy at `host`:`port`, with credentials when given.
        public init(host: String, port: Int = 1080, user: String? = nil, password: String? = nil) {
            self.host = host
            self.port = port
            self.user = user
            self.password = password
        }

        /// Reads `http://[user:password@]host[:port][/]` or `host[:port]`.
        ///
        /// - Throws: ``ParseError`` for another scheme (an `https://` proxy, SOCKS), a path, or no host.
        public init(url text: String) throws(ParseError) {
            let trimmed = text.trimmingWhitespace()
            let withScheme = trimmed.contains("://") ? trimmed : "http://" + trimmed
            guard let url = URL(string: withScheme), let host = url.host(percentEncoded: false), !host.isEmpty else {
                throw ParseError(value: text, reason: "not a proxy URL")
            }
            guard url.scheme?.lowercased() == "http" else {
                throw ParseError(value: text, reason: "only http:// proxies are supported")
            }
            guard url.path.isEmpty || url.path == "/", url.query == nil else {
                throw ParseError(value: text, reason: "a proxy URL has no path")
            }
            guard (url.port ?? 1080) > 0 && (url.port ?? 1080) <= 65535 else {
                throw ParseError(value: text, reason: "the port is outside 1-65535")
            }
            self.init(
                host: host, port: url.port ?? 1080, user: url.user(percentEncoded: false),
                password: url.password(percentEncoded: false))
        }

        /// The `Proxy-Authorization` header's value, when the proxy has credentials.
        var authorization: String? {
            guard let user else { return nil }
            return ImageDownloader.basicAuthorization(user, password ?? "")
        }

        /// The value as logs and messages print it.
        public var description: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
    }

    /// A proxy setting that cannot be used, naming it and why.
    public struct ParseError: Error, Sendable, CustomStringConvertible {
        /// The setting as given.
        public let value: String
        /// Why it is not a proxy URL.
        public let reason: String

        /// What went wrong, in a sentence for logs and error messages.
        public var description: String { "cannot use the proxy '\(value)': \(reason)" }
    }

    /// The proxy of `http` URLs; `nil`, none.
    public var http: Proxy?
    /// The proxy of `https` URLs; `nil`, none.
    public var https: Proxy?
    /// `no_proxy`'s entries: `*` (every host), a host name that also covers its subdomains (a leading dot or not), an
    /// IP address, or an IPv4 or IPv6 network in CIDR form.
    public var exclusions: [String]

    /// Makes the proxies for `http` and `https` destinations, and the hosts that bypass them (`no_proxy`'s forms).
    public init(http: Proxy? = nil, https: Proxy? = nil, exclusions: [String] = []) {
        self.http = http
        self.https = https
        self.exclusions = exclusions
    }

    /// The proxies `environment` names as curl reads them; none when it names none.
    public init(environment: [String: String]) throws(ParseError) {
        func value(_ names: String...) -> String? {
            names.lazy.compactMap { environment[$0] }.first { !$0.trimmingWhitespace().isEmpty }
        }
        self.init(
            http: try value("http_proxy").map { text throws(ParseError) in try Proxy(url: text) },
            https: try value("https_proxy", "HTTPS_PROXY").map { text throws(ParseError) in try Proxy(url: text) },
            exclusions: (value("no_proxy", "NO_PROXY") ?? "").split(separator: ",").map { $0.trimmingWhitespace() }
                .filter { !$0.isEmpty })
    }

    /// Whether any proxy is set.
    public var isEmpty: Bool { http == nil && https == nil }

    /// The proxy a URL of `scheme` on `host` goes through, or `nil` to connect directly.
    public func proxy(scheme: String, host: String) -> Proxy? {
        guard let proxy = scheme.lowercased() == "https" ? https : http else { return nil }
        return isExcluded(host) ? nil : proxy
    }

    /// Whether `no_proxy` sends `host` directly.
    func isExcluded(_ host: String) -> Bool {
        let host = Self.bare(host.lowercased())
        return exclusions.contains { entry in
            if entry == "*" { return true }
            let entry = entry.lowercased()
            if let (network, bits) = Self.network(entry) {
                return Self.address(host).map { Self.prefix(of: $0, equals: network, bits: bits) } ?? false
            }
            let name = Self.bare(entry)
            if let address = Self.address(host), let excluded = Self.address(name) { return address == excluded }
            return host == name || host.hasSuffix("." + name)
        }
    }

    /// A name without its leading and trailing dots (`.example.com.` is `example.com`).
    private static func bare(_ name: String) -> String {
        String(name.drop { $0 == "." }.reversed().drop { $0 == "." }.reversed())
    }

    /// The bytes of an IPv4 or IPv6 address (brackets allowed), or `nil` for a name.
    private static func address(_ text: String) -> [UInt8]? {
        let bare = text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
        guard let address = try? SocketAddress(ipAddress: bare, port: 0) else { return nil }
        // The address's bytes where `sockaddr_in` (family, port, then 4 bytes) and `sockaddr_in6` (family, port,
        // flow label, then 16 bytes) keep them.
        let range: Range<Int>
        switch address.protocol {
        case .inet: range = 4..<8
        case .inet6: range = 8..<24
        default: return nil
        }
        return address.withSockAddr { pointer, size in
            guard size >= range.upperBound else { return nil }
            return Array(UnsafeRawBufferPointer(start: pointer, count: size)[range])
        }
    }

    /// An entry `ADDRESS/BITS` as the address's bytes and the prefix length.
    private static func network(_ entry: String) -> ([UInt8], Int)? {
        let parts = entry.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let bits = Int(parts[1]), let network = address(String(parts[0])),
            (0...network.count * 8).contains(bits)
        else { return nil }
        return (network, bits)
    }

    private static func prefix(of address: [UInt8], equals network: [UInt8], bits: Int) -> Bool {
        guard address.count == network.count else { return false }
        for bit in 0..<bits where (address[bit / 8] ^ network[bit / 8]) & (0x80 >> UInt8(bit % 8)) != 0 {
            return false
        }
        return true
    }
}
