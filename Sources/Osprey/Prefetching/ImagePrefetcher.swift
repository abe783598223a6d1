public import FoundationEssentials
import Synchronization

/// Warms the cache for a list of URLs: loads them at low priority, a few at a time, and counts what
/// happened.
///
/// ```swift
/// let prefetcher = ImagePrefetcher(manager: manager)
/// let summary = await prefetcher.prefetch(urls) { progress in
///     print("\(progress.completed)/\(progress.total)")
/// }
/// print(summary.finished, summary.skipped, summary.failed)
/// ```
///
/// By default a prefetch warms the disk cache with the bytes as downloaded, never decoding them
/// (``Destination/diskCache``, as Nuke's prefetcher does): a load later decodes from disk. ``Destination/memoryCache``
/// decodes each image into memory too, as a load would.
///
/// A URL already cached (on disk, or for ``Destination/memoryCache`` in memory or on disk) is *skipped*; one that
/// loads and is written to the disk cache is *finished*;
/// one that loads but could not be written (a full disk, an unwritable directory, an origin's `no-store`) is *not
/// stored*; one that fails (or is cancelled) is *failed*. A prefetch waits for each disk write
/// (``ImageRequest/Options/waitStoreCache``), so that it can tell. Into the disk cache, the URLs already there are
/// found with one look-up for the whole list (``ImageManager/urlsWithCachedData(_:)``) rather than one each, and a
/// URL listed twice is loaded once (the repeat counts as skipped); with ``ImageRequest/Options/refreshCached`` each
/// URL is asked of the origin as usual. A real load of a URL being prefetched joins the
/// prefetch instead of downloading again, and raises its priority to its own.
///
/// ``pause()`` holds back URLs not yet started (those loading run on) until ``resume()``; ``cancel(url:)`` stops
/// one URL — before it starts, or while it loads — in every prefetch of this prefetcher, and ``cancel()`` stops all.
/// A cancelled URL counts as failed.
public final class ImagePrefetcher: Sendable {
    /// Counts so far.
    public struct Progress: Sendable, Equatable {
        /// URLs loaded into the cache.
        public var finished = 0
        /// URLs that were already cached.
        public var skipped = 0
        /// URLs that failed (or were cancelled).
        public var failed = 0
        /// URLs that loaded but are not in the disk cache: the write failed, or the origin forbade it. (Counted with
        /// ``ImageRequest/Options/cacheMemoryOnly`` among the options only when the origin forbade storing.)
        public var notStored = 0
        /// URLs asked for.
        public var total = 0
        /// The encoded bytes of the images loaded (the finished URLs'), as downloaded.
        public var bytes = 0

        /// URLs done, whatever the outcome.
        public var completed: Int { finished + skipped + failed + notStored }

        /// Makes counts.
        public init(
            finished: Int = 0, skipped: Int = 0, failed: Int = 0, notStored: Int = 0, total: Int = 0, bytes: Int = 0
        ) {
            self.finished = finished
            self.skipped = skipped
            self.failed = failed
            self.notStored = notStored
            self.total = total
            self.bytes = bytes
        }
    }

    /// Where a prefetch puts what it loads.
    public enum Destination: Sendable, Hashable {
        /// The disk cache, with the bytes as downloaded: nothing is decoded. The default.
        case diskCache
        /// The disk cache and, decoded, the memory cache: each image is loaded as ``ImageManager/image(for:)-(ImageRequest)``
        /// loads it.
        case memoryCache
    }

    /// The manager that loads and caches.
    public let manager: ImageManager
    /// Where prefetched images go: ``Destination/diskCache`` by default.
    public let destination: Destination
    /// How many URLs load at once: 4 by default.
    public let maxConcurrentPrefetches: Int
    /// The priority every load runs at: ``DownloadPriority/low`` by default, so that a real load goes first.
    public let priority: DownloadPriority
    /// Options added to every load: none by default. ``ImageRequest/Options/waitStoreCache``
    /// is always added.
    public let options: ImageRequest.Options
    private let running = Mutex<[Int: Task<Progress, Never>]>([:])
    private let nextID = Atomic<Int>(0)
    private let control = Mutex(Control())

