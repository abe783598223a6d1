import FoundationEssentials
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
internal import NIOSSL
import Synchronization

/// The downloader's HTTP client, for `http` and `https` origins alike: keep-alive HTTP/1.1 connections per origin,
/// one exchange at a time on each, or one HTTP/2 connection an origin multiplexes every transfer over when it offers
/// HTTP/2 in the TLS handshake (ALPN); the body collected on the connection's event loop and handed to the transfer
/// once, whole.
///
/// It replaced AsyncHTTPClient, which the downloader used for `https`, for a tracer and for a per-origin connection
/// limit, so that what production runs (TLS, traced) is what the benchmarks measure. Against AsyncHTTPClient it saves
/// the request's trip through that client's pool state machine and task queue, and a hand-over from the event loop to
/// the transfer's task for every part of the body: `osprey prefetch --memory-only` of 1,000 small images took 98 ms
/// of CPU here, 169 ms through AsyncHTTPClient (docs/benchmarks.md).
///
/// Without a per-origin limit, the number of HTTP/1.1 connections to an origin is the number of transfers to it at
/// once, which the downloader's queue bounds (``ImageDownloader/Configuration/maxConcurrentDownloads``); with one, a
/// transfer past it waits for a connection to come back. A connection that answered whole and keeps alive goes back
/// to its origin's idle list for ``ImageDownloader/Configuration/idleConnectionTimeout``; a request that fails on a
/// reused connection before any answer (the origin closed it meanwhile) is sent once more on a new one.
///
/// An origin's connections all run on one event loop of the group, chosen by the origin's hash (so different origins
/// spread over the loops): one thread then reads every answer of an origin, and it sleeps and wakes less often than
/// two each serving part of them. `osprey prefetch` of 1,000 small images at 6 connections on two cores, medians of
/// 12 runs: CPU 361 → 339 ms, context switches 2,652 → 1,809; `osprey fetch` 503 → 448 ms (docs/benchmarks.md).
final class HTTPConnections: Sendable {
    /// Where a connection goes: the URL's scheme, host and port, the address to connect to (the host's own name unless
    /// an address resolver chose one), and for `https` whether the certificate is checked.
    struct Origin: Hashable, Sendable {
        var isSecure = false
        var host: String
        var port: Int
        var address: String
        /// Checks the origin's certificate against the configured authorities (`https` only).
        var verifiesCertificate = true
        /// The forward proxy the connection goes through: a `CONNECT` tunnel to ``address`` for `https`, requests in
        /// absolute form for `http`.
        var proxy: EgressProxies.Proxy?
    }

    /// The pool's connections, places and waiters: touched only under ``state``'s lock, by this file and
    /// HTTPConnections+Limit.
    struct State {
        var idle: [Origin: [HTTP1Connection]] = [:]
        /// The HTTP/2 connection of each origin that offered HTTP/2: every transfer to it is a stream of it.
        var multiplexed: [Origin: HTTP2Connection] = [:]
        /// Every open connection, idle or not, to close them at shutdown.
        var open: [ObjectIdentifier: any Channel] = [:]
        /// HTTP/1.1 connections open or being opened, per origin, against ``HTTPConnections/connectionsPerOrigin``.
        var counts: [Origin: Int] = [:]
        /// Transfers waiting for a connection to their origin, in arrival order, when it has all it may have.
        var waiting: [Origin: [(id: Int, continuation: CheckedContinuation<Void, any Error>)]] = [:]
        var nextWaiter = 0
        var tlsContexts: [Bool: NIOSSLContext] = [:]
        var isShutDown = false
    }

    /// The most bytes of an unwanted body read to keep its connection; a longer one closes it.
    static let discardLimit = 64 << 10

    private let loops: [any EventLoop]
    private let connectTimeout: TimeAmount
    private let readTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    /// The most HTTP/1.1 connections to one origin; `nil`, as many as transfers to it.
    let connectionsPerOrigin: Int?
    private let certificateAuthorities: CertificateAuthorities
    /// Whether `https` origins are offered HTTP/2 beside HTTP/1.1.
    private let offersHTTP2: Bool
    /// The pool's one lock.
    let state = Mutex(State())

