import FoundationEssentials
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The downloader's HTTP/1.1 client for `http` origins: keep-alive connections per origin, one exchange at a time on
/// each, the body collected on the connection's event loop and handed to the transfer once, whole.
///
/// What it saves against AsyncHTTPClient, which the downloader keeps for `https` (TLS, HTTP/2), for a tracer (the
/// client's span of each request) and for a per-origin connection limit: the request's trip through the client's pool
/// state machine and task queue, and a hand-over from the event loop to the transfer's task for every part of the
/// body. `osprey prefetch --memory-only` of 1,000 small images took 98 ms of CPU with it, 169 ms through
/// AsyncHTTPClient (docs/benchmarks.md).
///
/// The number of connections to an origin is the number of transfers to it at once, which the downloader's queue
/// bounds (``ImageDownloader/Configuration/maxConcurrentDownloads``). A connection that answered whole and keeps alive
/// goes back to its origin's idle list for ``ImageDownloader/Configuration/idleConnectionTimeout``; a request that
/// fails on a reused connection before any answer (the origin closed it meanwhile) is sent once more on a new one.
///
/// An origin's connections all run on one event loop of the group, chosen by the origin's hash (so different origins
/// spread over the loops): one thread then reads every answer of an origin, and it sleeps and wakes less often than
/// two each serving part of them. `osprey prefetch` of 1,000 small images at 6 connections on two cores, medians of
/// 12 runs: CPU 361 → 339 ms, context switches 2,652 → 1,809; `osprey fetch` 503 → 448 ms (docs/benchmarks.md).
final class HTTP1Connections: Sendable {
    /// Where a connection goes: the URL's host and port, and the address to connect to (the host's own name unless an
    /// address resolver chose one).
    struct Origin: Hashable, Sendable {
        var host: String
        var port: Int
        var address: String
    }

    private struct State {
        var idle: [Origin: [HTTP1Connection]] = [:]
        /// Every open connection, idle or not, to close them at shutdown.
        var open: [ObjectIdentifier: HTTP1Connection] = [:]
        var isShutDown = false
    }

    /// The most bytes of an unwanted body read to keep its connection; a longer one closes it.
    static let discardLimit = 64 << 10

    private let loops: [any EventLoop]
    private let connectTimeout: TimeAmount
    private let readTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    private let state = Mutex(State())

