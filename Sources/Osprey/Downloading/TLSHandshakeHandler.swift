import NIOCore
import NIOHTTP1
import NIOHTTP2
internal import NIOSSL
import NIOTLS

/// Waits for a connection's TLS handshake, then makes the connection speak the protocol the origin chose by ALPN
/// (HTTP/2 for `h2`, else HTTP/1.1) before anything else is read, so that nothing the origin sends first (HTTP/2's
/// settings) passes by; fails with the handshake's error, or a timeout when the origin stays silent through it. It
/// passes everything on, so it stays in the pipeline. When no protocol was agreed, it looks at the origin's first bytes:
/// HTTP/2's settings there mean an origin that speaks nothing else, which HTTP/1.1's parser would only call broken.
final class TLSHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    /// What the handshake made of the connection.
    enum Negotiated: Sendable {
        /// HTTP/1.1, answered through the exchange handler the connection was made with.
        case http1
        case http2(NIOLoopBoundBox<HTTP2Streams>, HTTP2Streams.Admission)
    }

    private var promise: EventLoopPromise<Negotiated>?
    /// The handler HTTP/1.1's answers go to, added behind the HTTP codec when the origin does not choose HTTP/2.
    private let exchange: NIOLoopBoundBox<HTTP1ExchangeHandler>
    private let host: String
    private let readTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    /// Set when the handshake agreed on no protocol, until the origin's first bytes have been looked at.
    private var looksForHTTP2 = false

    init(
        promise: EventLoopPromise<Negotiated>, exchange: NIOLoopBoundBox<HTTP1ExchangeHandler>, host: String,
        readTimeout: TimeAmount, idleTimeout: TimeAmount
    ) {
        self.promise = promise
        self.exchange = exchange
        self.host = host
        self.readTimeout = readTimeout
        self.idleTimeout = idleTimeout
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent, let promise {
            self.promise = nil
            do {
                let pipeline = context.pipeline.syncOperations
                if negotiated == "h2" {
                    let streams = HTTP2Streams(readTimeout: readTimeout, idleTimeout: idleTimeout)
                    try pipeline.addHandler(
                        NIOHTTP2Handler(mode: .client, connectionConfiguration: HTTP2Streams.connectionConfiguration))
                    try pipeline.addHandler(streams)
                    promise.succeed(.http2(NIOLoopBoundBox(streams, eventLoop: context.eventLoop), streams.admission))
                } else {
                    looksForHTTP2 = negotiated == nil
                    try pipeline.addHTTPClientHandlers()
                    try pipeline.addHandler(exchange.value)
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

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if looksForHTTP2 {
            looksForHTTP2 = false
            if Self.startsWithHTTP2Settings(unwrapInboundIn(data)) {
                // Not retried: the same origin answers the same way until HTTP/2 is offered.
                context.fireErrorCaught(
                    DownloadError.invalidRequest(
                        reason: "\(host) speaks HTTP/2 only, which was not offered: set the downloader's httpVersion "
                            + "to .automatic (the command line's --http2)"))
                context.close(promise: nil)
                return
            }
        }
        context.fireChannelRead(data)
    }

    /// Whether `bytes` begin with an HTTP/2 SETTINGS frame on the connection's stream, which an HTTP/2 server sends
    /// first: a 24-bit length that is a multiple of 6, type 4, and stream 0 (an HTTP/1 answer begins with `HTTP/`).
    static func startsWithHTTP2Settings(_ bytes: ByteBuffer) -> Bool {
        guard let header = bytes.getBytes(at: bytes.readerIndex, length: 9) else { return false }
        let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
        return length % 6 == 0 && header[3] == 0x04 && header[5...8].allSatisfy { $0 == 0 }
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
