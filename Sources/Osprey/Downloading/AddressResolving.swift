internal import AsyncHTTPClient
import Synchronization

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

/// HTTP clients that connect a host name to one chosen address (AsyncHTTPClient's `dnsOverride`), one per host and
/// address, so connections to a pinned address are pooled and reused like any other. At most `capacity` are kept;
/// the least recently used one past that is shut down once a transfer started on it must have ended.
final class PinnedClients: Sendable {
    private struct Table {
        var clients: [String: HTTPClient] = [:]
        /// Keys, least recently used first.
        var order: [String] = []
        var isShutDown = false
    }

    private let capacity: Int
    /// How long an evicted client lives on for the transfers that may still be using it.
    private let retirement: Duration
    private let make: @Sendable (_ dnsOverride: [String: String]) -> HTTPClient
    private let table = Mutex(Table())

    init(
        capacity: Int = 64, retirement: Duration,
        make: @escaping @Sendable (_ dnsOverride: [String: String]) -> HTTPClient
    ) {
        self.capacity = capacity
        self.retirement = retirement
        self.make = make
    }

    /// The client that connects `host` to `address`; `nil` once shut down.
    func client(host: String, address: String) -> HTTPClient? {
        let key = host + "\u{0}" + address
        let (client, evicted) = table.withLock { table -> (HTTPClient?, [HTTPClient]) in
            guard !table.isShutDown else { return (nil, []) }
            if let client = table.clients[key] {
                if let index = table.order.lastIndex(of: key), index != table.order.count - 1 {
                    table.order.remove(at: index)
                    table.order.append(key)
                }
                return (client, [])
            }
            let client = make([host: address])
            table.clients[key] = client
            table.order.append(key)
            var evicted: [HTTPClient] = []
            while table.order.count > capacity {
                let oldest = table.order.removeFirst()
                if let old = table.clients.removeValue(forKey: oldest) { evicted.append(old) }
            }
            return (client, evicted)
        }
        if !evicted.isEmpty {
            Task { [retirement] in
                try? await Task.sleep(for: retirement)
                for client in evicted { try? await client.shutdown() }
            }
        }
        return client
    }

    /// Shuts every client down; later calls to ``client(host:address:)`` return `nil`.
    func shutdown() async {
        let clients = table.withLock { table in
            table.isShutDown = true
            defer { table.clients.removeAll() }
            return Array(table.clients.values)
        }
        for client in clients { try? await client.shutdown() }
    }
}
