import Synchronization

/// Smooths bursts of transfer starts (Nuke's `RateLimiter`): a token bucket of `burst` tokens refilled at `rate` a
/// second, one token per transfer start. While tokens last, transfers start at once; past them, each waits its turn,
/// `1 / rate` seconds after the one before, on the downloader's clock. It bounds starts, not transfers in flight
/// (``ImageDownloader/Configuration/maxConcurrentDownloads`` does that): a scroll through hundreds of thumbnails
/// reaches the origin as a steady stream instead of a spike.
///
/// ```swift
/// configuration.rateLimit = RateLimit(rate: 80, burst: 25)   // Nuke's defaults
/// ```
public struct RateLimit: Sendable, Hashable {
    /// Transfer starts a second, once the burst is spent.
    public var rate: Double
    /// Starts allowed at once after a quiet spell.
    public var burst: Int

    /// Makes a limit of `rate` starts a second (at least one a day) with bursts of `burst` (at least 1).
    public init(rate: Double, burst: Int) {
        self.rate = rate.isFinite ? max(rate, 1.0 / 86_400) : 1.0 / 86_400
        self.burst = max(burst, 1)
    }
}

/// The token bucket of a ``RateLimit``: each start reserves the next token under the lock and then waits until it is
/// due, so concurrent starts are served in the order they asked, each exactly `1 / rate` after the last.
final class RateLimiter: Sendable {
    private let limit: RateLimit
    private let clock: any Clock<Duration>
    /// When the next start may happen, as the time since the limiter was made (`nil` before the first): the
    /// generic cell rate algorithm's theoretical arrival time less the burst's span.
    private let state: Mutex<Duration?>
    /// The clock's time since the limiter was made.
    private let elapsed: @Sendable () -> Duration

    init(_ limit: RateLimit, clock: any Clock<Duration>) {
        self.limit = limit
        self.clock = clock
        self.state = Mutex(nil)
        self.elapsed = Self.stopwatch(on: clock)
    }

    /// Returns when the caller may start: at once while the burst lasts, else when its token is due. Throws when the
    /// calling task is cancelled while it waits.
    func acquire() async throws {
        let interval = Duration.seconds(1 / limit.rate)
        let burstSpan = interval * (limit.burst - 1)
        let now = elapsed()
        // The next token is due at `due`; reserving it moves `due` on by one interval.
        let wait = state.withLock { due -> Duration in
            let next = max(due ?? now - burstSpan, now - burstSpan)
            due = next + interval
            return max(next - now, .zero)
        }
        if wait > .zero { try await clock.sleep(for: wait) }
    }

    /// A reading of `clock` as the time since this call.
    private static func stopwatch(on clock: some Clock<Duration>) -> @Sendable () -> Duration {
        let origin = clock.now
        return { origin.duration(to: clock.now) }
    }
}
