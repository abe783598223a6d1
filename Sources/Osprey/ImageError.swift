public import FoundationEssentials
public import OspreyCodecs

/// Why an ``ImageManager`` load did not produce an image.
public enum ImageError: Error, Sendable, CustomStringConvertible {
    /// The URL cannot be loaded; it was never sent to the network.
    case invalidURL(String, reason: InvalidURLReason)
    /// The URL failed for a lasting reason before and is on the failed-URL list; the origin was not asked.
    /// ``ImageRequest/Options/retryFailed`` asks anyway. `reason` is that earlier failure, when the list kept it.
    indirect case previouslyFailed(URL, reason: ImageError?)
    /// The manager's ``ImageManager/Configuration/shouldDownload`` hook declined the download on a cache miss.
    /// Not a failure: the URL does not enter the failed-URL list. (The seeds complete with neither image nor error;
    /// in Swift that outcome needs a name, and this is it.)
    case downloadDeclined(URL)
    /// ``ImageRequest/Options/fromCacheOnly`` and the image is in no cache.
    case notCached(URL)
    /// The download failed; see ``DownloadError/isTransient``.
    case downloadFailed(DownloadError)
    /// The ``ImageDataProvider`` with key `cacheKey` threw `error` (kept as thrown). Not a lasting failure: the
    /// provider is asked again next time.
    case providerFailed(cacheKey: String, error: any Error)
    /// The data is not an image the codecs can decode (or breaks a decoding limit).
    case decodingFailed(CodecError)
    /// A processor (named by its identifier), or the transform hook (`transformDownloadedImage`), threw `error`:
    /// kept as it was thrown, so that a caller can match its own error type
    /// (`if case .processingFailed(_, let error as MyError) = failure`).
    case processingFailed(identifier: String, error: any Error)
    /// The image could not be encoded as `format` (``ImageManager/encodedImage(for:as:)``).
    case encodingFailed(format: ImageFormat, CodecError)
    /// The manager's ``ImageManager/Configuration/memoryBudget`` did not grant what decoding and processing the image
    /// would take: it alone needs more than the budget (a lasting failure), or too many decodes waited, for too long.
    case insufficientMemory(MemoryBudget.Refusal)
    /// A disk-cache error (``CacheError/diskFull(key:)``, ``CacheError/cacheWriteFailed(key:reason:)``) where an
    /// image error is reported, kept as the cache reported it. (A load whose disk write fails still succeeds: its
    /// ``ImageResult/diskStore`` says so.)
    case cacheFailed(CacheError)
    /// The load was cancelled.
    case cancelled

    /// Why a URL was refused.
    public enum InvalidURLReason: Sendable, Hashable, CustomStringConvertible {
        /// The string is empty.
        case empty
        /// The string does not parse as a URL.
        case malformed
        /// The URL has no scheme (it is relative).
        case notAbsolute
        /// The scheme is not `http` or `https`.
        case unsupportedScheme(String)
        /// The URL names no host.
        case missingHost
        /// The host is neither a DNS name nor an IP address: it holds control characters, spaces, slashes or other
        /// characters no host name has (percent-encoded or not), or it is not ASCII (give an international name in
        /// its `xn--` form).
        case invalidHost
        /// The port is not in 1–65535.
        case invalidPort

        /// The value as logs and messages print it.
        public var description: String {
            switch self {
            case .empty: "the URL is empty"
            case .malformed: "not a URL"
            case .notAbsolute: "not an absolute URL"
            case .unsupportedScheme(let scheme): "unsupported scheme '\(scheme)' (only http and https are loaded)"
            case .missingHost: "the URL has no host"
            case .invalidHost: "the host is not a valid host name or IP address"
            case .invalidPort: "the port is not between 1 and 65535"
            }
        }
    }

    /// Whether the failure says something lasting about the URL, so it enters the failed-URL list: a lasting download
    /// failure, data that does not decode, or an image larger than the whole memory budget.
    public var isLasting: Bool {
        switch self {
        case .downloadFailed(let error): !error.isTransient
        case .decodingFailed: true
        case .insufficientMemory(.exceedsBudget): true
        default: false
        }
    }

    /// A label without associated values, for metrics and logs.
    public var shortDescription: String {
        switch self {
        case .invalidURL: "invalidURL"
        case .previouslyFailed: "previouslyFailed"
        case .downloadDeclined: "downloadDeclined"
        case .notCached: "notCached"
        case .downloadFailed(let error): "download.\(error.shortDescription)"
        case .decodingFailed: "decodingFailed"
        case .processingFailed: "processingFailed"
        case .providerFailed: "providerFailed"
        case .cacheFailed: "cacheFailed"
        case .encodingFailed: "encodingFailed"
        case .insufficientMemory: "insufficientMemory"
        case .cancelled: "cancelled"
        }
    }

    /// What went wrong, in a sentence for logs and error messages.
    public var description: String {
        switch self {
        case .invalidURL(let url, let reason): "invalid URL '\(url)': \(reason)"
        case .previouslyFailed(let url, let reason):
            "\(url.absoluteString) failed before\(reason.map { " (\($0))" } ?? ""); not asked again (use retryFailed)"
        case .downloadDeclined(let url): "the download of \(url.absoluteString) was declined by shouldDownload"
        case .notCached(let url): "\(url.absoluteString) is not cached (fromCacheOnly)"
        case .downloadFailed(let error): "download failed: \(error)"
        case .decodingFailed(let error): "cannot decode the image: \(error)"
        case .processingFailed(let identifier, let error): "processor '\(identifier)' failed: \(error)"
        case .cacheFailed(let error): "\(error)"
        case .providerFailed(let key, let error): "the data provider '\(key)' failed: \(error)"
        case .encodingFailed(let format, let error): "cannot encode as \(format.name): \(error)"
        case .insufficientMemory(let refusal): "not enough memory: \(refusal)"
        case .cancelled: "cancelled"
        }
    }
}
