/// How `osprey serve` listens.
public struct ServerConfiguration: Sendable {
    // MARK: Listening

    /// The address to bind. `127.0.0.1` by default; `0.0.0.0` to listen on every interface.
    public var host: String = "127.0.0.1"
    /// The TCP port. 8080 by default; 0 lets the system pick a free one.
    public var port: Int = 8080

    /// Makes a configuration; every parameter defaults as documented on its property.
    public init(host: String = "127.0.0.1", port: Int = 8080) {
        self.host = host
        self.port = port
    }
}
