/// Every error the `Osprey` library reports to its callers.
public enum OspreyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The URL cannot be loaded; it was never sent to the network.
    case invalidURL(String, reason: InvalidURLReason)

    /// The disk cache could not store `key` because the disk (or the user's quota) is full. Nothing already stored
    /// was lost.
    case diskFull(key: String)

    /// The disk cache could not store `key`: `reason` is the system's message. Nothing already stored was lost.
    case cacheWriteFailed(key: String, reason: String)

    /// Why a URL was refused.
    public enum InvalidURLReason: Sendable, Hashable, CustomStringConvertible {
        /// The string is empty.
        case empty
        /// The string does not parse as a URL.
        case malformed
        /// The URL has no scheme (it is relative).
        case notAbsolute
        /// The scheme is not `http` or `https`.
        case unsupportedScheme(String)
        /// The URL names no host.
        case missingHost
        /// The host is neither a DNS name nor an IP address: it holds control characters, spaces, slashes or other
        /// characters no host name has (percent-encoded or not), or it is not ASCII (give an international name in
        /// its `xn--` form).
        case invalidHost
        /// The port is not in 1–65535.
        case invalidPort

        public var description: String {
            switch self {
            case .empty: "the URL is empty"
            case .malformed: "not a URL"
            case .notAbsolute: "not an absolute URL"
            case .unsupportedScheme(let scheme): "unsupported scheme '\(scheme)' (only http and https are loaded)"
            case .missingHost: "the URL has no host"
            case .invalidHost: "the host is not a valid host name or IP address"
            case .invalidPort: "the port is not between 1 and 65535"
            }
        }
    }

    /// A label without associated values, for metrics and logs.
    public var shortDescription: String {
        switch self {
        case .invalidURL: "invalidURL"
        case .diskFull: "diskFull"
        case .cacheWriteFailed: "cacheWriteFailed"
        }
    }

    public var description: String {
        switch self {
        case .invalidURL(let url, let reason): "invalid URL '\(url)': \(reason)"
        case .diskFull(let key): "cannot cache '\(key)': the disk is full"
        case .cacheWriteFailed(let key, let reason): "cannot cache '\(key)': \(reason)"
        }
    }
}
