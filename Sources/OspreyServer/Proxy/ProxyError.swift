import Osprey
import OspreyCodecs

/// Why the proxy did not answer with an image, as the client is told: a status and a short message of our own
/// wording. Messages never carry the library's error text, which can hold internal addresses, file paths or the
/// origin's words (docs/threat-model.md); the log line of the request keeps the detail.
enum ProxyError: Error, Sendable, Equatable {
    /// 400: a parameter is missing, unknown or out of range.
    case badRequest(String)
    /// 403: the signature is missing or wrong.
    case badSignature(String)
    /// 403: the source's host or address is not allowed.
    case forbiddenSource
    /// 410: the URL's `exp` time has passed.
    case expired
    /// 404: the origin has no such image.
    case sourceNotFound
    /// 413: the source (bytes, pixels, frames, the memory decoding it takes) or the output is larger than a limit.
    case tooLarge(String)
    /// 415: the source is not an image, or in a format the proxy does not decode.
    case unsupportedMediaType
    /// 422: the source claims a format but does not decode.
    case undecodable
    /// 502: the origin failed otherwise (an error status, a broken connection, bad redirects).
    case sourceError
    /// 503: too many requests at once, too little memory for decoding within the time limit, or the processing time
    /// limit passed.
    case unavailable(String, retryAfter: Int?)
    /// 504: the origin did not answer in time.
    case sourceTimeout
    /// 500: a fault of ours (an encoder failed).
    case internalError

    /// Whether the source could not be had (not found, unreachable, timed out, not an image, not decodable): what a
    /// fallback image stands in for. Refusals of the request itself are not.
    var isSourceFailure: Bool {
        switch self {
        case .sourceNotFound, .sourceError, .sourceTimeout, .unsupportedMediaType, .undecodable: true
        default: false
        }
    }

    var status: Int {
        switch self {
        case .badRequest: 400
        case .badSignature, .forbiddenSource: 403
        case .sourceNotFound: 404
        case .expired: 410
        case .tooLarge: 413
        case .unsupportedMediaType: 415
        case .undecodable: 422
        case .sourceError: 502
        case .unavailable: 503
        case .sourceTimeout: 504
        case .internalError: 500
        }
    }

    var message: String {
        switch self {
        case .badRequest(let message), .badSignature(let message), .tooLarge(let message): message
        case .forbiddenSource: "the source is not allowed"
        case .sourceNotFound: "the source was not found"
        case .expired: "the URL has expired"
        case .unsupportedMediaType: "the source is not an image in a supported format"
        case .undecodable: "the source image cannot be decoded"
        case .sourceError: "the source could not be fetched"
        case .unavailable(let message, _): message
        case .sourceTimeout: "the source did not answer in time"
        case .internalError: "the image could not be rendered"
        }
    }

    /// The client's view of a failed load.
    init(_ error: ImageError, limits: ServerConfiguration) {
        switch error {
        case .invalidURL(_, let reason): self = RenderParameters.invalidSource(reason)
        case .previouslyFailed(_, let reason):
            self = reason.map { ProxyError($0, limits: limits) } ?? .sourceError
        case .downloadDeclined, .notCached: self = .forbiddenSource
        case .downloadFailed(let error): self = ProxyError(error, limits: limits)
        case .decodingFailed(let error): self = ProxyError(error, limits: limits)
        case .processingFailed, .encodingFailed, .cacheFailed, .providerFailed: self = .internalError
        case .insufficientMemory(.exceedsBudget):
            self = .tooLarge("decoding the source would take more memory than the server may use")
        case .insufficientMemory(.queueFull), .insufficientMemory(.timedOut):
            self = .unavailable("too many large images are being processed; try again", retryAfter: 1)
        case .insufficientMemory(.cancelled): self = .unavailable("the request was cancelled", retryAfter: nil)
        case .cancelled: self = .unavailable("the request was cancelled", retryAfter: nil)
        }
    }

    init(_ error: DownloadError, limits: ServerConfiguration) {
        switch error {
        case .addressRefused: self = .forbiddenSource
        case .httpStatus(let code, _) where code == 404 || code == 410: self = .sourceNotFound
        case .tooLarge: self = .tooLarge("the source is larger than \(limits.maxSourceBytes) bytes")
        case .timedOut: self = .sourceTimeout
        case .cancelled, .shutDown: self = .unavailable("the server is shutting down", retryAfter: 1)
        case .httpStatus, .cannotConnect, .connectionLost, .incompleteBody, .tooManyRedirects, .invalidRedirect,
            .invalidRequest, .responseRejected, .dataModificationFailed:
            self = .sourceError
        }
    }

    init(_ error: CodecError, limits: ServerConfiguration) {
        switch error {
        // A source in a format whose library this machine lacks is one the proxy cannot take.
        case .unsupportedFormat, .codecUnavailable: self = .unsupportedMediaType
        case .tooManyPixels: self = .tooLarge("the source has more than \(limits.maxSourcePixels) pixels")
        case .tooManyFrames: self = .tooLarge("the source has more than \(limits.maxFrames) frames")
        case .limitExceeded, .outOfMemory: self = .tooLarge("the source exceeds a decoding limit")
        case .invalidDimensions, .truncated, .malformed: self = .undecodable
        // A decode is cancelled only when its client left: nobody reads the answer.
        case .encodingFailed, .cancelled: self = .internalError
        }
    }
}
