public import Foundation
import Synchronization

/// Warms the cache for a list of URLs (MISSION M17): loads them at low priority, a few at a time, and counts what
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
    /// Options added to every load: ``ImageRequest/Options/lowPriority`` by default. ``ImageRequest/Options/waitStoreCache``
    /// is always added.
    public let options: ImageRequest.Options
    private let running = Mutex<[Int: Task<Progress, Never>]>([:])
    private let nextID = Atomic<Int>(0)

    /// Makes a prefetcher that loads through `manager` into `destination`, `maxConcurrentPrefetches` at a time, with
    /// `options`.
    public init(
        manager: ImageManager = .shared, destination: Destination = .diskCache, maxConcurrentPrefetches: Int = 4,
        options: ImageRequest.Options = [.lowPriority]
    ) {
        self.manager = manager
        self.destination = destination
        self.maxConcurrentPrefetches = max(1, maxConcurrentPrefetches)
        self.options = options.union(.waitStoreCache)
    }

    /// Prefetches `urls` and returns the counts once every URL is done; `progress` gets the counts after each URL.
    /// Cancelling the calling task, or ``cancel()``, stops what has not finished (it counts as failed).
    @discardableResult
    public func prefetch(_ urls: [URL], progress: (@Sendable (Progress) -> Void)? = nil) async -> Progress {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).newValue
        let work = Task { await self.run(urls, progress: progress) }
        running.withLock { $0[id] = work }
        defer { _ = running.withLock { $0.removeValue(forKey: id) } }
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

    private enum Outcome {
        /// Loaded and on disk (or not meant for it), with its encoded size when known.
        case finished(bytes: Int)
        /// Loaded, not on disk.
        case notStored(bytes: Int)
        case skipped
        case failed
    }

    private func run(_ urls: [URL], progress report: (@Sendable (Progress) -> Void)?) async -> Progress {
        var counts = Progress(total: urls.count)
        // Looked up together, so that each load can go straight to the origin.
        let looksUpAll =
            destination == .diskCache && options.isDisjoint(with: [.refreshCached, .fromLoaderOnly, .fromCacheOnly])
        let cached = looksUpAll ? await manager.urlsWithCachedData(urls) : nil
        var started: Set<URL> = []
        await withTaskGroup(of: Outcome.self) { group in
            var next = urls.startIndex
            func addNext() {
                guard next < urls.endIndex else { return }
                let url = urls[next]
                next += 1
                guard let cached else { return group.addTask { await self.prefetch(url) } }
                if cached.contains(url) || !started.insert(url).inserted {
                    group.addTask { .skipped }
                } else {
                    group.addTask { await self.prefetch(url, extraOptions: .fromLoaderOnly) }
                }
            }
            for _ in 0..<maxConcurrentPrefetches { addNext() }
            for await outcome in group {
                switch outcome {
                case .finished(let bytes):
                    counts.finished += 1
                    counts.bytes += bytes
                case .notStored(let bytes):
                    counts.notStored += 1
                    counts.bytes += bytes
                case .skipped: counts.skipped += 1
                case .failed: counts.failed += 1
                }
                report?(counts)
                if Task.isCancelled {
                    // What was never started fails at once.
                    while next < urls.endIndex {
                        next += 1
                        counts.failed += 1
                        report?(counts)
                    }
                } else {
                    addNext()
                }
            }
        }
        return counts
    }

    private func prefetch(_ url: URL, extraOptions: ImageRequest.Options = []) async -> Outcome {
        guard !Task.isCancelled else { return .failed }
        guard let request = try? ImageRequest(url: url, options: options.union(extraOptions)) else { return .failed }
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
