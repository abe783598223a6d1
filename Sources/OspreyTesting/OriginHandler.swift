import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// Answers one connection's requests in order, writing raw HTTP/1.1 bytes so that a script can break the protocol on
/// purpose (lie about the length, reset mid-body) in ways a conforming encoder would refuse to.
///
/// Lives on its channel's event loop; every callback it schedules comes back to that loop.
final class OriginHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    private let server: OriginServer
    /// The head of the request being received.
    private var receiving: HTTPRequestHead?
    /// Complete requests waiting for the one being answered (a client may pipeline).
    private var queue: [HTTPRequestHead] = []
    /// The request counted as in flight, if any.
    private var answering: RecordedRequest?
    /// Whether a response is being written; the next request waits for it.
    private var isBusy = false
    private var isActive = true

    init(server: OriginServer) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            receiving = head
        case .body:
            break
        case .end:
            guard let head = receiving else { return }
            receiving = nil
            queue.append(head)
            if !isBusy { answerNext(context) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        isActive = false
        if let answering {
            server.finish(answering.path, aborted: true)
            self.answering = nil
        }
        queue.removeAll()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A malformed request or a client that went away: nothing to answer.
        context.close(promise: nil)
    }

    // MARK: Answering

    private func answerNext(_ context: ChannelHandlerContext) {
        guard isActive, !queue.isEmpty else { return }
        let head = queue.removeFirst()
        let request = RecordedRequest(head)
        answering = request
        isBusy = true
        let keepAlive = head.isKeepAlive
        switch server.begin(request) {
        case .scripted(let script):
            wait(context, request, script, keepAlive)
        case .notFound:
            send(context, request, .status(404), keepAlive)
        case .file(let path):
            // Reading a file blocks: do it on NIO's thread pool, then come back to this loop.
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            NIOThreadPool.singleton.runIfActive(eventLoop: context.eventLoop) { try OriginResponse.file(path) }
                .whenComplete { result in
                    let (handler, context) = bound.value
                    handler.send(context, request, (try? result.get()) ?? .status(404), keepAlive)
                }
        }
    }

    /// Waits for the script's delay, then its gate, then sends.
    private func wait(
        _ context: ChannelHandlerContext, _ request: RecordedRequest, _ script: OriginResponse, _ keepAlive: Bool
    ) {
        if let delay = script.delayBeforeHeaders {
            var rest = script
            rest.delayBeforeHeaders = nil
            context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(delay)) {
                self.wait(context, request, rest, keepAlive)
            }
        } else if let gate = script.gate {
            var ungated = script
            ungated.gate = nil
            let rest = ungated
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            gate.whenOpen {
                bound.eventLoop.execute {
                    let (handler, context) = bound.value
                    handler.wait(context, request, rest, keepAlive)
                }
            }
        } else {
            send(context, request, script, keepAlive)
        }
    }

    private func send(
        _ context: ChannelHandlerContext, _ request: RecordedRequest, _ script: OriginResponse, _ keepAlive: Bool
    ) {
        guard isActive else { return }
        let script = script.answering(request)
        let notModified = (200..<300).contains(script.status) && Self.isNotModified(request, by: script)
        let status = notModified ? 304 : script.status
        let isHead = request.method == "HEAD"
        let hasBody = !notModified && !isHead && status != 204 && status >= 200
        let chunked = hasBody && script.trickle != nil && script.lyingContentLength == nil
        let closes = !keepAlive || script.lyingContentLength != nil || script.resetAfterBodyBytes != nil

        var head = "HTTP/1.1 \(status) \(HTTPResponseStatus(statusCode: status).reasonPhrase)\r\n"
        for (name, value) in script.headers { head += "\(name): \(value)\r\n" }
        if let etag = script.etag { head += "ETag: \(etag)\r\n" }
        if let lastModified = script.lastModified { head += "Last-Modified: \(lastModified)\r\n" }
        if let lie = script.lyingContentLength {
            head += "Content-Length: \(lie)\r\n"
        } else if chunked {
            head += "Transfer-Encoding: chunked\r\n"
        } else if !notModified {
            head += "Content-Length: \(hasBody || isHead ? script.body.count : 0)\r\n"
        }
        if closes { head += "Connection: close\r\n" }
        head += "\r\n"
        context.write(wrapOutboundOut(context.channel.allocator.buffer(string: head)), promise: nil)

        let body = hasBody ? script.body[..<min(script.resetAfterBodyBytes ?? .max, script.body.count)] : []
        let pieceSize = script.trickle?.bytes ?? max(body.count, 1)
        let pacing = BodyPacing(pieceSize: pieceSize, interval: script.trickle?.interval, pause: script.bodyPause)
        writeBody(context, body, pacing, chunked: chunked) {
            if script.resetAfterBodyBytes != nil {
                // SO_LINGER 0 turns close() into a TCP RST: the client sees "connection reset", not a clean end.
                guard let socket = context.channel as? any SocketOptionProvider else {
                    context.close(promise: nil)
                    return
                }
                // struct linger is { int l_onoff; int l_linger; }: a homogeneous tuple has exactly that layout. (The
                // C struct's own initialiser is not visible from here under MemberImportVisibility.)
                let lingerZero: (Int32, Int32) = (1, 0)
                socket.unsafeSetSocketOption(level: .socket, name: .so_linger, value: lingerZero)
                    .assumeIsolated().whenComplete { _ in
                        context.close(promise: nil)
                    }
            } else if closes {
                context.close(promise: nil)
            } else {
                self.isBusy = false
                self.answerNext(context)
            }
        }
    }

    /// How a body goes out: pieces of `pieceSize` bytes, one every `interval` (all at once without one), waiting at
    /// `pause` for its gate.
    private struct BodyPacing {
        var pieceSize: Int
        var interval: Duration?
        var pause: (afterBytes: Int, gate: OriginGate)?
    }

    /// Writes `body` (a slice of the whole body, so its start index is the count sent so far) as `pacing` says, as
    /// chunks when `chunked` (ending with the last chunk only when the whole body was meant to go), then calls `done`
    /// on the loop.
    private func writeBody(
        _ context: ChannelHandlerContext,
        _ body: ArraySlice<UInt8>,
        _ pacing: BodyPacing,
        chunked: Bool,
        done: @escaping () -> Void
    ) {
        guard isActive else { return }
        var pieceSize = pacing.pieceSize
        if let pause = pacing.pause, body.startIndex < pause.afterBytes {
            pieceSize = min(pieceSize, pause.afterBytes - body.startIndex)
        } else if let pause = pacing.pause, !body.isEmpty {
            let unpaused = BodyPacing(pieceSize: pacing.pieceSize, interval: pacing.interval, pause: nil)
            let bound = NIOLoopBound((self, context, done), eventLoop: context.eventLoop)
            pause.gate.whenOpen {
                bound.eventLoop.execute {
                    let (handler, context, done) = bound.value
                    handler.writeBody(context, body, unpaused, chunked: chunked, done: done)
                }
            }
            return
        }
        let piece = body.prefix(pieceSize)
        let rest = body.dropFirst(piece.count)
        var buffer = context.channel.allocator.buffer(capacity: piece.count + 16)
        if chunked, !piece.isEmpty {
            buffer.writeString(String(piece.count, radix: 16) + "\r\n")
            buffer.writeBytes(piece)
            buffer.writeString("\r\n")
        } else {
            buffer.writeBytes(piece)
        }
        let isLast = rest.isEmpty
        if isLast, chunked { buffer.writeString("0\r\n\r\n") }
        if isLast, let answering {
            // Counted as done before the last bytes leave, so a client holding the whole response sees it finished.
            server.finish(answering.path)
            self.answering = nil
        }
        context.writeAndFlush(wrapOutboundOut(buffer)).assumeIsolated().whenComplete { _ in
            if isLast {
                done()
            } else if let interval = pacing.interval {
                context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(interval)) {
                    self.writeBody(context, rest, pacing, chunked: chunked, done: done)
                }
            } else {
                self.writeBody(context, rest, pacing, chunked: chunked, done: done)
            }
        }
    }

    /// Whether a conditional request is answered 304: `If-None-Match` decides alone when present (RFC 9110 §13.2.2),
    /// else `If-Modified-Since` at or after `Last-Modified`.
    static func isNotModified(_ request: RecordedRequest, by script: OriginResponse) -> Bool {
        if let ifNoneMatch = request.header("If-None-Match") {
            guard let etag = script.etag else { return false }
            let opaque = { (tag: Substring) in
                tag.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "W/", with: "")
            }
            return ifNoneMatch.split(separator: ",").contains { candidate in
                let candidate = opaque(candidate)
                return candidate == "*" || candidate == opaque(Substring(etag))
            }
        }
        if let ifModifiedSince = request.header("If-Modified-Since"), let lastModified = script.lastModified,
            let since = HTTPDate.parse(ifModifiedSince), let modified = HTTPDate.parse(lastModified)
        {
            return modified <= since
        }
        return false
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
