import NIOCore
import NIOHTTP1

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
        let (answer, started) = begin(request, eventLoop: channel.eventLoop, isOpen: channel.isActive)
        if started {
            channel.write(HTTPClientRequestPart.head(request.head), promise: nil)
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }
        return answer
    }

    /// Starts `request`'s exchange, whose request the caller then sends: the answer to come, and whether it started
    /// (else the answer has failed with ``HTTP1Exchange/NotAnswered``: the handler is busy or its transport closed).
    func begin(
        _ request: HTTP1Exchange.Request, eventLoop: any EventLoop, isOpen: Bool
    ) -> (answer: EventLoopFuture<HTTP1Exchange.Answer>, started: Bool) {
        currentEventLoop = currentEventLoop ?? eventLoop
        let promise = eventLoop.makePromise(of: HTTP1Exchange.Answer.self)
        guard case .idle = state, isOpen else {
            // Why the connection went before this request, when the handler was told.
            let underlying: any Error =
                if case .failed(let error) = state { error } else { ChannelError.ioOnClosedChannel }
            promise.fail(HTTP1Exchange.NotAnswered(underlying: underlying))
            return (promise.futureResult, false)
        }
        generation += 1
        idleClose?.cancel()
        idleClose = nil
        state = .awaitingHead(promise, request)
        return (promise.futureResult, true)
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
        let limit = HTTPConnections.discardLimit
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
        receive(unwrapInboundIn(data)) { context.close(promise: nil) }
    }

    /// Takes a part of the answer, from the channel or from an HTTP/2 stream; `close` ends the transport (the
    /// connection, or the stream) when the exchange cannot go on.
    func receive(_ part: HTTPClientResponsePart, close: () -> Void) {
        switch (part, state) {
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
                receiving.discardLimit = HTTPConnections.discardLimit
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
                close()
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
                    close()
                    return
                }
                return
            }
            let newFrom = receiving.body.count
            guard newFrom + buffer.readableBytes <= receiving.limit else {
                let error = DownloadError.tooLarge(limit: receiving.limit)
                fail(receiving, error)
                state = .failed(error)
                close()
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
            close()
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

    /// The transport failed or closed with `error`: whatever waits on the exchange fails (a request not answered
    /// yet, as ``HTTP1Exchange/NotAnswered``); a body read whole stays readable.
    func transportFailed(_ error: any Error) {
        failAll(error)
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
