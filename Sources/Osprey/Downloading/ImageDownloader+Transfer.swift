import FoundationEssentials
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
internal import Tracing

extension ImageDownloader {
    typealias Report = @Sendable (_ body: [UInt8], _ newFrom: Int, _ expected: Int?) -> Void
    typealias Outcome = Result<DownloadResponse, DownloadError>

    /// ``performWithinDeadline(_:report:)``, tried again as the request's (or the downloader's) ``RetryStrategy``
    /// says. Progress of a retry is reported only past the bytes already reported, so that callers hear each byte
    /// once however often the body starts over.
    func performRetrying(_ request: DownloadRequest, report: @escaping Report) async -> Outcome {
        let reported = Atomic<Int>(0)
        let reportOnce: Report = { body, newFrom, expected in
            let before = reported.load(ordering: .relaxed)
            guard body.count > before else { return }
            reported.store(body.count, ordering: .relaxed)
            report(body, max(newFrom, before), expected)
        }
        var outcome = await performWithinDeadline(request, report: reportOnce)
        guard let strategy = request.retryStrategy ?? configuration.retryStrategy else { return outcome }
        var retry = 1
        while case .failure(let error) = outcome, strategy.allowsRetry(retry, after: error), !Task.isCancelled {
            let delay = strategy.delay(beforeRetry: retry, after: error)
            configuration.logger.debug(
                "download retried",
                metadata: ["osprey.url": "\(request.url)", "osprey.error": "\(error)", "osprey.retry": "\(retry)"])
            do {
                try await configuration.clock.sleep(for: delay)
            } catch {
                return .failure(.cancelled)
            }
            outcome = await performWithinDeadline(request, report: reportOnce)
            retry += 1
        }
        return outcome
    }

    /// ``perform(_:report:)`` within the request's deadline, if it has one: the whole download, body included, is
    /// abandoned with ``DownloadError/timedOut`` when it passes (the transfer's task is cancelled, which closes its
    /// connection).
    func performWithinDeadline(_ request: DownloadRequest, report: @escaping Report) async -> Outcome {
        let deadline = (request.deadline ?? configuration.deadline).flatMap { $0 > .zero ? $0 : nil }
        guard let deadline else { return await attempt(request, report: report) }
        return await withDeadline(deadline, clock: configuration.clock, overtime: .failure(.timedOut)) {
            await self.attempt(request, report: report)
        }
    }

    private func attempt(_ request: DownloadRequest, report: @escaping Report) async -> Outcome {
        do {
            return .success(try await perform(request, report: report))
        } catch {
            return .failure(error)
        }
    }

    /// Sends `request`, follows redirects, and streams the body, calling `report` with the body so far, where the new
    /// bytes start, and the expected length after each chunk.
    private func perform(
        _ request: DownloadRequest, report: @escaping Report
    ) async throws(DownloadError) -> DownloadResponse {
        let handlesCookies = request.handlesCookies ?? configuration.handlesCookies
        let headers = try await preparedHeaders(for: request)
        let origin = Origin(request.url)
        var url = request.url
        var resume = resumableData.take(for: request.url)
        var redirects = 0

        while true {
            var sent = headers
            if Origin(url) != origin {
                // Credentials and their like are for the origin they were given for, not for where it redirects.
                sent[.authorization] = nil
                sent[.cookie] = nil
            }
            if handlesCookies, let cookie = cookies.headerValue(for: url) {
                sent[.cookie] = cookie
            }
            if let validators = request.validators {
                if let etag = validators.etag { sent[.ifNoneMatch] = etag }
                if let lastModified = validators.lastModified { sent[.ifModifiedSince] = lastModified }
            }
            if let resume, url == request.url {
                sent[.range] = "bytes=\(resume.body.count)-"
                sent[.ifRange] = resume.validator
            }

            let response = try await send(url, headers: sent, of: request, resuming: resume, report: report)
            let fields = response.headers
            if handlesCookies { cookies.store(fields[values: .setCookie], from: url) }

            let status = response.status
            switch status {
            case 301, 302, 303, 307, 308:
                guard let location = fields[.location] else {
                    await response.discard()
                    throw .httpStatus(code: status, headers: fields)
                }
                await response.discard()
                redirects += 1
                guard redirects <= configuration.maximumRedirects else {
                    throw .tooManyRedirects(limit: configuration.maximumRedirects)
                }
                guard let next = URL(string: location, relativeTo: url)?.absoluteURL, Self.problem(with: next) == nil
                else { throw .invalidRedirect(location: location) }
                url = next
            case 304:
                await response.discard()
                return DownloadResponse(
                    requestedURL: request.url, url: url, statusCode: 304, headers: fields, body: [])
            case 200..<300:
                if status != 206 { resume = nil }
                if let validator = request.responseValidator ?? configuration.responseValidator {
                    do {
                        try validator.validate(
                            DownloadResponseHead(url: url, statusCode: status, headers: fields))
                    } catch {
                        await response.discard()
                        throw .responseRejected(identifier: validator.identifier, error: error)
                    }
                }
                let received = try await receive(
                    response, headers: fields, of: request, from: url, resuming: resume, report: report)
                return try modified(received, by: request.dataModifier ?? configuration.dataModifier, request: request)
            default:
                await response.discard()
                throw .httpStatus(code: status, headers: fields)
            }
        }
    }

