public import FoundationEssentials
import Synchronization

/// The URLs whose last download failed for a lasting reason, so the manager fails them at once instead of asking the
/// origin again (the seeds' failedURLs).
///
/// Only lasting failures enter (``DownloadError/isTransient`` is false: a 404, an oversized body, undecodable data,
/// ...); timeouts, lost connections, cancellations and the like never do. An entry lasts until the URL loads
/// successfully, until it is removed, or, when a time-to-live is set, until it expires. No time-to-live by default,
/// as in the seeds.
///
/// ```swift
/// let failed = FailedURLs(timeToLive: .seconds(3600))
/// failed.record(url, lastingFailure: true)
/// failed.contains(url)   // true for the next hour
/// ```
public final class FailedURLs: Sendable {
    private let timeToLive: Duration?
    private let now: @Sendable () -> Duration
    private struct Entry {
        /// When it failed, on `now`'s scale.
        var time: Duration
        /// Why, when known.
        var failure: ImageError?
    }

    /// URL string → its failure.
    private let entries = Mutex<[String: Entry]>([:])
    /// How many entries there are, kept beside them so that a check of an empty list takes no lock and reads no clock
    /// (the manager checks the list on every load).
    private let entryCount = Atomic<Int>(0)

    /// Makes an empty list whose entries expire `timeToLive` after the failure (never when `nil`), timed by `clock`.
    public init<C: Clock>(timeToLive: Duration? = nil, clock: C) where C.Duration == Duration {
        self.timeToLive = timeToLive
        let start = clock.now
        self.now = { start.duration(to: clock.now) }
    }

    /// Makes an empty list timed by the continuous clock.
    public convenience init(timeToLive: Duration? = nil) {
        self.init(timeToLive: timeToLive, clock: ContinuousClock())
    }

    /// Records that `url` failed; only a lasting failure is kept.
    public func record(_ url: URL, lastingFailure: Bool) {
        guard lastingFailure else { return }
        keep(url, failure: nil)
    }

    /// Records `error` for `url`: kept only when it is not transient.
    public func record(_ url: URL, error: DownloadError) {
        guard !error.isTransient else { return }
        keep(url, failure: .downloadFailed(error))
    }

    /// Records `failure` for `url`: kept only when it is lasting (``ImageError/isLasting``).
    public func record(_ url: URL, failure: ImageError) {
        guard failure.isLasting else { return }
        keep(url, failure: failure)
    }

    private func keep(_ url: URL, failure: ImageError?) {
        let entry = Entry(time: now(), failure: failure)
        entries.withLock { entries in
            entries[url.absoluteString] = entry
            entryCount.store(entries.count, ordering: .relaxed)
        }
    }

    /// Whether the list is empty (expired entries not yet noticed count as entries).
    public var isEmpty: Bool { entryCount.load(ordering: .relaxed) == 0 }

    /// Why `url` is on the list, when it is and the failure was recorded with its reason; `nil` otherwise.
    public func failure(for url: URL) -> ImageError? {
        guard contains(url) else { return nil }
        return entries.withLock { $0[url.absoluteString]?.failure }
    }

    /// Whether `url` is on the list and has not expired. An expired entry is removed.
    public func contains(_ url: URL) -> Bool {
        guard !isEmpty else { return false }
        let key = url.absoluteString
        let time = now()
        return entries.withLock { entries in
            guard let failed = entries[key]?.time else { return false }
            if let timeToLive, time - failed >= timeToLive {
                entries[key] = nil
                entryCount.store(entries.count, ordering: .relaxed)
                return false
            }
            return true
        }
    }

    /// Takes `url` off the list (after it loaded, or when a caller asks).
    public func remove(_ url: URL) {
        guard !isEmpty else { return }
        entries.withLock { entries in
            entries[url.absoluteString] = nil
            entryCount.store(entries.count, ordering: .relaxed)
        }
    }

    /// Empties the list.
    public func removeAll() {
        entries.withLock { entries in
            entries.removeAll()
            entryCount.store(0, ordering: .relaxed)
        }
    }

    /// How many URLs are on the list, expired ones not yet noticed included.
    public var count: Int { entries.withLock { $0.count } }
}
