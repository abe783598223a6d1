import NIOHTTP1

/// A request the ``OriginServer`` received, as it arrived.
public struct RecordedRequest: Sendable {
    /// `GET`, `HEAD`, ...
    public let method: String
    /// The request target: path and query.
    public let uri: String
    /// The path, without the query.
    public let path: String
    /// The headers in the order they arrived.
    public let headers: [(name: String, value: String)]
    /// The protocol: `HTTP/1.1`, `HTTP/1.0` or `HTTP/2.0`.
    public let httpVersion: String

    /// The first value of the header `name` (case-insensitive), or `nil`.
    public func header(_ name: String) -> String? {
        let name = name.lowercased()
        return headers.first { $0.name.lowercased() == name }?.value
    }

    /// Records `head`, as an HTTP/1.1 decoder or an HTTP/2 stream codec produced it.
    init(_ head: HTTPRequestHead) {
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
        self.method = head.method.rawValue
        self.uri = head.uri
        self.path = path ?? head.uri
        self.headers = head.headers.map { ($0.name, $0.value) }
        self.httpVersion = "HTTP/\(head.version.major).\(head.version.minor)"
    }
}
