import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// An HTTP/1.1 origin server on `127.0.0.1` and a free port, in-process, scripted per path: the real server that every
/// networking test talks to instead of a mock.
///
/// Each path answers with an ``OriginResponse`` — status, headers, body, a delay or a gate before the headers, a
/// chunked trickle, a pause mid-body until a gate opens, ETag / Last-Modified validation with 304, redirects, a
/// connection reset mid-body, a lying `Content-Length` — and the server counts requests, in-flight requests and the
/// most ever in flight, per path and across paths, and keeps the order in which requests arrived.
/// Paths under `/testdata/` serve the image corpus (``TestData``) when it is present. Anything else is 404.
///
/// ```swift
/// try await withOriginServer { server in
///     server.route("/cat.jpg", .ok(bytes, contentType: "image/jpeg"))
///     let url = server.url("/cat.jpg")   // "http://127.0.0.1:41234/cat.jpg"
///     ...
///     #expect(server.requestCount("/cat.jpg") == 1)
/// }
/// ```
public final class OriginServer: Sendable {
    let state: NIOLockedValueBox<State>

    /// Starts a server on `127.0.0.1` and a port the system picks.
    ///
    /// - Parameters:
    ///   - testDataDirectory: the folder served under `/testdata/`; the corpus's `images` folder by default, `nil` to
    ///     serve none.
    ///   - tls: serve `https` with a self-signed certificate for `127.0.0.1` that no client trusts by default.
    ///     `false` by default.
    ///   - http2: offer HTTP/2 before HTTP/1.1 by ALPN, as CDNs do (so `tls` is implied), and speak the one the client
    ///     chooses; over HTTP/2, scripts' status, headers, body, validators, ranges, pauses and resets are played, not
    ///     the rest of their misbehaviour. `false` by default.
    ///   - offersHTTP1: with `http2`, whether HTTP/1.1 is offered too; `false` makes an origin that speaks HTTP/2 only
    ///     (it agrees on no protocol with a client that offers none other, and then sends HTTP/2's settings all the
    ///     same). `true` by default.
    public static func start(
        testDataDirectory: String? = TestData.imagesDirectory, tls: Bool = false, http2: Bool = false,
        offersHTTP1: Bool = true
    ) async throws -> OriginServer {
        let server = OriginServer(state: State(testDataDirectory: testDataDirectory))
        let tlsContext =
            tls || http2
            ? try NIOSSLContext(
                configuration: TestCertificate.serverConfiguration(http2: http2, http1: !http2 || offersHTTP1))
            : nil
        let http2Only = http2 && !offersHTTP1
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                let opened = channel.eventLoop.makeCompletedFuture {
                    if let tlsContext {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tlsContext))
                    }
                    server.register(channel)
                    if !http2 { try Self.speakHTTP1(on: channel, for: server) }
                    if http2Only { try Self.speakHTTP2(on: channel, for: server) }
                }
                guard http2, !http2Only else { return opened }
                // The protocol the client chose of the two offered, once the handshake is over.
                return opened.flatMap {
                    channel.configureHTTP2SecureUpgrade(
                        h2ChannelConfigurator: { channel in
                            channel.eventLoop.makeCompletedFuture { try Self.speakHTTP2(on: channel, for: server) }
                        },
                        http1ChannelConfigurator: { channel in
                            channel.eventLoop.makeCompletedFuture { try Self.speakHTTP1(on: channel, for: server) }
                        })
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = listener.localAddress?.port else {
            try? await listener.close()
            throw OriginServerError.noLocalAddress
        }
        server.state.withLockedValue { state in
            state.listener = listener
            state.port = port
            state.scheme = tls || http2 ? "https" : "http"
        }
        return server
    }

    /// Answers HTTP/1.1 on `channel`, misbehaviour included.
    private static func speakHTTP1(on channel: any Channel, for server: OriginServer) throws {
        try channel.pipeline.syncOperations.addHandler(
            ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
        try channel.pipeline.syncOperations.addHandler(OriginHandler(server: server))
    }

    /// Answers HTTP/2 on `channel`, each stream as an HTTP/1 exchange.
    private static func speakHTTP2(on channel: any Channel, for server: OriginServer) throws {
        _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: .init(), streamConfiguration: .init()
        ) { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                try stream.pipeline.syncOperations.addHandler(OriginHTTP2Handler(server: server))
            }
        }
    }

    private init(state: State) {
        self.state = NIOLockedValueBox(state)
    }

    /// The port the server listens on.
    public var port: Int { state.withLockedValue { $0.port } }

    /// `http://127.0.0.1:PORT` (`https` in TLS mode), without a trailing slash.
    public var baseURL: String {
        let (scheme, port) = state.withLockedValue { ($0.scheme, $0.port) }
        return "\(scheme)://127.0.0.1:\(port)"
    }

    /// The absolute URL of `path` (which starts with `/`) on this server.
    public func url(_ path: String) -> String { baseURL + path }

    // MARK: Scripting

    /// Answers requests for `path` (query ignored) with `response` from now on, replacing any earlier script.
    public func route(_ path: String, _ response: OriginResponse) {
        state.withLockedValue { $0.routes[path] = response }
    }

    /// Stops answering `path`: it is 404 again.
    public func removeRoute(_ path: String) {
        _ = state.withLockedValue { $0.routes.removeValue(forKey: path) }
    }

    // MARK: Counting

    /// How many requests for `path` have arrived (all paths when `nil`), 304s and 404s included.
    public func requestCount(_ path: String? = nil) -> Int {
        state.withLockedValue { state in
            path.map { state.statistics[$0]?.requests.count ?? 0 }
                ?? state.statistics.values.reduce(0) { $0 + $1.requests.count }
        }
    }

    /// How many requests for `path` are being answered now.
    public func inFlightCount(_ path: String) -> Int {
        state.withLockedValue { $0.statistics[path]?.inFlight ?? 0 }
    }

    /// The most requests for `path` that were ever being answered at once.
    public func maxInFlightCount(_ path: String) -> Int {
        state.withLockedValue { $0.statistics[path]?.maxInFlight ?? 0 }
    }

    /// How many requests, for any path, are being answered now.
    public var inFlightCount: Int { state.withLockedValue { $0.inFlight } }

    /// The most requests, for any paths, that were ever being answered at once: what a test of a client's
    /// concurrency limit asserts, without sleeping.
    public var maxInFlightCount: Int { state.withLockedValue { $0.maxInFlight } }

    /// The path of every request so far, in the order they arrived, across paths (a query is not part of a path):
    /// what a test of a client's priorities or rate asserts.
    public var arrivalOrder: [String] { state.withLockedValue { $0.arrivals } }

    /// The requests for `path`, in arrival order.
    public func requests(to path: String) -> [RecordedRequest] {
        state.withLockedValue { $0.statistics[path]?.requests ?? [] }
    }

    /// How many connections clients have opened to the server so far.
    public var connectionCount: Int { state.withLockedValue { $0.connectionsOpened } }

    /// How many answers on `path` were cut short because the client closed the connection first.
    public func abortedCount(_ path: String) -> Int {
        state.withLockedValue { $0.statistics[path]?.aborted ?? 0 }
    }

    /// Returns once at least `count` requests for `path` have arrived (or the calling task is cancelled): the way to
    /// know a request reached the origin without sleeping.
    public func waitForRequests(to path: String, count: Int) async {
        await wait(for: path, count: count, counting: .requests)
    }

    /// Returns once at least `count` answers on `path` were cut short by the client going away (or the calling task
    /// is cancelled): the way to know a cancelled download really stopped.
    public func waitForAborts(on path: String, count: Int) async {
        await wait(for: path, count: count, counting: .aborts)
    }

    private func wait(for path: String, count: Int, counting: State.Waiter.Counting) async {
        let id = state.withLockedValue { state -> Int in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLockedValue { state in
                    let waiter = State.Waiter(
                        id: id, path: path, count: count, counting: counting, continuation: continuation)
                    if waiter.isSatisfied(by: state.statistics[path]) || Task.isCancelled { return true }
                    state.waiters.append(waiter)
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLockedValue { state -> State.Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume()
        }
    }

    // MARK: Lifetime

    /// Stops listening and closes every open connection.
    public func shutdown() async throws {
        let (listener, connections) = state.withLockedValue { state in
            defer {
                state.listener = nil
                state.connections = [:]
            }
            return (state.listener, Array(state.connections.values))
        }
        try await listener?.close()
        for connection in connections {
            try? await connection.close()
        }
    }

    private func register(_ connection: any Channel) {
        let id = ObjectIdentifier(connection)
        state.withLockedValue { state in
            state.connections[id] = connection
            state.connectionsOpened += 1
        }
        connection.closeFuture.whenComplete { [weak self] _ in
            _ = self?.state.withLockedValue { $0.connections.removeValue(forKey: id) }
        }
    }
}

/// Runs `body` with a started ``OriginServer`` and shuts it down afterwards, whether `body` returns or throws.
public func withOriginServer<Result>(
    testDataDirectory: String? = TestData.imagesDirectory,
    tls: Bool = false,
    http2: Bool = false,
    offersHTTP1: Bool = true,
    _ body: (OriginServer) async throws -> Result
) async throws -> Result {
    let server = try await OriginServer.start(
        testDataDirectory: testDataDirectory, tls: tls, http2: http2, offersHTTP1: offersHTTP1)
    do {
        let result = try await body(server)
        try await server.shutdown()
        return result
    } catch {
        try? await server.shutdown()
        throw error
    }
}

/// Why the origin server could not start.
public enum OriginServerError: Error {
    /// The listening socket has no local address.
    case noLocalAddress
}
