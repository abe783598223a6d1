/// When a failed download is tried again, how often, and after how long (Kingfisher's `RetryStrategy`).
///
/// ```swift
/// var configuration = ImageDownloader.Configuration()
/// configuration.retryStrategy = RetryStrategy(maximumRetries: 2, interval: .constant(.seconds(1)))
/// ```
///
/// A retry is a new attempt of the same transfer, shared by its callers as the first was: it resumes a body broken off
/// by the network where the origin allows it, and each attempt has its own deadline. Its callers hear progress only
/// past what they had already heard, so an incremental decoder sees each byte once. The wait before a retry is the
/// interval or the origin's `Retry-After`, whichever is longer, on the downloader's clock; a transfer every caller
/// leaves stops waiting at once.
public struct RetryStrategy: Sendable {
    /// How long to wait before a retry.
    public enum Interval: Sendable {
        /// The same wait before every retry.
        case constant(Duration)
        /// `base` before the first retry, doubling before each next one, never more than `cap`.
        case exponential(base: Duration, cap: Duration)
        /// The wait before retry number `n` (1 for the first).
        case custom(@Sendable (_ n: Int) -> Duration)
    }

    /// The most retries after the first attempt: 0 tries once.
    public var maximumRetries: Int
    /// The wait before each retry.
    public var interval: Interval
    /// Whether to retry after `error`, before retry number `n`; by default, ``retriesTransientFailures(_:_:)``.
    public var shouldRetry: @Sendable (_ error: DownloadError, _ n: Int) -> Bool

    /// Makes a strategy: `maximumRetries` (3), waiting `interval` (half a second, doubling, at most 30 s), after the
    /// failures `shouldRetry` accepts (the transient ones).
    public init(
        maximumRetries: Int = 3, interval: Interval = .exponential(base: .milliseconds(500), cap: .seconds(30)),
        shouldRetry: @escaping @Sendable (_ error: DownloadError, _ n: Int) -> Bool = retriesTransientFailures
    ) {
        self.maximumRetries = max(maximumRetries, 0)
        self.interval = interval
        self.shouldRetry = shouldRetry
    }

    /// The default decision: retry a failure that speaks of the moment (``DownloadError/isTransient``: the network,
    /// timeouts, 408, 425, 429, 5xx), except a cancellation or a shut-down, which no retry can help.
    public static func retriesTransientFailures(_ error: DownloadError, _ n: Int) -> Bool {
        switch error {
        case .cancelled, .shutDown: false
        default: error.isTransient
        }
    }

    /// The wait before retry number `n` after `error`: the interval, or the `Retry-After` the origin sent when
    /// longer.
    public func delay(beforeRetry n: Int, after error: DownloadError) -> Duration {
        let interval: Duration
        switch self.interval {
        case .constant(let duration):
            interval = duration
        case .exponential(let base, let cap):
            let doublings = min(max(n - 1, 0), 30)
            interval = min(base * (1 << doublings), cap)
        case .custom(let wait):
            interval = wait(n)
        }
        return max(interval, error.retryAfter ?? .zero, .zero)
    }

    /// Whether there is a retry number `n` after `error`.
    func allowsRetry(_ n: Int, after error: DownloadError) -> Bool {
        n <= maximumRetries && shouldRetry(error, n)
    }
}
