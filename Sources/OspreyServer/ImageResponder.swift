import FoundationEssentials
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Osprey
import OspreyCodecs
import Prometheus

/// Turns the proxy's outcomes into HTTP responses.
struct ImageResponder {
    let proxy: ImageProxy

    func respond(to request: Request, style: ImageProxy.URLStyle, logger: Logger, isHead: Bool) async -> Response {
        await admitted(isHead: isHead) { await answer(request, style: style, logger: logger, isHead: isHead) }
    }

    /// Answers `GET /info` (or `HEAD`).
    func respondInfo(to request: Request, logger: Logger, isHead: Bool) async -> Response {
        await admitted(isHead: isHead) {
            let outcome = await proxy.info(query: request.uri.query, path: request.uri.path, logger: logger)
            return response(to: outcome, request: request, isHead: isHead)
        }
    }

    /// `body`'s response when the proxy admits one more request, else a 503 asking to retry in a second.
    private func admitted(isHead: Bool, _ body: () async -> Response) async -> Response {
        guard proxy.admit() else {
            return failure(.unavailable("too many requests in flight", retryAfter: 1), isHead: isHead)
        }
        defer { proxy.release() }
        return await body()
    }

    /// The response to an image URL of `style`.
    private func answer(_ request: Request, style: ImageProxy.URLStyle, logger: Logger, isHead: Bool) async -> Response
    {
        let accept = request.headers[.accept]
        let outcome: ImageProxy.Outcome
        switch style {
        case .img:
            let hints = proxy.configuration.clientHints != nil ? ClientHints(request.headers) : nil
            outcome = await proxy.render(
                query: request.uri.query, path: request.uri.path, accept: accept, hints: hints, logger: logger)
        case .imgproxy, .thumbor:
            let prefix =
                (style == .imgproxy ? proxy.configuration.imgproxy?.path : proxy.configuration.thumbor?.path) ?? "/"
            guard let path = Self.remainder(of: request.uri.path, below: prefix) else {
                return failure(.badRequest("not a URL of this endpoint"), isHead: isHead)
            }
            outcome =
                style == .imgproxy
                ? await proxy.render(imgproxyPath: path, accept: accept, logger: logger)
                : await proxy.render(thumborPath: path, accept: accept, logger: logger)
        }
        var answer = response(to: outcome, request: request, isHead: isHead)
        if style == .img, proxy.configuration.clientHints != nil {
            answer.headers[HTTPField.Name("Accept-CH")!] = ClientHints.accepted
        }
        return answer
    }

