internal import AsyncHTTPClient
import FoundationEssentials
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
internal import NIOSSL
import Synchronization

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

    /// ``perform(_:deadline:report:)`` within the request's deadline, if it has one: the whole download, body
    /// included, is abandoned with ``DownloadError/timedOut`` when it passes. (The HTTP client's own deadline covers
    /// the response head only.)
    func performWithinDeadline(_ request: DownloadRequest, report: @escaping Report) async -> Outcome {
        let deadline = (request.deadline ?? configuration.deadline).flatMap { $0 > .zero ? $0 : nil }
        guard let deadline else { return await attempt(request, deadline: nil, report: report) }
        return await withDeadline(deadline, clock: configuration.clock, overtime: .failure(.timedOut)) {
            await self.attempt(request, deadline: deadline, report: report)
        }
    }

    private func attempt(_ request: DownloadRequest, deadline: Duration?, report: @escaping Report) async -> Outcome {
        do {
            return .success(try await perform(request, deadline: deadline, report: report))
        } catch {
            return .failure(error)
        }
    }

    /// Sends `request`, follows redirects, and streams the body, calling `report` with the body so far, where the new
    /// bytes start, and the expected length after each chunk.
    private func perform(
        _ request: DownloadRequest, deadline: Duration?, report: @escaping Report
    ) async throws(DownloadError) -> DownloadResponse {
        // The deadline races the whole download on the configured clock (performWithinDeadline); on the real clock
        // the HTTP client is told it too, so it gives up on the head itself. A test's clock alone decides: a real
        // deadline would fire on a slow machine however the test moves its clock.
        let nioDeadline =
            configuration.clock is ContinuousClock
            ? deadline.map { NIODeadline.now() + TimeAmount($0) } ?? .distantFuture : .distantFuture
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

            let response: Answer
            if let http1, let origin = try await http1Origin(of: url) {
                do {
                    // The body comes with the head unless a validator must see the head before it is read.
                    response = .http1(
                        try await http1.send(
                            url, to: origin, headers: sent, initialBody: resume?.body ?? [],
                            limit: request.maximumBodySize ?? configuration.maximumBodySize,
                            collectsBody: (request.responseValidator ?? configuration.responseValidator) == nil,
                            report: report))
                } catch let broken as HTTP1Exchange.BrokenBody {
                    let failure = Self.classify(broken.underlying)
                    if let head = broken.head {
                        keepForResuming(broken.body, headers: HTTPFields(head.headers), url: url, after: failure)
                    }
                    throw failure
                } catch {
                    throw Self.classify(error)
                }
            } else {
                var httpRequest = HTTPClientRequest(url: url.absoluteString)
                httpRequest.headers = HTTPHeaders(sent)
                if request.allowsInvalidCertificates { httpRequest.tlsConfiguration = Self.insecureTLS }
                let client = try await client(for: url)
                do {
                    response = .client(
                        try await client.execute(httpRequest, deadline: nioDeadline, logger: configuration.logger))
                } catch {
                    throw Self.classify(error)
                }
            }
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
                        throw .responseRejected(identifier: validator.identifier, reason: "\(error)")
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

    /// The client that connects to `url`: the downloader's own, or, with an address resolver, one pinned to the
    /// address it chose for the URL's host.
    private func client(for url: URL) async throws(DownloadError) -> HTTPClient {
        guard let resolver = configuration.addressResolver, let host = url.host(percentEncoded: false) else {
            return client
        }
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        let address = try await resolver.address(forHost: host, port: port)
        // A literal is connected to as it is: nothing to pin.
        if address == host { return client }
        guard let pinned = pinnedClients.client(host: host, address: address) else { throw .shutDown }
        return pinned
    }

    /// Where the lean HTTP/1.1 client connects for `url`, or `nil` when the URL is for AsyncHTTPClient (`https`).
    private func http1Origin(of url: URL) async throws(DownloadError) -> HTTP1Connections.Origin? {
        guard url.scheme?.lowercased() == "http", let host = url.host(percentEncoded: false), !host.isEmpty else {
            return nil
        }
        let port = url.port ?? 80
        let address = try await configuration.addressResolver?.address(forHost: host, port: port) ?? host
        return HTTP1Connections.Origin(host: host, port: port, address: address)
    }

    /// An answer's head from either client, and its body still to read.
    enum Answer {
        case client(HTTPClientResponse)
        case http1(HTTP1Exchange)

        var status: Int {
            switch self {
            case .client(let response): Int(response.status.code)
            case .http1(let exchange): Int(exchange.head.status.code)
            }
        }

        var headers: HTTPFields {
            switch self {
            case .client(let response): HTTPFields(response.headers)
            case .http1(let exchange): HTTPFields(exchange.head.headers)
            }
        }

        /// Reads and drops a body that is not wanted (a redirect's, an error's), so the connection can be reused; a
        /// long one is abandoned instead, closing the connection.
        func discard() async {
            switch self {
            case .client(let response): await ImageDownloader.discard(response.body)
            case .http1(let exchange):
                // A body collected with the head is read already, its connection back in the pool.
                if exchange.body == nil { await exchange.connection.discardBody() }
            }
        }
    }

    /// Streams a 2xx body, enforcing the size limit as it comes and the announced length at its end.
    private func receive(
        _ response: Answer,
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

        switch response {
        case .client(let response):
            body.reserveCapacity(min(expected ?? 64 << 10, limit))
            do {
                for try await buffer in response.body {
                    guard body.count + buffer.readableBytes <= limit else {
                        throw DownloadError.tooLarge(limit: limit)
                    }
                    let newFrom = body.count
                    buffer.withUnsafeReadableBytes { body.append(contentsOf: $0) }
                    report(body, newFrom, expected)
                }
            } catch {
                let failure = Self.classify(error)
                keepForResuming(body, headers: headers, url: url, after: failure)
                throw failure
            }
        case .http1(let exchange):
            // Gathered on the event loop, the resumed part first (the client was given it), with the head or now.
            if let collected = exchange.body {
                body = collected
                break
            }
            do {
                body = try await exchange.connection.body(report: report)
            } catch let broken as HTTP1Exchange.BrokenBody {
                let failure = Self.classify(broken.underlying)
                keepForResuming(broken.body, headers: headers, url: url, after: failure)
                throw failure
            } catch {
                throw Self.classify(error)
            }
            await exchange.connection.finish()
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
            throw .dataModificationFailed(identifier: modifier.identifier, reason: "\(error)")
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

    /// Reads and drops a body that is not wanted (a redirect's, an error's), so the connection can be reused; a long
    /// one is abandoned instead, closing the connection.
    fileprivate static func discard(_ body: HTTPClientResponse.Body) async {
        var remaining = 64 << 10
        do {
            for try await buffer in body {
                remaining -= buffer.readableBytes
                if remaining < 0 { return }
            }
        } catch {
            return
        }
    }

    /// The TLS configuration of requests that accept any certificate.
    static let insecureTLS: TLSConfiguration = {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        return tls
    }()
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