    /// What ``pause()``, ``resume()`` and ``cancel(url:)`` change, and the loads they reach.
    private struct Control {
        var isPaused = false
        /// Prefetches waiting for ``resume()``.
        var resumeWaiters: [CheckedContinuation<Void, Never>] = []
        /// URLs cancelled, with the prefetches (by number) under way when they were: each of those drops the URL
        /// when it comes to it; a prefetch started afterwards loads it.
        var cancelledURLs: [URL: Set<Int>] = [:]
        /// The prefetches under way, by number: registered before their first URL starts.
        var prefetches: Set<Int> = []
        /// The load of each URL under way, by URL and a number of its own.
        var loads: [URL: [Int: Task<Outcome, Never>]] = [:]
        var nextLoad = 0
    }

    /// Makes a prefetcher that loads through `manager` into `destination`, `maxConcurrentPrefetches` at a time, at
    /// `priority`, with `options`.
    public init(
        manager: ImageManager = .shared, destination: Destination = .diskCache, maxConcurrentPrefetches: Int = 4,
        priority: DownloadPriority = .low, options: ImageRequest.Options = []
    ) {
        self.manager = manager
        self.destination = destination
        self.maxConcurrentPrefetches = max(1, maxConcurrentPrefetches)
        self.priority = priority
        self.options = options.union(.waitStoreCache)
    }