    /// The response for `outcome`.
    private func response(to outcome: ImageProxy.Outcome, request: Request, isHead: Bool) -> Response {
        switch outcome {
        case .image(let image, let signed, let vary, let expires, let disposition):
            var response = success(
                image, signed: signed, vary: vary, maxAge: proxy.maxAge(expires: expires),
                ifNoneMatch: request.headers[values: .ifNoneMatch], isHead: isHead)
            if let disposition { response.headers[.contentDisposition] = disposition }
            return response
        case .json(let bytes, let signed, let expires):
            var headers = HTTPFields()
            headers[.cacheControl] = Self.publicCacheControl(signed: signed, maxAge: proxy.maxAge(expires: expires))
            // A strong validator: the document is a function of the source's bytes and the URL.
            let etag = EncodedImage.digest(of: bytes)
            headers[.eTag] = etag
            if Self.matches(request.headers[values: .ifNoneMatch], etag: etag) {
                return Response(status: .notModified, headers: headers)
            }
            headers[.contentType] = "application/json; charset=utf-8"
            headers[.contentLength] = String(bytes.count)
            return Response(
                status: .ok, headers: headers,
                body: isHead ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
        case .fallback(let image, let status, let vary):
            var headers = HTTPFields()
            headers[.cacheControl] = "no-store"
            if !vary.isEmpty { headers[.vary] = vary.joined(separator: ", ") }
            headers[.contentType] = image.format.mimeType
            headers[.contentLength] = String(image.bytes.readableBytes)
            let body = isHead ? ResponseBody() : ResponseBody(byteBuffer: image.bytes)
            return Response(status: HTTPResponse.Status(code: status), headers: headers, body: body)
        case .failure(let error):
            return failure(error, isHead: isHead)
        }
    }

    private func success(
        _ image: RenderedImage, signed: Bool, vary: [String], maxAge: Int, ifNoneMatch: [String], isHead: Bool
    ) -> Response {
        var headers = HTTPFields()
        switch image.storagePermission {
        case .anyCache:
            headers[.cacheControl] = Self.publicCacheControl(signed: signed, maxAge: maxAge)
        case .privateCacheOnly:
            // The origin keeps it from shared caches: so does the proxy, and so must a CDN or nginx in front.
            headers[.cacheControl] = "private, max-age=\(maxAge)"
        case .none:
            headers[.cacheControl] = "no-store"
        }
        headers[.eTag] = image.etag
        if let quality = image.quality { headers[.ospreyQuality] = String(quality) }
        if !vary.isEmpty { headers[.vary] = vary.joined(separator: ", ") }
        if Self.matches(ifNoneMatch, etag: image.etag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = image.format.mimeType
        headers[.contentLength] = String(image.bytes.readableBytes)
        guard !isHead else { return Response(status: .ok, headers: headers) }
        proxy.metrics.bytesServed.increment(by: Int64(image.bytes.readableBytes))
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: image.bytes))
    }

    /// `Cache-Control` for an answer any cache may keep: a signed URL's never changes, so it is also `immutable`.
    static func publicCacheControl(signed: Bool, maxAge: Int) -> String {
        signed ? "public, max-age=\(maxAge), immutable" : "public, max-age=\(maxAge)"
    }

    private func failure(_ error: ProxyError, isHead: Bool) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        if case .unavailable(_, let retryAfter?) = error { headers[.retryAfter] = String(retryAfter) }
        let body = ErrorBody(error: error.message, status: error.status)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let bytes = (try? encoder.encode(body)).map { Array($0) } ?? []
        headers[.contentLength] = String(bytes.count)
        return Response(
            status: HTTPResponse.Status(code: error.status), headers: headers,
            body: isHead ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The part of `path` (as the client sent it) below `prefix`, from its slash: `/SIG/rs:fit:300:0/plain/http://…`
    /// of `/imgproxy/SIG/…` under `/imgproxy` (or under a mount point before it); `nil` when the prefix is not in it.
    static func remainder(of path: String, below prefix: String) -> String? {
        let trimmed = prefix.split(separator: "/").joined(separator: "/")
        if trimmed.isEmpty { return path.hasPrefix("/") ? path : nil }
        let marker = Array(("/" + trimmed + "/").utf8)
        let bytes = Array(path.utf8)
        guard bytes.count >= marker.count,
            let start = (0...(bytes.count - marker.count)).first(where: {
                bytes[$0..<$0 + marker.count].elementsEqual(marker)
            })
        else { return nil }
        return String(decoding: bytes[(start + marker.count - 1)...], as: UTF8.self)
    }

    /// Whether an `If-None-Match` header (its values, each possibly a list) names `etag`, weakly compared, or is `*`.
    static func matches(_ values: [String], etag: String) -> Bool {
        for value in values {
            for item in value.split(separator: ",") {
                var tag = item.trimmingWhitespace()
                if tag == "*" { return true }
                if tag.hasPrefix("W/") { tag.removeFirst(2) }
                if tag == etag { return true }
            }
        }
        return false
    }

    struct ErrorBody: Encodable {
        let error: String
        let status: Int
    }
}

extension HTTPField.Name {
    /// The quality a search chose for the answer's bytes (`q=auto`, `mb`).
    static let ospreyQuality = Self("Osprey-Quality")!
}
