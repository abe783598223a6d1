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

    /// The first value of the header `name` (case-insensitive), or `nil`.
    public func header(_ name: String) -> String? {
        let name = name.lowercased()
        return headers.first { $0.name.lowercased() == name }?.value
    }
}
