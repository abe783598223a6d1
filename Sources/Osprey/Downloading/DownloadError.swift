import FoundationEssentials
public import HTTPTypes

/// Why a download failed, and whether trying again later could help.
///
/// ``isTransient`` sorts every failure into one of two kinds, for the manager's failed-URL list:
///
/// | transient (never listed) | lasting (listed until `retryFailed` or a success) |
/// | --- | --- |
/// | ``cancelled``, ``timedOut`` | ``httpStatus(code:headers:)`` with any other 4xx (404, 403, 410, ...) |
/// | ``cannotConnect(reason:)``: DNS failure, refused, unreachable | ``tooLarge(limit:)``, ``addressRefused(host:reason:)`` |
/// | ``connectionLost(reason:)``: reset, closed mid-body | ``tooManyRedirects(limit:)``, ``invalidRedirect(location:)`` |
/// | ``incompleteBody(expected:received:)`` | ``invalidRequest(reason:)`` |
/// | | ``responseRejected(identifier:error:)``, ``dataModificationFailed(identifier:error:)`` |
/// | ``httpStatus(code:headers:)`` with 408, 425, 429 or 5xx | |
/// | ``shutDown`` | |
///
/// 408, 425, 429 and 5xx are the statuses that speak of the moment (timeouts, rate limits, outages), and
/// ``retryAfter`` gives the `Retry-After` the origin sent with them.
public enum DownloadError: Error, Sendable, CustomStringConvertible {
    /// Every caller left, ``ImageDownloader/cancelAll()`` was called, or a request modifier threw.
    case cancelled
    /// The connection could not be made, or the origin fell silent, within the timeout; or the deadline passed.
    case timedOut
    /// The origin could not be reached: its name did not resolve, or the connection was refused.
    case cannotConnect(reason: String)
    /// The connection broke before the response was complete (reset, closed).
    case connectionLost(reason: String)
    /// The origin closed the response after `received` of the `expected` bytes its `Content-Length` promised.
    case incompleteBody(expected: Int, received: Int)
    /// The origin answered with a status other than 2xx or 304.
    case httpStatus(code: Int, headers: HTTPFields)
    /// The body is larger than `limit` bytes: said by its `Content-Length`, or found while it streamed.
    case tooLarge(limit: Int)
    /// More than `limit` redirects (or a redirect loop).
    case tooManyRedirects(limit: Int)
    /// A redirect pointed somewhere that cannot be loaded (not `http`/`https`, not a URL).
    case invalidRedirect(location: String)
    /// The request could not be sent as given: a header the HTTP layer refuses, a URL it cannot use.
    case invalidRequest(reason: String)
    /// The configuration's ``ImageDownloader/Configuration/addressResolver`` refused to connect to `host` (or to a
    /// host a redirect led to): a private address, a host not allowed.
    case addressRefused(host: String, reason: String)
    /// The ``ResponseValidator`` named `identifier` refused the response before its body was read, throwing
    /// `error`: kept as it was thrown, so that a caller can match its own error type
    /// (`if case .responseRejected(_, let error as MyRefusal) = failure`).
    case responseRejected(identifier: String, error: any Error)
    /// The ``DataModifier`` named `identifier` threw `error` (kept as it was thrown) on the body.
    case dataModificationFailed(identifier: String, error: any Error)
    /// The downloader was shut down.
    case shutDown

    /// Whether the failure speaks of the moment (network, timeouts, overload) rather than of the URL itself.
    public var isTransient: Bool {
        switch self {
        case .cancelled, .timedOut, .cannotConnect, .connectionLost, .incompleteBody, .shutDown:
            true
        case .httpStatus(let code, _):
            code == 408 || code == 425 || code == 429 || (500..<600).contains(code)
        case .tooLarge, .tooManyRedirects, .invalidRedirect, .invalidRequest, .addressRefused, .responseRejected,
            .dataModificationFailed:
            false
        }
    }

    /// The `Retry-After` delay of a 429, 503 or other status that sent one (in seconds; HTTP dates are not used).
    public var retryAfter: Duration? {
        guard case .httpStatus(_, let headers) = self, let value = headers[.retryAfter],
            let seconds = Int(value.trimmingWhitespace()), seconds >= 0
        else { return nil }
        return .seconds(seconds)
    }

    /// The status code of an ``httpStatus(code:headers:)`` failure.
    public var statusCode: Int? {
        guard case .httpStatus(let code, _) = self else { return nil }
        return code
    }

    /// A label without associated values, for metrics and logs.
    public var shortDescription: String {
        switch self {
        case .cancelled: "cancelled"
        case .timedOut: "timedOut"
        case .cannotConnect: "cannotConnect"
        case .connectionLost: "connectionLost"
        case .incompleteBody: "incompleteBody"
        case .httpStatus: "httpStatus"
        case .tooLarge: "tooLarge"
        case .tooManyRedirects: "tooManyRedirects"
        case .invalidRedirect: "invalidRedirect"
        case .invalidRequest: "invalidRequest"
        case .addressRefused: "addressRefused"
        case .responseRejected: "responseRejected"
        case .dataModificationFailed: "dataModificationFailed"
        case .shutDown: "shutDown"
        }
    }

    /// What went wrong, in a sentence for logs and error messages.
    public var description: String {
        switch self {
        case .cancelled: "the download was cancelled"
        case .timedOut: "the download timed out"
        case .cannotConnect(let reason): "cannot connect to the origin: \(reason)"
        case .connectionLost(let reason): "the connection was lost: \(reason)"
        case .incompleteBody(let expected, let received):
            "the origin sent \(received) of the \(expected) bytes it announced"
        case .httpStatus(let code, _): "the origin answered HTTP \(code)"
        case .tooLarge(let limit): "the body is larger than the limit of \(limit) bytes"
        case .tooManyRedirects(let limit): "more than \(limit) redirects"
        case .invalidRedirect(let location): "cannot follow the redirect to '\(location)'"
        case .invalidRequest(let reason): "cannot send the request: \(reason)"
        case .addressRefused(let host, let reason): "refused to connect to \(host): \(reason)"
        case .responseRejected(let identifier, let error): "the response was refused by \(identifier): \(error)"
        case .dataModificationFailed(let identifier, let error): "\(identifier) could not modify the body: \(error)"
        case .shutDown: "the downloader was shut down"
        }
    }
}