    /// Sends one request of a transfer (the URL or a redirect's target) and waits for the answer's head, in the HTTP
    /// client's span of it (`GET`, a client span) when there is a tracer; the trace goes on to the origin in the
    /// headers the tracer writes (W3C `traceparent` with OpenTelemetry's).
    private func send(
        _ url: URL, headers: HTTPFields, of request: DownloadRequest, resuming resume: ResumableData?,
        report: @escaping Report
    ) async throws(DownloadError) -> HTTP1Exchange {
        let origin = try await connectionOrigin(of: url, allowsInvalidCertificates: request.allowsInvalidCertificates)
        return try await tracing.withSpan("GET", ofKind: .client) { span throws(DownloadError) in
            var headers = headers
            if let tracer = tracing.tracer, let context = InstrumentationContext.current {
                tracer.inject(context, into: &headers, using: HTTPFieldsInjector())
            }
            span.set("http.request.method", "GET")
            span.set("url.full", Self.tracedURL(url))
            span.set("server.address", origin.host)
            span.set("server.port", origin.port)
            do {
                // The body comes with the head unless a validator must see the head before it is read.
                let exchange = try await connections.send(
                    url, to: origin, headers: headers, initialBody: resume?.body ?? [],
                    limit: request.maximumBodySize ?? configuration.maximumBodySize,
                    collectsBody: (request.responseValidator ?? configuration.responseValidator) == nil,
                    report: report)
                span.set("http.response.status_code", Int(exchange.head.status.code))
                return exchange
            } catch let broken as HTTP1Exchange.BrokenBody {
                let failure = Self.classify(broken.underlying)
                if let head = broken.head {
                    keepForResuming(broken.body, headers: HTTPFields(head.headers), url: url, after: failure)
                }
                throw failure
            } catch {
                throw Self.classify(error)
            }
        }
    }

    /// Where the HTTP client connects for `url`: its scheme, host and port, and the address the resolver chose (the
    /// host's own name without one).
    private func connectionOrigin(
        of url: URL, allowsInvalidCertificates: Bool
    ) async throws(DownloadError) -> HTTPConnections.Origin {
        guard let host = url.host(percentEncoded: false), !host.isEmpty else {
            throw .invalidRequest(reason: "the URL has no host")
        }
        let isSecure = url.scheme?.lowercased() == "https"
        let port = url.port ?? (isSecure ? 443 : 80)
        let address = try await configuration.addressResolver?.address(forHost: host, port: port) ?? host
        return HTTPConnections.Origin(
            isSecure: isSecure, host: host, port: port, address: address,
            verifiesCertificate: !allowsInvalidCertificates,
            proxy: configuration.proxies?.proxy(scheme: isSecure ? "https" : "http", host: host))
    }