    /// Prefetches `urls` and returns the counts once every URL is done; `progress` gets the counts after each URL.
    /// Cancelling the calling task, or ``cancel()``, stops what has not finished (it counts as failed).
    @discardableResult
    public func prefetch(_ urls: [URL], progress: (@Sendable (Progress) -> Void)? = nil) async -> Progress {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).newValue
        control.withLock { _ = $0.prefetches.insert(id) }
        let work = Task { await self.run(urls, prefetch: id, progress: progress) }
        running.withLock { $0[id] = work }
        defer {
            _ = running.withLock { $0.removeValue(forKey: id) }
            control.withLock { control in
                control.prefetches.remove(id)
                for url in control.cancelledURLs.keys {
                    control.cancelledURLs[url]?.remove(id)
                    if control.cancelledURLs[url]?.isEmpty == true { control.cancelledURLs[url] = nil }
                }
            }
        }
        return await withTaskCancellationHandler {
            await work.value
        } onCancel: {
            work.cancel()
        }
    }

    /// Stops every prefetch under way; their unfinished URLs count as failed.
    public func cancel() {
        let tasks = running.withLock { Array($0.values) }
        for task in tasks { task.cancel() }
    }

    /// Stops `url` in every prefetch under way: its load is cancelled if it has started, and it is not started if
    /// it has not; either way it counts as failed. A prefetch started afterwards loads it again.
    public func cancel(url: URL) {
        let loads = control.withLock { control in
            control.cancelledURLs[url, default: []].formUnion(control.prefetches)
            return Array(control.loads[url, default: [:]].values)
        }
        for load in loads { load.cancel() }
    }

    /// Holds back every URL not yet started, in every prefetch, until ``resume()``; loads under way run on.
    public func pause() {
        control.withLock { $0.isPaused = true }
    }

    /// Lets paused prefetches start their URLs again.
    public func resume() {
        let waiters = control.withLock { control in
            control.isPaused = false
            defer { control.resumeWaiters = [] }
            return control.resumeWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Whether ``pause()`` holds URLs back.
    public var isPaused: Bool { control.withLock { $0.isPaused } }

    /// Returns once the prefetcher is not paused (at once when it is not), or when the calling task is cancelled.
    private func waitUntilResumed() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let runs = control.withLock { control in
                    guard control.isPaused, !Task.isCancelled else { return true }
                    control.resumeWaiters.append(continuation)
                    return false
                }
                if runs { continuation.resume() }
            }
        } onCancel: {
            // A cancelled prefetch stops waiting: every waiter is let go, and those still paused wait again.
            let waiters = control.withLock { control in
                defer { control.resumeWaiters = [] }
                return control.resumeWaiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Loads `url` as a task of its own that ``cancel(url:)`` can reach; a URL cancelled before it starts fails.
    private func load(_ url: URL, prefetch: Int, extraOptions: ImageRequest.Options) async -> Outcome {
        let registered = control.withLock { control -> (Int, Task<Outcome, Never>)? in
            if control.cancelledURLs[url]?.remove(prefetch) != nil { return nil }
            control.nextLoad += 1
            let task = Task { await self.prefetch(url, extraOptions: extraOptions) }
            control.loads[url, default: [:]][control.nextLoad] = task
            return (control.nextLoad, task)
        }
        guard let (number, task) = registered else { return .failed }
        defer {
            control.withLock { control in
                control.loads[url]?[number] = nil
                if control.loads[url]?.isEmpty == true { control.loads[url] = nil }
            }
        }
        return await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }
    }

    private enum Outcome: Sendable {
        /// The prefetcher was resumed (or the prefetch cancelled) while this prefetch waited: no URL.
        case resumed
        /// Loaded and on disk (or not meant for it), with its encoded size when known.
        case finished(bytes: Int)
        /// Loaded, not on disk.
        case notStored(bytes: Int)
        case skipped
        case failed
    }

    private func run(_ urls: [URL], prefetch: Int, progress report: (@Sendable (Progress) -> Void)?) async -> Progress {
        var counts = Progress(total: urls.count)
        // Looked up together, so that each load can go straight to the origin.
        let looksUpAll =
            destination == .diskCache && options.isDisjoint(with: [.refreshCached, .fromLoaderOnly, .fromCacheOnly])
        let cached = looksUpAll ? await manager.urlsWithCachedData(urls) : nil
        var started: Set<URL> = []
        var next = urls.startIndex
        await withTaskGroup(of: Outcome.self) { group in
            var loading = 0
            var isWaitingForResume = false
            /// Starts URLs while slots are free, unless paused or cancelled; while paused with URLs left, one child
            /// waits for resume() so that the loop wakes for it even with loads under way.
            func fill() {
                while loading < maxConcurrentPrefetches, next < urls.endIndex, !isPaused, !Task.isCancelled {
                    let url = urls[next]
                    next += 1
                    loading += 1
                    if let cached, cached.contains(url) || !started.insert(url).inserted {
                        group.addTask { .skipped }
                    } else {
                        let extra: ImageRequest.Options = cached == nil ? [] : .fromLoaderOnly
                        group.addTask { await self.load(url, prefetch: prefetch, extraOptions: extra) }
                    }
                }
                if isPaused, next < urls.endIndex, !isWaitingForResume, !Task.isCancelled {
                    isWaitingForResume = true
                    group.addTask {
                        await self.waitUntilResumed()
                        return .resumed
                    }
                }
            }
            fill()
            while let outcome = await group.next() {
                switch outcome {
                case .resumed:
                    isWaitingForResume = false
                    fill()
                    continue
                case .finished(let bytes):
                    counts.finished += 1
                    counts.bytes += bytes
                case .notStored(let bytes):
                    counts.notStored += 1
                    counts.bytes += bytes
                case .skipped: counts.skipped += 1
                case .failed: counts.failed += 1
                }
                loading -= 1
                report?(counts)
                fill()
            }
        }
        // What was never started (the prefetch was cancelled) fails.
        while next < urls.endIndex {
            next += 1
            counts.failed += 1
            report?(counts)
        }
        return counts
    }

    private func prefetch(_ url: URL, extraOptions: ImageRequest.Options = []) async -> Outcome {
        guard !Task.isCancelled else { return .failed }
        guard let request = try? ImageRequest(url: url, options: options.union(extraOptions), priority: priority)
        else { return .failed }
        do {
            let bytes: Int
            let store: DiskStoreOutcome?
            switch destination {
            case .diskCache:
                // One lookup: the data load answers from the disk cache when the bytes are there.
                let result = try await manager.data(for: request)
                if result.cacheType.isCached { return .skipped }
                (bytes, store) = (result.data.count, result.diskStore)
            case .memoryCache:
                if await manager.isCached(url) { return .skipped }
                let result = try await manager.image(for: request)
                (bytes, store) = (result.data?.count ?? 0, result.diskStore)
            }
            switch store {
            case .failed, .forbiddenByOrigin: return .notStored(bytes: bytes)
            case .stored, nil: return .finished(bytes: bytes)
            }
        } catch {
            return .failed
        }
    }
}