    init(
        group: any EventLoopGroup, connectTimeout: Duration, readTimeout: Duration, idleTimeout: Duration,
        connectionsPerOrigin: Int? = nil, certificateAuthorities: CertificateAuthorities = .system,
        offersHTTP2: Bool = false
    ) {
        self.loops = Array(group.makeIterator())
        self.connectTimeout = TimeAmount(connectTimeout)
        self.readTimeout = TimeAmount(readTimeout)
        self.idleTimeout = TimeAmount(idleTimeout)
        self.connectionsPerOrigin = connectionsPerOrigin.map { max(1, $0) }
        self.certificateAuthorities = certificateAuthorities
        self.offersHTTP2 = offersHTTP2
    }

    /// Sends a GET for `url` to `origin` with `headers` and returns the answer: its head, and its body when
    /// `collectsBody` and the answer is a success (2xx), gathered whole on the event loop with `report` called after
    /// each part; else the exchange to read or discard the body through. A 206 answer's body
    /// continues `initialBody`. At most `limit` bytes of body are taken.
    ///
    /// - Throws: an error of NIO's or a ``DownloadError``, for ``ImageDownloader/classify(_:)``; a
    ///   ``HTTP1Exchange/BrokenBody`` when the connection failed while a collected body came.
    func send(
        _ url: URL, to origin: Origin, headers: HTTPFields, initialBody: [UInt8], limit: Int, collectsBody: Bool,
        report: @escaping @Sendable ([UInt8], Int, Int?) -> Void
    ) async throws -> HTTP1Exchange {
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: Self.target(of: url, to: origin))
        head.headers = HTTPHeaders(headers)
        if !origin.isSecure, let authorization = origin.proxy?.authorization {
            head.headers.replaceOrAdd(name: "Proxy-Authorization", value: authorization)
        }
        if !head.headers.contains(name: "Host") {
            let host = origin.host.contains(":") ? "[" + origin.host + "]" : origin.host
            let defaultPort = origin.isSecure ? 443 : 80
            head.headers.add(name: "Host", value: origin.port == defaultPort ? host : "\(host):\(origin.port)")
        }
        let request = HTTP1Exchange.Request(
            head: head, initialBody: initialBody, limit: limit, collectsBody: collectsBody, report: report)
        if let connection = try await reusable(origin) {
            do {
                return try await connection.exchange(request)
            } catch let error as HTTP1Exchange.NotAnswered {
                // The origin closed the connection while it waited in the pool (or sent GOAWAY): a GET can be sent
                // again, once.
                if Task.isCancelled { throw CancellationError() }
                if case DownloadError.timedOut = error.underlying { throw error.underlying }
            }
        }
        let connection = try await connect(origin)
        do {
            return try await connection.exchange(request)
        } catch let error as HTTP1Exchange.NotAnswered {
            if Task.isCancelled { throw CancellationError() }
            throw error.underlying
        }
    }

    /// Puts `connection` back on its origin's idle list, or closes it when it cannot take another request. A stream of
    /// an HTTP/2 connection ends with its exchange.
    func release(_ connection: HTTP1Connection, reusable: Bool) {
        guard reusable, !connection.isStream else {
            connection.close()
            return
        }
        let kept = state.withLock { state -> Bool in
            guard !state.isShutDown else { return false }
            state.idle[connection.origin, default: []].append(connection)
            Self.wakeOne(waitingFor: connection.origin, in: &state)
            return true
        }
        if kept {
            connection.closeIfIdle(after: idleTimeout)
        } else {
            connection.close()
        }
    }

    /// How many connections are open, idle or not (HTTP/2 streams not counted).
    var openConnectionCount: Int { state.withLock { $0.open.count } }

    /// The HTTP/2 connections open, for tests.
    var multiplexedChannels: [any Channel] { state.withLock { $0.multiplexed.values.map(\.channel) } }

    /// Closes every connection; exchanges under way fail, and no new one starts.
    func shutdown() {
        let (open, waiting) = state.withLock { state in
            state.isShutDown = true
            state.idle = [:]
            state.multiplexed = [:]
            defer {
                state.open = [:]
                state.waiting = [:]
            }
            return (Array(state.open.values), state.waiting.values.flatMap { $0 })
        }
        for channel in open { channel.close(promise: nil) }
        for waiter in waiting { waiter.continuation.resume(throwing: DownloadError.shutDown) }
    }

    /// A connection to `origin` that is open already: a stream of its HTTP/2 connection, or an idle HTTP/1.1 one.
    private func reusable(_ origin: Origin) async throws -> HTTP1Connection? {
        if let multiplexed = state.withLock({ $0.multiplexed[origin] }) {
            if let stream = try? multiplexed.stream(pool: self) { return stream }
            forget(multiplexed)
        }
        return state.withLock { state in
            while let connection = state.idle[origin]?.popLast() {
                if connection.channel.isActive { return connection }
            }
            return nil
        }
    }

    /// The event loop every connection to `origin` runs on.
    private func loop(of origin: Origin) -> any EventLoop {
        loops[Int(UInt(bitPattern: origin.hashValue) % UInt(loops.count))]
    }

    /// A new connection to `origin`, once it may have one more (``connectionsPerOrigin``), or a stream of the HTTP/2
    /// connection that another transfer opened while this one waited.
    private func connect(_ origin: Origin) async throws -> HTTP1Connection {
        while true {
            let reserved = try await reserve(origin)
            if let connection = try await reusable(origin) {
                if reserved { unreserve(origin) }
                return connection
            }
            if reserved { break }
        }
        let opened: Opened
        do {
            opened = try await open(origin)
        } catch {
            unreserve(origin)
            throw error
        }
        let accepted = state.withLock { state -> Bool in
            guard !state.isShutDown else { return false }
            state.open[ObjectIdentifier(opened.channel)] = opened.channel
            return true
        }
        guard accepted else {
            opened.channel.close(promise: nil)
            unreserve(origin)
            throw DownloadError.shutDown
        }
        let channel = opened.channel
        switch opened {
        case .http1(let connection):
            // A connection closed while idle leaves the idle list too, so origins not asked again keep nothing.
            channel.closeFuture.whenComplete { [weak self] _ in
                self?.state.withLock { state in
                    state.open[ObjectIdentifier(channel)] = nil
                    if let idle = state.idle[origin] {
                        let left = idle.filter { $0 !== connection }
                        state.idle[origin] = left.isEmpty ? nil : left
                    }
                    Self.unreserve(origin, in: &state)
                }
            }
            return connection
        case .http2(let multiplexed):
            // The origin's one connection: it holds no place among the HTTP/1.1 ones.
            unreserve(origin)
            state.withLock { state in
                if state.multiplexed[origin] == nil { state.multiplexed[origin] = multiplexed }
            }
            channel.closeFuture.whenComplete { [weak self] _ in
                self?.state.withLock { $0.open[ObjectIdentifier(channel)] = nil }
                self?.forget(multiplexed)
            }
            return try multiplexed.stream(pool: self)
        }
    }

    private func forget(_ multiplexed: HTTP2Connection) {
        state.withLock { state in
            if state.multiplexed[multiplexed.origin] === multiplexed { state.multiplexed[multiplexed.origin] = nil }
        }
    }

    // MARK: Opening

    /// A connection just opened: HTTP/1.1, or HTTP/2 when the origin chose it in the TLS handshake.
    private enum Opened {
        case http1(HTTP1Connection)
        case http2(HTTP2Connection)

        var channel: any Channel {
            switch self {
            case .http1(let connection): connection.channel
            case .http2(let connection): connection.channel
            }
        }
    }

    private func open(_ origin: Origin) async throws -> Opened {
        if state.withLock({ $0.isShutDown }) { throw DownloadError.shutDown }
        let tls = origin.isSecure ? try tlsContext(verifying: origin.verifiesCertificate) : nil
        let (readTimeout, idleTimeout) = (readTimeout, idleTimeout)
        let loop = loop(of: origin)
        let handshake = tls.map { _ in loop.makePromise(of: TLSHandshakeHandler.Negotiated.self) }
        // The handler of HTTP/1.1's answers, made here so that the connection's caller has it without a second trip to
        // the event loop to look it up (which finds nothing once the origin has closed the connection).
        let exchange = NIOLoopBoundBox.makeBoxSendingValue(HTTP1ExchangeHandler(), eventLoop: loop)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: loop)
                .connectTimeout(connectTimeout)
                // TCP_NODELAY at the TCP level (ClientBootstrap sets it so by default; said here so that nobody moves
                // it to `.socketOption`, which is SOL_SOCKET, where option 1 is SO_DEBUG: EACCES for anyone but root).
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        try pipeline.addHandler(IdleStateHandler(readTimeout: readTimeout))
                        if let tls, let handshake {
                            // The name the certificate must carry (and SNI's), unless the URL's host is an address.
                            let name = origin.host.isIPAddress ? nil : origin.host
                            let addTLS = { @Sendable (pipeline: ChannelPipeline.SynchronousOperations) throws in
                                try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: name))
                                try pipeline.addHandler(
                                    TLSHandshakeHandler(
                                        promise: handshake, exchange: exchange, host: origin.host,
                                        readTimeout: readTimeout, idleTimeout: idleTimeout))
                            }
                            if let proxy = origin.proxy {
                                // TLS starts once the proxy has opened the tunnel.
                                try pipeline.addHandler(
                                    ConnectTunnelHandler(
                                        target: "\(origin.authority):\(origin.port)", proxy: proxy,
                                        failing: handshake, then: addTLS))
                            } else {
                                try addTLS(pipeline)
                            }
                        } else {
                            try pipeline.addHTTPClientHandlers()
                            try pipeline.addHandler(exchange.value)
                        }
                    }
                }
                .connect(host: origin.proxy?.host ?? origin.address, port: origin.proxy?.port ?? origin.port).get()
        } catch {
            handshake?.fail(error)
            throw error
        }
        do {
            if let handshake {
                let negotiated: TLSHandshakeHandler.Negotiated
                do {
                    negotiated = try await handshake.futureResult.get()
                } catch {
                    throw Self.handshakeFailure(error, host: origin.host, authorities: certificateAuthorities)
                }
                if case .http2(let streams, let admission) = negotiated {
                    return .http2(
                        HTTP2Connection(origin: origin, channel: channel, streams: streams, admission: admission))
                }
            }
            return .http1(HTTP1Connection(origin: origin, channel: channel, handler: exchange, pool: self))
        } catch {
            channel.close(promise: nil)
            throw error
        }
    }

    /// The TLS context of connections that check certificates against the configured authorities, or of those that
    /// check none; made once each, offering HTTP/1.1, and HTTP/2 before it when the pool offers HTTP/2.
    private func tlsContext(verifying: Bool) throws -> NIOSSLContext {
        try state.withLock { state in
            if let context = state.tlsContexts[verifying] { return context }
            var configuration = certificateAuthorities.tlsConfiguration
            if !verifying { configuration.certificateVerification = .none }
            configuration.applicationProtocols = offersHTTP2 ? ["h2", "http/1.1"] : ["http/1.1"]
            let context = try NIOSSLContext(configuration: configuration)
            state.tlsContexts[verifying] = context
            return context
        }
    }

    /// The request target of `url`: its path (`/` when empty) and query, as sent; through a proxy for `http`, the
    /// absolute form, naming the address that was checked (the `Host` header keeps the name), so that the proxy
    /// connects where the address resolver allowed and nowhere a second resolution would send it.
    static func target(of url: URL, to origin: Origin? = nil) -> String {
        let path = url.path(percentEncoded: true)
        let query = url.query(percentEncoded: true).map { "?" + $0 } ?? ""
        let target = (path.isEmpty ? "/" : path) + query
        guard let origin, origin.proxy != nil, !origin.isSecure else { return target }
        return "http://\(origin.authority):\(origin.port)" + target
    }
}

extension HTTPConnections.Origin {
    /// The address to connect to as a URL's authority carries it (an IPv6 one in brackets).
    var authority: String { address.contains(":") ? "[" + address + "]" : address }
}

extension String {
    /// Whether this is an IPv4 or IPv6 address rather than a name.
    var isIPAddress: Bool { (try? SocketAddress(ipAddress: self, port: 0)) != nil }
}
