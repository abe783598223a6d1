import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import Synchronization

/// An HTTP/2 connection of ``HTTPConnections``: every transfer to its origin is a stream of it, whose frames
/// ``HTTP2Streams`` hands to the same ``HTTP1ExchangeHandler`` a connection of its own has, as HTTP/1.1's parts. Streams
/// past the origin's concurrent-stream limit wait in NIO's HTTP/2 handler for one to end. Once its last stream has
/// ended, it is closed after the idle timeout unless another starts.
final class HTTP2Connection: Sendable {
    let origin: HTTPConnections.Origin
    let channel: any Channel
    private let streams: NIOLoopBoundBox<HTTP2Streams>
    private let admission: HTTP2Streams.Admission

    init(
        origin: HTTPConnections.Origin, channel: any Channel, streams: NIOLoopBoundBox<HTTP2Streams>,
        admission: HTTP2Streams.Admission
    ) {
        self.origin = origin
        self.channel = channel
        self.streams = streams
        self.admission = admission
    }

    /// A new stream, ready for one exchange (the stream opens with it, on the connection's event loop); an error once
    /// the connection takes no more (it closed, or the origin said GOAWAY), so that the pool opens another.
    func stream(pool: HTTPConnections) throws -> HTTP1Connection {
        guard channel.isActive, admission.isOpen else { throw ChannelError.ioOnClosedChannel }
        let handler = NIOLoopBoundBox.makeBoxSendingValue(HTTP1ExchangeHandler(), eventLoop: channel.eventLoop)
        return HTTP1Connection(origin: origin, channel: channel, handler: handler, pool: pool, streams: streams)
    }
}