    /// Streams a 2xx body, enforcing the size limit as it comes and the announced length at its end.
    private func receive(
        _ response: HTTP1Exchange,
        headers: HTTPFields,
        of request: DownloadRequest,
        from url: URL,
        resuming resume: ResumableData?,
        report: @escaping Report
    ) async throws(DownloadError) -> DownloadResponse {
        let status = response.status
        let limit = request.maximumBodySize ?? configuration.maximumBodySize
        let announced = headers[.contentLength].flatMap { Int($0) }
        var body: [UInt8] = []
        if status == 206 {
            // Only a continuation of exactly what was kept can be appended to it.
            guard let resume, Self.rangeStart(headers) == resume.body.count else {
                await response.discard()
                throw .httpStatus(code: status, headers: headers)
            }
            body = resume.body
        }
        let resumedBytes = body.count
        let expected = announced.map { $0 + resumedBytes }
        if let expected, expected > limit {
            await response.discard()
            throw .tooLarge(limit: limit)
        }

        // Gathered on the event loop, the resumed part first (the client was given it), with the head or now.
        if let collected = response.body {
            body = collected
        } else {
            do {
                body = try await response.connection.body(report: report)
            } catch let broken as HTTP1Exchange.BrokenBody {
                let failure = Self.classify(broken.underlying)
                keepForResuming(broken.body, headers: headers, url: url, after: failure)
                throw failure
            } catch {
                throw Self.classify(error)
            }
            await response.connection.finish()
        }
        if let expected, body.count != expected {
            let failure = DownloadError.incompleteBody(expected: expected, received: body.count)
            keepForResuming(body, headers: headers, url: url, after: failure)
            throw failure
        }
        return DownloadResponse(
            requestedURL: request.url, url: url, statusCode: status, headers: headers, body: body,
            resumedBytes: resumedBytes)
    }

    /// `response` with its body as `modifier` makes it (unchanged without one), held to the body size limit.
    private func modified(
        _ response: DownloadResponse, by modifier: DataModifier?, request: DownloadRequest
    ) throws(DownloadError) -> DownloadResponse {
        guard let modifier else { return response }
        let body: [UInt8]
        do {
            body = try modifier.modify(response.body, response.url)
        } catch {
            throw .dataModificationFailed(identifier: modifier.identifier, error: error)
        }
        let limit = request.maximumBodySize ?? configuration.maximumBodySize
        guard body.count <= limit else { throw .tooLarge(limit: limit) }
        return DownloadResponse(
            requestedURL: response.requestedURL, url: response.url, statusCode: response.statusCode,
            headers: response.headers, body: body, resumedBytes: response.resumedBytes)
    }

    /// Keeps a body broken off by the network for the next request of its URL (``ResumableDataStore`` decides
    /// whether the origin's headers allow resuming it).
    private func keepForResuming(
        _ body: [UInt8], headers: HTTPFields, url: URL, after failure: DownloadError
    ) {
        switch failure {
        case .connectionLost, .incompleteBody, .timedOut:
            resumableData.keep(body, headers: headers, for: url)
        default:
            break
        }
    }

    /// The downloader's headers, then the request's (replacing by name), credentials, and the modifier's changes.
    private func preparedHeaders(for request: DownloadRequest) async throws(DownloadError) -> HTTPFields {
        var headers = state.withLock { $0.headers }
        for name in Set(request.headers.map(\.name)) { headers[name] = nil }
        headers.append(contentsOf: request.headers)
        do {
            switch request.credentials ?? configuration.credentials {
            case .basic(let user, let password):
                headers[.authorization] = Self.basicAuthorization(user, password)
            case .provider(let provider):
                if let (user, password) = try await provider.lookUp(request.url) {
                    headers[.authorization] = Self.basicAuthorization(user, password)
                }
            case nil:
                break
            }
            if let modifier = request.modifier ?? configuration.modifier {
                try await modifier.modify(request.url, &headers)
            }
        } catch {
            throw .cancelled
        }
        return headers
    }

    static func basicAuthorization(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    /// The first byte position of a `Content-Range: bytes FIRST-LAST/LENGTH` header.
    static func rangeStart(_ headers: HTTPFields) -> Int? {
        guard let value = headers[.contentRange], value.hasPrefix("bytes ") else { return nil }
        return Int(value.dropFirst("bytes ".count).prefix { $0 != "-" })
    }
}

/// Scheme, host and port: what credentials and cookies stay within.
struct Origin: Equatable {
    let scheme: String?
    let host: String?
    let port: Int?

    init(_ url: URL) {
        scheme = url.scheme?.lowercased()
        host = url.host(percentEncoded: false)?.lowercased()
        port = url.port ?? (scheme == "https" ? 443 : 80)
    }
}

extension HTTP1Exchange {
    var status: Int { Int(head.status.code) }

    var headers: HTTPFields { HTTPFields(head.headers) }

    /// Reads and drops a body that is not wanted (a redirect's, an error's), so the connection can be reused; a long
    /// one is abandoned instead, closing the connection. A body collected with the head is read already, its
    /// connection back in the pool.
    func discard() async {
        if body == nil { await connection.discardBody() }
    }
}

/// Writes a tracer's propagation headers (W3C `traceparent` with OpenTelemetry's) into a request's fields.
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into fields: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        fields[name] = value
    }
}