    init(group: any EventLoopGroup, connectTimeout: Duration, readTimeout: Duration, idleTimeout: Duration) {
        self.loops = Array(group.makeIterator())
        self.connectTimeout = TimeAmount(connectTimeout)
        self.readTimeout = TimeAmount(readTimeout)
        self.idleTimeout = TimeAmount(idleTimeout)
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
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: Self.target(of: url))
        head.headers = HTTPHeaders(headers)
        if !head.headers.contains(name: "Host") {
            let host = origin.host.contains(":") ? "[" + origin.host + "]" : origin.host
            head.headers.add(name: "Host", value: origin.port == 80 ? host : "\(host):\(origin.port)")
        }
        let request = HTTP1Exchange.Request(
            head: head, initialBody: initialBody, limit: limit, collectsBody: collectsBody, report: report)
        if let connection = takeIdle(origin) {
            do {
                return try await connection.exchange(request)
            } catch let error as HTTP1Exchange.NotAnswered {
                // The origin closed the connection while it waited in the pool: a GET can be sent again, once.
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

    /// Puts `connection` back on its origin's idle list, or closes it when it cannot take another request.
    func release(_ connection: HTTP1Connection, reusable: Bool) {
        guard reusable else {
            connection.close()
            return
        }
        let kept = state.withLock { state -> Bool in
            guard !state.isShutDown else { return false }
            state.idle[connection.origin, default: []].append(connection)
            return true
        }
        if kept {
            connection.closeIfIdle(after: idleTimeout)
        } else {
            connection.close()
        }
    }

    /// Closes every connection; exchanges under way fail, and no new one starts.
    func shutdown() {
        let open = state.withLock { state -> [HTTP1Connection] in
            state.isShutDown = true
            state.idle = [:]
            defer { state.open = [:] }
            return Array(state.open.values)
        }
        for connection in open { connection.close() }
    }

    private func takeIdle(_ origin: Origin) -> HTTP1Connection? {
        state.withLock { state in
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

    private func connect(_ origin: Origin) async throws -> HTTP1Connection {
        if state.withLock({ $0.isShutDown }) { throw DownloadError.shutDown }
        let readTimeout = readTimeout
        let channel = try await ClientBootstrap(group: loop(of: origin))
            .connectTimeout(connectTimeout)
            // TCP_NODELAY at the TCP level (ClientBootstrap sets it so by default; said here so that nobody moves it
            // to `.socketOption`, which is SOL_SOCKET, where option 1 is SO_DEBUG: EACCES for anyone but root).
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandlers([
                        IdleStateHandler(readTimeout: readTimeout), HTTP1ExchangeHandler(),
                    ])
                }
            }
            .connect(host: origin.address, port: origin.port).get()
        let handler: NIOLoopBound<HTTP1ExchangeHandler>
        do {
            handler = try await channel.eventLoop.submit {
                NIOLoopBound(
                    try channel.pipeline.syncOperations.handler(type: HTTP1ExchangeHandler.self),
                    eventLoop: channel.eventLoop)
            }.get()
        } catch {
            channel.close(promise: nil)
            throw error
        }
        let connection = HTTP1Connection(origin: origin, channel: channel, handler: handler, pool: self)
        let accepted = state.withLock { state -> Bool in
            guard !state.isShutDown else { return false }
            state.open[ObjectIdentifier(connection)] = connection
            return true
        }
        guard accepted else {
            connection.close()
            throw DownloadError.shutDown
        }
        // A connection closed while idle leaves the idle list too, so origins not asked again keep nothing.
        channel.closeFuture.whenComplete { [weak self] _ in
            self?.state.withLock { state in
                state.open[ObjectIdentifier(connection)] = nil
                guard let idle = state.idle[origin] else { return }
                let left = idle.filter { $0 !== connection }
                state.idle[origin] = left.isEmpty ? nil : left
            }
        }
        return connection
    }

    /// The request target of `url`: its path (`/` when empty) and query, as sent.
    static func target(of url: URL) -> String {
        let path = url.path(percentEncoded: true)
        let query = url.query(percentEncoded: true).map { "?" + $0 } ?? ""
        return (path.isEmpty ? "/" : path) + query
    }
}

/// One keep-alive connection of ``HTTP1Connections``.
final class HTTP1Connection: Sendable {
    let origin: HTTP1Connections.Origin
    let channel: any Channel
    let handler: NIOLoopBound<HTTP1ExchangeHandler>
    private let pool: HTTP1Connections

    init(
        origin: HTTP1Connections.Origin, channel: any Channel, handler: NIOLoopBound<HTTP1ExchangeHandler>,
        pool: HTTP1Connections
    ) {
        self.origin = origin
        self.channel = channel
        self.handler = handler
        self.pool = pool
    }

    /// Sends `request` and waits for the answer's head.
    ///
    /// - Throws: ``HTTP1Exchange/NotAnswered`` when the connection failed before any of the answer came.
    func exchange(_ request: HTTP1Exchange.Request) async throws -> HTTP1Exchange {
        let handler = handler
        let answer = try await withTaskCancellationHandler {
            try await channel.eventLoop.flatSubmit { handler.value.send(request, on: self.channel) }.get()
        } onCancel: {
            close()
        }
        if answer.body != nil { pool.release(self, reusable: answer.reusable) }
        return HTTP1Exchange(connection: self, head: answer.head, body: answer.body)
    }

    /// Collects the body the handler is gathering, calling `report` with the body so far after each part.
    func body(report: @escaping @Sendable ([UInt8], Int, Int?) -> Void) async throws -> [UInt8] {
        let handler = handler
        return try await withTaskCancellationHandler {
            try await channel.eventLoop.flatSubmit { handler.value.collect(report: report) }.get()
        } onCancel: {
            close()
        }
    }

    /// Reads and drops the body when it is at most ``HTTP1Connections/discardLimit`` bytes, so the connection can be
    /// reused; else closes it.
    func discardBody() async {
        let handler = handler
        let reusable = try? await channel.eventLoop.flatSubmit { handler.value.discard() }.get()
        pool.release(self, reusable: reusable ?? false)
    }

    /// Back to the pool after a body read whole.
    func finish() async {
        let handler = handler
        let reusable = try? await channel.eventLoop.submit { handler.value.isReusable }.get()
        pool.release(self, reusable: reusable ?? false)
    }

    func closeIfIdle(after timeout: TimeAmount) {
        let handler = handler
        channel.eventLoop.execute {
            handler.value.closeIfIdle(after: timeout, on: self.channel)
        }
    }

    func close() {
        channel.close(promise: nil)
    }
}

/// An answer's head, and its connection, through which the body is read or discarded.
struct HTTP1Exchange: Sendable {
    struct Request: Sendable {
        var head: HTTPRequestHead
        var initialBody: [UInt8]
        var limit: Int
        var collectsBody: Bool
        var report: @Sendable ([UInt8], Int, Int?) -> Void
    }

    /// What the handler answers: the head, and the body when it was collected, with whether the connection can be
    /// used again.
    struct Answer: Sendable {
        var head: HTTPResponseHead
        var body: [UInt8]?
        var reusable: Bool
    }

    /// A failure before any byte of the answer: the request may be sent again on another connection.
    struct NotAnswered: Error {
        var underlying: any Error
    }

    /// A failure while the body came, with the body so far (kept for resuming) and, when the body was collected with
    /// it, the answer's head.
    struct BrokenBody: Error {
        var underlying: any Error
        var body: [UInt8]
        var head: HTTPResponseHead?
    }

    let connection: HTTP1Connection
    let head: HTTPResponseHead
    /// The whole body, when it was collected with the head (the connection is back in the pool then).
    let body: [UInt8]?
}

/// The exchange under way on one connection, confined to its event loop: sends the request, answers its head, and
/// gathers its body up to the limit.
final class HTTP1ExchangeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private enum State {
        case idle
        case awaitingHead(EventLoopPromise<HTTP1Exchange.Answer>, HTTP1Exchange.Request)
        case receiving(Receiving)
        case failed(any Error)
    }

    /// An answer whose body is coming: a class, so the body grows in place (in an enum's payload, every part
    /// appended would copy the whole body, which the state still holds).
    private final class Receiving {
        var body: [UInt8]
        let start: Int
        let limit: Int
        let expected: Int?
        let keepAlive: Bool
        var ended = false
        /// Set once the body is to be dropped: at most this many of its bytes are read (`discarded` counts them).
        var discardLimit: Int?
        var discarded = 0
        var collector: EventLoopPromise<[UInt8]>?
        /// Set when the body is collected to be answered with the head, at its end.
        var answerer: (promise: EventLoopPromise<HTTP1Exchange.Answer>, head: HTTPResponseHead)?
        var discarder: EventLoopPromise<Bool>?
        var report: (@Sendable ([UInt8], Int, Int?) -> Void)?
        var error: (any Error)?

        init(body: [UInt8], start: Int, limit: Int, expected: Int?, keepAlive: Bool) {
            self.body = body
            self.start = start
            self.limit = limit
            self.expected = expected
            self.keepAlive = keepAlive
        }
    }

    private var state = State.idle
    private var generation = 0
    /// The close of the connection once idle too long, cancelled when it is used again.
    private var idleClose: Scheduled<Void>?

    /// Whether the connection can take another request: the last answer ended and keeps the connection alive.
    var isReusable: Bool {
        if case .idle = state { return true }
        return false
    }

    func send(_ request: HTTP1Exchange.Request, on channel: any Channel) -> EventLoopFuture<HTTP1Exchange.Answer> {
        let promise = channel.eventLoop.makePromise(of: HTTP1Exchange.Answer.self)
        guard case .idle = state, channel.isActive else {
            promise.fail(HTTP1Exchange.NotAnswered(underlying: ChannelError.ioOnClosedChannel))
            return promise.futureResult
        }
        generation += 1
        idleClose?.cancel()
        idleClose = nil
        state = .awaitingHead(promise, request)
        channel.write(HTTPClientRequestPart.head(request.head), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        return promise.futureResult
    }

    func collect(report: @escaping @Sendable ([UInt8], Int, Int?) -> Void) -> EventLoopFuture<[UInt8]> {
        if case .failed(let error) = state { return failedFuture(error) }
        guard case .receiving(let receiving) = state, let eventLoop = currentEventLoop else {
            return failedFuture(ChannelError.inappropriateOperationForState)
        }
        if let error = receiving.error {
            return eventLoop.makeFailedFuture(HTTP1Exchange.BrokenBody(underlying: error, body: receiving.body))
        }
        if receiving.body.count > receiving.start {
            report(receiving.body, receiving.start, receiving.expected)
        }
        if receiving.ended {
            let body = receiving.body
            endExchange(receiving)
            return eventLoop.makeSucceededFuture(body)
        }
        let promise = eventLoop.makePromise(of: [UInt8].self)
        receiving.collector = promise
        receiving.report = report
        return promise.futureResult
    }

    func discard() -> EventLoopFuture<Bool> {
        let limit = HTTP1Connections.discardLimit
        guard case .receiving(let receiving) = state, let eventLoop = currentEventLoop else {
            return failedFuture(ChannelError.ioOnClosedChannel)
        }
        if receiving.ended {
            endExchange(receiving)
            return eventLoop.makeSucceededFuture(receiving.keepAlive)
        }
        guard receiving.error == nil, receiving.discarded + receiving.body.count - receiving.start <= limit else {
            return eventLoop.makeSucceededFuture(false)
        }
        let promise = eventLoop.makePromise(of: Bool.self)
        receiving.discarded += receiving.body.count - receiving.start
        receiving.discardLimit = limit
        receiving.body = []
        receiving.discarder = promise
        return promise.futureResult
    }

    func closeIfIdle(after timeout: TimeAmount, on channel: any Channel) {
        guard case .idle = state else { return }
        let idleGeneration = generation
        idleClose?.cancel()
        idleClose = channel.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [weak self] in
            guard let self, case .idle = self.state, self.generation == idleGeneration else { return }
            channel.close(promise: nil)
        }
    }

    /// The state after an answer read to its end: idle, for the next request, when the connection keeps alive.
    private func endExchange(_ receiving: Receiving) {
        state = receiving.keepAlive ? .idle : .failed(ChannelError.outputClosed)
    }

    // MARK: The channel's events

    /// The channel's event loop, kept from when the handler joined the pipeline (it outlives the pipeline).
    private var currentEventLoop: (any EventLoop)?

    private func failedFuture<T>(_ error: any Error) -> EventLoopFuture<T> {
        guard let eventLoop = currentEventLoop else { preconditionFailure("an exchange before its pipeline") }
        return eventLoop.makeFailedFuture(error)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        currentEventLoop = context.eventLoop
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), state) {
        case (.head(let head), .awaitingHead(let promise, let request)):
            // An interim answer (100 Continue and its kind) is followed by the real one.
            if head.status.code >= 100 && head.status.code < 200 { return }
            // A partial answer continues the body kept from before; any other starts it over.
            var body = head.status.code == 206 ? request.initialBody : []
            let expected = head.headers.first(name: "Content-Length").flatMap { Int($0) }.map { $0 + body.count }
            body.reserveCapacity(min(expected ?? (body.count + (64 << 10)), request.limit))
            let receiving = Receiving(
                body: body, start: body.count, limit: request.limit, expected: expected,
                keepAlive: head.isKeepAlive && request.head.isKeepAlive)
            state = .receiving(receiving)
            guard (200..<300).contains(head.status.code) else {
                // Another answer's body (a redirect's, an error's) is only ever dropped: read as it comes, up to the
                // discard limit, past which the connection goes.
                receiving.body = []
                receiving.discardLimit = HTTP1Connections.discardLimit
                promise.succeed(HTTP1Exchange.Answer(head: head, body: nil, reusable: false))
                return
            }
            guard request.collectsBody else {
                promise.succeed(HTTP1Exchange.Answer(head: head, body: nil, reusable: false))
                return
            }
            if let expected, expected > request.limit {
                // Refused from its announced length, before a byte of it is read.
                state = .failed(DownloadError.tooLarge(limit: request.limit))
                promise.fail(DownloadError.tooLarge(limit: request.limit))
                context.close(promise: nil)
                return
            }
            receiving.report = request.report
            receiving.answerer = (promise, head)
        case (.body(let buffer), .receiving(let receiving)):
            guard receiving.error == nil else { return }
            if let discardLimit = receiving.discardLimit {
                receiving.discarded += buffer.readableBytes
                guard receiving.discarded <= discardLimit else {
                    state = .failed(ChannelError.outputClosed)
                    receiving.discarder?.succeed(false)
                    context.close(promise: nil)
                    return
                }
                return
            }
            let newFrom = receiving.body.count
            guard newFrom + buffer.readableBytes <= receiving.limit else {
                let error = DownloadError.tooLarge(limit: receiving.limit)
                fail(receiving, error)
                state = .failed(error)
                context.close(promise: nil)
                return
            }
            buffer.withUnsafeReadableBytes { receiving.body.append(contentsOf: $0) }
            receiving.report?(receiving.body, newFrom, receiving.expected)
        case (.end, .receiving(let receiving)):
            guard receiving.error == nil else { return }
            receiving.ended = true
            if let answerer = receiving.answerer {
                endExchange(receiving)
                answerer.promise.succeed(
                    HTTP1Exchange.Answer(head: answerer.head, body: receiving.body, reusable: receiving.keepAlive))
            } else if let discarder = receiving.discarder {
                endExchange(receiving)
                discarder.succeed(receiving.keepAlive)
            } else if let collector = receiving.collector {
                endExchange(receiving)
                collector.succeed(receiving.body)
            }
        // Else the whole answer came before the transfer asked for it: `collect` or `discard` takes it as it is.
        default:
            // Bytes outside an exchange: the connection cannot be trusted with another.
            failAll(HTTPParserError.invalidInternalState)
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let idle = event as? IdleStateHandler.IdleStateEvent, case .read = idle else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        switch state {
        case .awaitingHead, .receiving:
            failAll(DownloadError.timedOut)
            context.close(promise: nil)
        case .idle, .failed:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failAll(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A body without a length ends with the connection: the decoder sends its end before this.
        failAll(DownloadError.connectionLost(reason: "the origin closed the connection"))
        context.fireChannelInactive()
    }

    /// Fails whatever waits on the exchange with `error` (a request not answered yet, as ``HTTP1Exchange/NotAnswered``).
    private func failAll(_ error: any Error) {
        switch state {
        case .awaitingHead(let promise, _):
            state = .failed(error)
            promise.fail(HTTP1Exchange.NotAnswered(underlying: error))
        case .receiving(let receiving):
            // A body read whole stays readable after the connection goes.
            guard !receiving.ended else { return }
            // Kept with its error: the body so far is what a later request resumes from.
            fail(receiving, error)
        case .idle:
            state = .failed(error)
        case .failed:
            break
        }
    }

    private func fail(_ receiving: Receiving, _ error: any Error) {
        if receiving.error == nil { receiving.error = error }
        receiving.collector?.fail(HTTP1Exchange.BrokenBody(underlying: error, body: receiving.body))
        receiving.collector = nil
        receiving.answerer.map {
            $0.promise.fail(HTTP1Exchange.BrokenBody(underlying: error, body: receiving.body, head: $0.head))
        }
        receiving.answerer = nil
        receiving.discarder?.succeed(false)
        receiving.discarder = nil
    }
}