/// The streams of an HTTP/2 connection, in its pipeline behind NIO's HTTP/2 handler, on its event loop: opens a stream
/// for each exchange (its request one HEADERS frame), hands the stream's frames to the exchange's handler as HTTP/1.1's
/// parts, keeps the flow-control windows open as the bodies are read, and times out a stream that stays silent.
///
/// It replaced NIO's stream multiplexer, which made a channel for every stream with two handlers in its pipeline (and
/// a trip to the event loop to make it), which cost a prefetch of small images over https more CPU
/// (docs/benchmarks.md, "One handler for an HTTP/2 connection's streams").
final class HTTP2Streams: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// HTTP/2's flow-control windows as curl sets them: 8 MiB a stream, 32 MiB the connection. At HTTP/2's default of
    /// 64 KiB each, six images of 60 KB at once filled the connection's window, and the origin waited for a window
    /// update every 64 KiB: 245 µs of CPU a download here against 118 for HTTP/1.1 over TLS (docs/benchmarks.md).
    static let streamWindow = 8 << 20
    static let connectionWindow = 32 << 20

    /// The settings the connection opens with: NIO's, with the stream window above and no server push.
    static var connectionConfiguration: NIOHTTP2Handler.ConnectionConfiguration {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        // No pushed streams: nothing here would read them.
        configuration.initialSettings =
            nioDefaultSettings + [
                HTTP2Setting(parameter: .initialWindowSize, value: streamWindow),
                HTTP2Setting(parameter: .enablePush, value: 0),
            ]
        return configuration
    }

    private struct Stream {
        let exchange: HTTP1ExchangeHandler
        /// Whether the final (not 1xx) head came: HEADERS after it are trailers.
        var answered = false
        /// Bytes of DATA taken since the last window update for the stream.
        var unacknowledged = 0
        var lastRead: NIODeadline
        var timeout: Scheduled<Void>?
    }

    /// Whether the connection takes new streams, for any thread to read: not once the origin said GOAWAY or the
    /// connection closed.
    final class Admission: Sendable {
        private let open = Atomic(true)

        var isOpen: Bool { open.load(ordering: .relaxed) }

        func close() { open.store(false, ordering: .relaxed) }
    }

    let admission = Admission()
    private let readTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    private var context: ChannelHandlerContext?
    private var streams: [HTTP2StreamID: Stream] = [:]
    private var ids: [ObjectIdentifier: HTTP2StreamID] = [:]
    /// The ID of the next stream to open (an idle close scheduled before a later stream opened is void).
    private var nextStreamID = HTTP2StreamID(1)
    /// Bytes of DATA taken since the last window update for the connection.
    private var unacknowledged = 0
    private var needsFlush = false

    init(readTimeout: TimeAmount, idleTimeout: TimeAmount) {
        self.readTimeout = readTimeout
        self.idleTimeout = idleTimeout
    }

    /// Opens a stream for `request`, whose answer `exchange` takes.
    func open(
        _ request: HTTP1Exchange.Request, exchange: HTTP1ExchangeHandler
    ) -> EventLoopFuture<HTTP1Exchange.Answer> {
        guard let context else { preconditionFailure("a stream before its connection's pipeline") }
        let isOpen = admission.isOpen && context.channel.isActive
        let (answer, started) = exchange.begin(request, eventLoop: context.eventLoop, isOpen: isOpen)
        guard started else { return answer }
        let id = nextStreamID
        nextStreamID = id.advanced(by: 2)
        streams[id] = Stream(exchange: exchange, lastRead: .now())
        ids[ObjectIdentifier(exchange)] = id
        let headers = Self.headers(of: request.head)
        context.writeAndFlush(
            wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: true)))),
            promise: nil)
        scheduleTimeout(of: id, at: .now() + readTimeout)
        return answer
    }

    /// Ends `exchange`'s stream if it has not ended: the origin is told to stop sending it.
    func reset(_ exchange: HTTP1ExchangeHandler) {
        guard let id = ids[ObjectIdentifier(exchange)], let stream = streams[id] else { return }
        reset(id, stream, DownloadError.connectionLost(reason: "the stream was closed"))
    }

    /// The request's head as HTTP/2 sends it: the pseudo-headers first, the names in lower case, without HTTP/1.1's
    /// connection headers.
    private static func headers(of head: HTTPRequestHead) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(head.headers.count + 3)
        headers.add(name: ":method", value: head.method.rawValue)
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: head.headers.first(name: "Host") ?? "")
        headers.add(name: ":path", value: head.uri)
        for (name, value) in head.headers {
            let name = name.lowercased()
            switch name {
            case "host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te": continue
            default: headers.add(name: name, value: value)
            }
        }
        return headers
    }

    // MARK: The channel's events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // The connection's window starts at 64 KiB whatever the settings say: opened to its size at once.
        let increment = Self.connectionWindow - 65_535
        context.writeAndFlush(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
            promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard var stream = streams[frame.streamID] else {
            if case .goAway = frame.payload { admission.close() }
            // A stream that ended on this side: its frames in flight still count against the connection's window.
            if case .data(let data) = frame.payload { takeFromConnectionWindow(Self.flowControlledLength(of: data)) }
            return
        }
        let id = frame.streamID
        switch frame.payload {
        case .headers(let headers):
            stream.lastRead = .now()
            if !stream.answered, let status = headers.headers.first(name: ":status") {
                guard let code = Int(status) else {
                    reset(id, stream, DownloadError.connectionLost(reason: "the origin sent the status '\(status)'"))
                    return
                }
                var fields = HTTPHeaders()
                for (name, value, _) in headers.headers where !name.hasPrefix(":") {
                    fields.add(name: name, value: value)
                }
                let head = HTTPResponseHead(
                    version: .http2, status: HTTPResponseStatus(statusCode: code), headers: fields)
                stream.answered = code >= 200
                streams[id] = stream
                stream.exchange.receive(.head(head)) { reset(stream.exchange) }
            } else {
                streams[id] = stream
            }
            if headers.endStream, streams[id] != nil { finish(id, stream) }
        case .data(let data):
            stream.lastRead = .now()
            let length = Self.flowControlledLength(of: data)
            let pending = stream.unacknowledged + length
            let update = !data.endStream && pending >= Self.streamWindow / 2
            stream.unacknowledged = update ? 0 : pending
            streams[id] = stream
            if case .byteBuffer(let buffer) = data.data, buffer.readableBytes > 0 {
                stream.exchange.receive(.body(buffer)) { reset(stream.exchange) }
            }
            if data.endStream, streams[id] != nil { finish(id, stream) }
            // The windows are opened again after the frame is handed on: a write can make NIO's handler deliver the
            // events it holds (this stream's close among them) at once.
            if update, streams[id] != nil { self.update(id, by: pending) }
            takeFromConnectionWindow(length)
        case .rstStream(let code):
            fail(id, stream, DownloadError.connectionLost(reason: "the origin reset the stream (\(code))"))
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A stream NIO's handler closed with an error (the origin's GOAWAY, a stream error) before its answer ended.
        // (One closed without is ended by its last frame, which may come after the event: see the DATA frames above.)
        if let closed = event as? StreamClosedEvent, let code = closed.reason, let stream = streams[closed.streamID] {
            fail(closed.streamID, stream, DownloadError.connectionLost(reason: "the stream was closed (\(code))"))
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? NIOHTTP2Errors.StreamError {
            if let stream = streams[error.streamID] { fail(error.streamID, stream, error.baseError) }
            return
        }
        failAll(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(DownloadError.connectionLost(reason: "the origin closed the connection"))
        context.fireChannelInactive()
    }

    // MARK: Streams

    /// What a DATA frame was charged against the origin's windows: its payload, and its padding with the padding's
    /// length byte.
    private static func flowControlledLength(of data: HTTP2Frame.FramePayload.Data) -> Int {
        data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0)
    }

    /// Counts `length` bytes taken from the connection's window, opening it again once half of it is taken.
    private func takeFromConnectionWindow(_ length: Int) {
        unacknowledged += length
        if unacknowledged >= Self.connectionWindow / 2 {
            update(.rootStream, by: unacknowledged)
            unacknowledged = 0
        }
    }

    private func update(_ id: HTTP2StreamID, by increment: Int) {
        context?.write(
            wrapOutboundOut(HTTP2Frame(streamID: id, payload: .windowUpdate(windowSizeIncrement: increment))),
            promise: nil)
        needsFlush = true
    }

    /// The stream's answer ended: its exchange has it whole.
    private func finish(_ id: HTTP2StreamID, _ stream: Stream) {
        end(id)
        stream.exchange.receive(.end(nil)) { reset(stream.exchange) }
    }

    private func fail(_ id: HTTP2StreamID, _ stream: Stream, _ error: any Error) {
        end(id)
        stream.exchange.transportFailed(error)
    }

    /// Fails the stream with `error` and tells the origin to stop sending it.
    private func reset(_ id: HTTP2StreamID, _ stream: Stream, _ error: any Error) {
        end(id)
        context?.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
        stream.exchange.transportFailed(error)
    }

    private func failAll(_ error: any Error) {
        admission.close()
        for (id, stream) in streams { fail(id, stream, error) }
    }

    /// Forgets the stream; with none left, the connection closes after the idle timeout unless another opens.
    private func end(_ id: HTTP2StreamID) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        ids[ObjectIdentifier(stream.exchange)] = nil
        stream.timeout?.cancel()
        guard streams.isEmpty, let context else { return }
        let (next, channel) = (nextStreamID, context.channel)
        context.eventLoop.assumeIsolated().scheduleTask(in: idleTimeout) { [weak self] in
            guard let self, self.streams.isEmpty, self.nextStreamID == next else { return }
            channel.close(promise: nil)
        }
    }

    /// Checks at `deadline` that the stream read something within the read timeout; else its exchange times out.
    private func scheduleTimeout(of id: HTTP2StreamID, at deadline: NIODeadline) {
        guard let context else { return }
        streams[id]?.timeout = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            guard let self, let stream = self.streams[id] else { return }
            let due = stream.lastRead + self.readTimeout
            if due > .now() {
                self.scheduleTimeout(of: id, at: due)
                return
            }
            self.reset(id, stream, DownloadError.timedOut)
        }
    }
}
