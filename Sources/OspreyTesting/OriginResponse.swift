import Foundation
import OspreyCodecs

/// What the ``OriginServer`` answers on one path: a script of status, headers, body, timing and misbehaviour.
///
/// Build one from a factory and refine it with modifiers, each returning a new value:
///
/// ```swift
/// server.route("/cat.jpg", .ok(bytes, contentType: "image/jpeg").withETag("\"v1\"").trickled(bytes: 512, every: .milliseconds(10)))
/// server.route("/slow", .ok(bytes).delayed(by: .seconds(2)))
/// server.route("/loop", .redirect(to: "/loop"))
/// ```
public struct OriginResponse: Sendable {
    /// The status code. 200 by default.
    public var status: Int
    /// Extra headers, sent in this order after the status line. `Content-Length` or `Transfer-Encoding` is added by
    /// the server unless ``lyingContentLength`` replaces it.
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: [UInt8]
    /// Wait this long after the request before sending anything. `nil` by default.
    public var delayBeforeHeaders: Duration?
    /// Hold the response (headers and all) until this gate opens. `nil` by default.
    public var gate: OriginGate?
    /// Send the body with chunked transfer encoding, `bytes` per chunk, one chunk every `interval`. `nil` by default.
    public var trickle: (bytes: Int, interval: Duration)?
    /// The entity tag: a request whose `If-None-Match` names it gets 304 Not Modified. `nil` by default.
    public var etag: String?
    /// The `Last-Modified` date (an HTTP date): a request whose `If-Modified-Since` is this date or later gets 304
    /// (unless it also sent `If-None-Match`, which then decides alone). `nil` by default.
    public var lastModified: String?
    /// Declare this `Content-Length` whatever the body's real length, then close the connection after the body.
    /// `nil` by default.
    public var lyingContentLength: Int?
    /// Reset the connection (TCP RST) after sending this many body bytes. `nil` by default.
    public var resetAfterBodyBytes: Int?
    /// Send this many body bytes, then wait for the gate before the rest. `nil` by default.
    public var bodyPause: (afterBytes: Int, gate: OriginGate)?
    /// Send `Accept-Ranges: bytes` and answer `Range: bytes=N-` with 206 and the rest of the body, when its `If-Range`
    /// (if any) names the current ETag or Last-Modified. `false` by default.
    public var acceptsRanges = false

    /// Makes a response; prefer the factories.
    public init(status: Int = 200, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    // MARK: Factories

    /// 200 with `body`, and `Content-Type` when given.
    public static func ok(_ body: some Sequence<UInt8>, contentType: String? = nil) -> OriginResponse {
        OriginResponse(status: 200, headers: contentType.map { [("Content-Type", $0)] } ?? [], body: Array(body))
    }

    /// 200 with the bytes of the file at `path`, typed from its first bytes (image/jpeg, image/png, ...).
    public static func file(_ path: String) throws -> OriginResponse {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        return .ok(bytes, contentType: ImageFormat(sniffing: bytes).mimeType)
    }

    /// `status` with a short plain-text body naming it.
    public static func status(_ status: Int) -> OriginResponse {
        OriginResponse(
            status: status, headers: [("Content-Type", "text/plain")], body: Array("status \(status)\n".utf8))
    }

    /// A redirect (302 by default) to `location`, a path on this server or an absolute URL.
    public static func redirect(to location: String, status: Int = 302) -> OriginResponse {
        OriginResponse(status: status, headers: [("Location", location)])
    }

    // MARK: Modifiers

    /// Adds a header.
    public func header(_ name: String, _ value: String) -> OriginResponse {
        var copy = self
        copy.headers.append((name, value))
        return copy
    }

    /// Waits `delay` after the request before sending the status line.
    public func delayed(by delay: Duration) -> OriginResponse {
        var copy = self
        copy.delayBeforeHeaders = delay
        return copy
    }

    /// Holds the whole response until `gate` opens (after any delay).
    public func held(by gate: OriginGate) -> OriginResponse {
        var copy = self
        copy.gate = gate
        return copy
    }

    /// Sends the body chunked, `bytes` per chunk, one chunk every `interval`; no `Content-Length`.
    public func trickled(bytes: Int, every interval: Duration) -> OriginResponse {
        precondition(bytes > 0, "a trickle sends at least one byte per chunk")
        var copy = self
        copy.trickle = (bytes, interval)
        return copy
    }

    /// Sends the first `bytes` bytes of the body (in pieces, when trickled), then holds the rest until `gate` opens:
    /// a client sees part of the body for as long as the test needs.
    public func pausing(afterBodyBytes bytes: Int, until gate: OriginGate) -> OriginResponse {
        var copy = self
        copy.bodyPause = (bytes, gate)
        return copy
    }

    /// Sends `ETag: etag` and answers a matching `If-None-Match` with 304.
    public func withETag(_ etag: String) -> OriginResponse {
        var copy = self
        copy.etag = etag
        return copy
    }

    /// Sends `Last-Modified: date` and answers an `If-Modified-Since` of that date or later with 304.
    public func withLastModified(_ date: String) -> OriginResponse {
        var copy = self
        copy.lastModified = date
        return copy
    }

    /// Declares `Content-Length: length` whatever the body's real length, then closes the connection after the body.
    public func lyingContentLength(_ length: Int) -> OriginResponse {
        var copy = self
        copy.lyingContentLength = length
        return copy
    }

    /// Answers byte-range requests (`Range: bytes=N-`, with `If-Range`) with 206 Partial Content.
    public func acceptingRanges() -> OriginResponse {
        var copy = self
        copy.acceptsRanges = true
        return copy
    }

    /// The response to `request`: the partial one it asks for when ranges are accepted and its `If-Range` matches.
    func answering(_ request: RecordedRequest) -> OriginResponse {
        guard acceptsRanges else { return self }
        var answer = header("Accept-Ranges", "bytes")
        guard status == 200, let range = request.header("Range"), range.hasPrefix("bytes="), range.hasSuffix("-"),
            let first = Int(range.dropFirst("bytes=".count).dropLast()), first < body.count
        else { return answer }
        if let ifRange = request.header("If-Range"), ifRange != etag, ifRange != lastModified { return answer }
        answer.status = 206
        answer.headers.append(("Content-Range", "bytes \(first)-\(body.count - 1)/\(body.count)"))
        answer.body = Array(body[first...])
        return answer
    }

    /// Sends the headers and the first `bytes` bytes of the body, then resets the connection.
    public func resettingAfter(bytes: Int) -> OriginResponse {
        var copy = self
        copy.resetAfterBodyBytes = bytes
        return copy
    }
}
