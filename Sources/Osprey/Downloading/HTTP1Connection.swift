import NIOCore

/// One keep-alive HTTP/1.1 connection of ``HTTPConnections``, or one stream of an HTTP/2 connection
/// (``HTTP2Streams``), whose frames its exchange handler takes as HTTP/1.1's parts.
final class HTTP1Connection: Sendable {
    let origin: HTTPConnections.Origin
    /// The connection's channel (for a stream, its HTTP/2 connection's).
    let channel: any Channel
    let handler: NIOLoopBoundBox<HTTP1ExchangeHandler>
    /// For a stream of an HTTP/2 connection, the connection's streams: it carries one exchange, then ends.
    private let streams: NIOLoopBoundBox<HTTP2Streams>?
    private let pool: HTTPConnections

    init(
        origin: HTTPConnections.Origin, channel: any Channel, handler: NIOLoopBoundBox<HTTP1ExchangeHandler>,
        pool: HTTPConnections, streams: NIOLoopBoundBox<HTTP2Streams>? = nil
    ) {
        self.origin = origin
        self.channel = channel
        self.handler = handler
        self.pool = pool
        self.streams = streams
    }

    /// A stream of an HTTP/2 connection: it carries one exchange, then ends.
    var isStream: Bool { streams != nil }

    /// Sends `request` (on a stream, opening the stream) and waits for the answer's head.
    ///
    /// - Throws: ``HTTP1Exchange/NotAnswered`` when the connection failed before any of the answer came.
    func exchange(_ request: HTTP1Exchange.Request) async throws -> HTTP1Exchange {
        let (handler, streams) = (handler, streams)
        let answer = try await withTaskCancellationHandler {
            try await channel.eventLoop.flatSubmit {
                if let streams { return streams.value.open(request, exchange: handler.value) }
                return handler.value.send(request, on: self.channel)
            }.get()
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

    /// Reads and drops the body when it is at most ``HTTPConnections/discardLimit`` bytes, so the connection can be
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
        guard let streams else {
            channel.close(promise: nil)
            return
        }
        let handler = handler
        channel.eventLoop.execute { streams.value.reset(handler.value) }
    }
}
