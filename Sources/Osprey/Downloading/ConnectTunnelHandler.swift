import NIOCore

/// Opens a tunnel through a forward proxy: sends `CONNECT target` when the connection to the proxy is up, reads the
/// proxy's answer head, and on a 2xx leaves the pipeline to the handlers `then` adds (TLS, for the origin at the other
/// end). Any other answer, a close, a silence past the read timeout or an answer head over 16 KiB fails `failing`
/// with a ``DownloadError`` that names the proxy and the target.
final class ConnectTunnelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let target: String
    private let proxy: EgressProxies.Proxy
    private var promise: EventLoopPromise<TLSHandshakeHandler.Negotiated>?
    private let then: @Sendable (ChannelPipeline.SynchronousOperations) throws -> Void
    private var received: ByteBuffer?

    init(
        target: String, proxy: EgressProxies.Proxy, failing promise: EventLoopPromise<TLSHandshakeHandler.Negotiated>,
        then: @escaping @Sendable (ChannelPipeline.SynchronousOperations) throws -> Void
    ) {
        self.target = target
        self.proxy = proxy
        self.promise = promise
        self.then = then
    }

    func channelActive(context: ChannelHandlerContext) {
        var head = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n"
        if let authorization = proxy.authorization { head += "Proxy-Authorization: \(authorization)\r\n" }
        head += "\r\n"
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: head)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard promise != nil else { return }
        var buffer = unwrapInboundIn(data)
        if received == nil {
            received = buffer
        } else {
            received!.writeBuffer(&buffer)
        }
        guard var head = received else { return }
        let bytes = head.readableBytesView
        guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else {
            if head.readableBytes > 16 << 10 { fail("its answer to CONNECT has no end", context: context) }
            return
        }
        let length = end.upperBound - bytes.startIndex
        let text = head.readString(length: length) ?? ""
        let statusLine = text.prefix { $0 != "\r" }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            fail("its answer to CONNECT is not HTTP (\(statusLine))", context: context)
            return
        }
        guard (200..<300).contains(status) else {
            fail("it answered CONNECT with \(statusLine.dropFirst(parts[0].count + 1))", context: context)
            return
        }
        // The tunnel is open: what follows is the origin's, for the handlers that speak to it, which answer the
        // promise from now on.
        received = nil
        let promise = promise
        self.promise = nil
        do {
            let pipeline = context.pipeline.syncOperations
            try then(pipeline)
            pipeline.removeHandler(context: context, promise: nil)
            if head.readableBytes > 0 { context.fireChannelRead(NIOAny(head)) }
        } catch {
            promise?.fail(error)
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, case .read = idle, let promise {
            self.promise = nil
            promise.fail(DownloadError.timedOut)
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise?.fail(error)
        promise = nil
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise?.fail(
            DownloadError.cannotConnect(
                reason: "the proxy \(proxy) closed the connection before opening a tunnel to \(target)"))
        promise = nil
        context.fireChannelInactive()
    }

    private func fail(_ reason: String, context: ChannelHandlerContext) {
        promise?.fail(
            DownloadError.cannotConnect(reason: "the proxy \(proxy) opened no tunnel to \(target): \(reason)"))
        promise = nil
        context.close(promise: nil)
    }
}
