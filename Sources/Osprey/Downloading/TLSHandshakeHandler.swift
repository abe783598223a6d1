import NIOCore
import NIOHTTP1
import NIOHTTP2
internal import NIOSSL
import NIOTLS

/// Waits for a connection's TLS handshake, then makes the connection speak the protocol the origin chose by ALPN
/// (HTTP/2 for `h2`, else HTTP/1.1) before anything else is read, so that nothing the origin sends first (HTTP/2's
/// settings) passes by; fails with the handshake's error, or a timeout when the origin stays silent through it. It
/// passes everything on, so it stays in the pipeline.
final class TLSHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    /// What the handshake made of the connection.
    enum Negotiated: Sendable {
        case http1
        case http2(NIOLoopBoundBox<HTTP2Streams>, HTTP2Streams.Admission)
    }

    private var promise: EventLoopPromise<Negotiated>?
    private let readTimeout: TimeAmount
    private let idleTimeout: TimeAmount

    init(promise: EventLoopPromise<Negotiated>, readTimeout: TimeAmount, idleTimeout: TimeAmount) {
        self.promise = promise
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
