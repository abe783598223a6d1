public import Foundation

/// What to load: an absolute `http` or `https` URL.
///
/// A string that is empty, not a URL, relative, of another scheme, or without a host fails at once with
/// ``OspreyError/invalidURL(_:reason:)`` and never reaches the network (MISSION M1).
///
/// ```swift
/// let request = try ImageRequest(string: "https://example.com/cat.jpg")
/// ```
public struct ImageRequest: Sendable, Hashable {
    /// The URL to load.
    public let url: URL

    /// Makes a request for `url`.
    ///
    /// - Throws: ``OspreyError/invalidURL(_:reason:)`` when `url` is not an absolute `http`/`https` URL with a host.
    public init(url: URL) throws(OspreyError) {
        try Self.validate(url, original: url.absoluteString)
        self.url = url
    }

    /// Makes a request for the URL in `string`.
    ///
    /// - Throws: ``OspreyError/invalidURL(_:reason:)`` when `string` is empty or not an absolute `http`/`https` URL
    ///   with a host.
    public init(string: String) throws(OspreyError) {
        guard !string.isEmpty else { throw .invalidURL(string, reason: .empty) }
        guard let url = URL(string: string) else { throw .invalidURL(string, reason: .malformed) }
        try Self.validate(url, original: string)
        self.url = url
    }

    private static func validate(_ url: URL, original: String) throws(OspreyError) {
        guard let scheme = url.scheme?.lowercased() else { throw .invalidURL(original, reason: .notAbsolute) }
        guard scheme == "http" || scheme == "https" else {
            throw .invalidURL(original, reason: .unsupportedScheme(scheme))
        }
        guard let host = url.host(percentEncoded: false), !host.isEmpty else {
            throw .invalidURL(original, reason: .missingHost)
        }
    }
}
