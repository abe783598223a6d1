import NIOCore
import NIOHTTP1

/// Answers one HTTP/2 stream, which `HTTP2FramePayloadToHTTP1ServerCodec` has turned into HTTP/1 parts: the route's
/// status, headers and body, with ETag / Last-Modified validation and byte ranges; a pause in the body (the stream
/// silent until its gate opens) and a reset after some of the body (the stream closed: RST_STREAM) are played, the
/// connection's other streams going on meanwhile. The other scripts that break the protocol on purpose (delays,
/// trickles, lying lengths) are for HTTP/1.1 and are not played here.
final class OriginHTTP2Handler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let server: OriginServer
    private var head: HTTPRequestHead?

    init(server: OriginServer) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            self.head = nil
            let request = RecordedRequest(head)
            let script: OriginResponse
            switch server.begin(request) {
            case .scripted(let scripted): script = scripted
            case .notFound: script = .status(404)
            case .file(let path): script = (try? OriginResponse.file(path)) ?? .status(404)
            }
            respond(context, request, script.answering(request))
        }
    }

    private func respond(_ context: ChannelHandlerContext, _ request: RecordedRequest, _ script: OriginResponse) {
        let notModified = (200..<300).contains(script.status) && OriginHandler.isNotModified(request, by: script)
        var headers = HTTPHeaders(script.headers.map { ($0.name.lowercased(), $0.value) })
        if let etag = script.etag { headers.add(name: "etag", value: etag) }
        if let lastModified = script.lastModified { headers.add(name: "last-modified", value: lastModified) }
        let body = notModified || request.method == "HEAD" ? [] : script.body
        headers.add(name: "content-length", value: "\(body.count)")
        let status = HTTPResponseStatus(statusCode: notModified ? 304 : script.status)
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http2, status: status, headers: headers))), promise: nil)
        let server = self.server
        let path = request.path
        if let reset = script.resetAfterBodyBytes {
            write(body.prefix(reset), context: context)
            context.flush()
            context.close().whenComplete { _ in server.finish(path) }
            return
        }
        guard let pause = script.bodyPause, pause.afterBytes < body.count else {
            end(body[...], context: context, path: path)
            return
        }
        write(body.prefix(pause.afterBytes), context: context)
        context.flush()
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let rest = body.dropFirst(pause.afterBytes)
        pause.gate.whenOpen {
            bound.eventLoop.execute {
                let (handler, context) = bound.value
                handler.end(rest, context: context, path: path)
            }
        }
    }

    /// Sends the last of the body and ends the stream.
    private func end(_ rest: ArraySlice<UInt8>, context: ChannelHandlerContext, path: String) {
        write(rest, context: context)
        let server = self.server
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in server.finish(path) }
    }

    private func write(_ bytes: ArraySlice<UInt8>, context: ChannelHandlerContext) {
        guard !bytes.isEmpty else { return }
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: bytes)))), promise: nil)
    }
}
