import NIOCore
import NIOHTTP1
import NIOHTTP2
internal import NIOSSL
import NIOTLS
import Synchronization

/// An HTTP/2 connection of ``HTTPConnections``: every transfer to its origin is a stream of it, each stream speaking
/// HTTP/1.1's parts (NIO's `HTTP2FramePayloadToHTTP1ClientCodec`) to the same ``HTTP1ExchangeHandler`` a connection
/// of its own has. Streams past the origin's concurrent-stream limit wait in NIO's HTTP/2 handler for one to end. Once
/// its last stream has ended, it is closed after the idle timeout unless another starts.
final class HTTP2Connection: Sendable {
    let origin: HTTPConnections.Origin
    let channel: any Channel
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    private let readTimeout: TimeAmount
    private let idleTimeout: TimeAmount

    /// Streams open, and how many were ever opened (an idle close scheduled before the last one is void).
    private struct Streams {
        var open = 0
        var opened = 0
    }

    private let streams = Mutex(Streams())

    init(
        origin: HTTPConnections.Origin, channel: any Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer,
        readTimeout: TimeAmount, idleTimeout: TimeAmount
    ) {
        self.origin = origin
        self.channel = channel
        self.multiplexer = multiplexer
        self.readTimeout = readTimeout
        self.idleTimeout = idleTimeout
    }

    /// A new stream, ready for one exchange: made, and its handler found, in one trip to the connection's event loop.
    func stream(pool: HTTPConnections) async throws -> HTTP1Connection {
        guard channel.isActive else { throw ChannelError.ioOnClosedChannel }
        let readTimeout = readTimeout
        let multiplexer = multiplexer
        let (stream, handler) = try await channel.eventLoop.flatSubmit {
            multiplexer.createStreamChannel { stream in
                stream.eventLoop.makeCompletedFuture {
                    try stream.pipeline.syncOperations.addHandlers([
                        HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https),
                        IdleStateHandler(readTimeout: readTimeout), HTTP1ExchangeHandler(),
                    ])
                }
            }.flatMapThrowing { stream in
                let handler = try stream.pipeline.syncOperations.handler(type: HTTP1ExchangeHandler.self)
                return (stream, NIOLoopBound(handler, eventLoop: stream.eventLoop))
            }
        }.get()
        streams.withLock {
            $0.open += 1
            $0.opened += 1
        }
        stream.closeFuture.whenComplete { [self] _ in streamEnded() }
        return HTTP1Connection(origin: origin, channel: stream, handler: handler, pool: pool, isStream: true)
    }

    private func streamEnded() {
        let opened = streams.withLock { streams -> Int? in
            streams.open -= 1
            return streams.open == 0 ? streams.opened : nil
        }
        guard let opened else { return }
        channel.eventLoop.scheduleTask(in: idleTimeout) { [self] in
            let idle = streams.withLock { $0.open == 0 && $0.opened == opened }
            if idle { channel.close(promise: nil) }
        }
    }
}

/// Waits for a connection's TLS handshake, then makes the connection speak the protocol the origin chose by ALPN
/// (HTTP/2 for `h2`, else HTTP/1.1) before anything else is read, so that nothing the origin sends first (HTTP/2's
/// settings) passes by; fails with the handshake's error, or a timeout when the origin stays silent through it. It
/// passes everything on, so it stays in the pipeline.
final class TLSHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    /// What the handshake made of the connection.
    enum Negotiated: Sendable {
        case http1
        case http2(NIOHTTP2Handler.StreamMultiplexer)
    }

    /// HTTP/2's flow-control windows as curl sets them: 8 MiB a stream, 32 MiB the connection. At HTTP/2's default of
    /// 64 KiB each, six images of 60 KB at once filled the connection's window, and the origin waited for a window
    /// update every 64 KiB: 245 µs of CPU a download here against 118 for HTTP/1.1 over TLS (docs/benchmarks.md).
    static let streamWindow = 8 << 20

    static var connectionConfiguration: NIOHTTP2Handler.ConnectionConfiguration {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.initialSettings =
            nioDefaultSettings + [
                HTTP2Setting(parameter: .initialWindowSize, value: streamWindow)
            ]
        configuration.targetWindowSize = 32 << 20
        return configuration
    }

    static var streamConfiguration: NIOHTTP2Handler.StreamConfiguration {
        var configuration = NIOHTTP2Handler.StreamConfiguration()
        configuration.targetWindowSize = streamWindow
        return configuration
    }

    private var promise: EventLoopPromise<Negotiated>?

    init(promise: EventLoopPromise<Negotiated>) {
        self.promise = promise
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent, let promise {
            self.promise = nil
            do {
                let pipeline = context.pipeline.syncOperations
                if negotiated == "h2" {
                    // An origin does not open streams towards a client: any it tries is closed.
                    let multiplexer = try pipeline.configureHTTP2Pipeline(
                        mode: .client, connectionConfiguration: Self.connectionConfiguration,
                        streamConfiguration: Self.streamConfiguration
                    ) { stream in stream.close() }
                    promise.succeed(.http2(multiplexer))
                } else {
                    try pipeline.addHTTPClientHandlers()
                    try pipeline.addHandler(HTTP1ExchangeHandler())
                    promise.succeed(.http1)
                }
            } catch {
                promise.fail(error)
                context.close(promise: nil)
            }
        } else if let idle = event as? IdleStateHandler.IdleStateEvent, case .read = idle, promise != nil {
            fail(DownloadError.timedOut, context: context)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error, context: context)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise?.fail(DownloadError.connectionLost(reason: "the origin closed the connection during the TLS handshake"))
        promise = nil
        context.fireChannelInactive()
    }

    private func fail(_ error: any Error, context: ChannelHandlerContext) {
        guard let promise else { return }
        self.promise = nil
        promise.fail(error)
        context.close(promise: nil)
    }
}

extension HTTPConnections {
    /// What a failed TLS handshake with `host` is to the caller: a refusal that names the host and says why.
    static func handshakeFailure(_ error: any Error, host: String, authorities: CertificateAuthorities) -> any Error {
        if error is DownloadError { return error }
        let detail = String(describing: error)
        let reason: String
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            reason = "its certificate is not for \(host)"
        } else if detail.contains("CERTIFICATE_VERIFY_FAILED") {
            reason = "its certificate is not signed by \(authorities) (\(detail))"
        } else {
            reason = detail
        }
        return DownloadError.cannotConnect(reason: "TLS handshake with \(host) failed: \(reason)")
    }
}
