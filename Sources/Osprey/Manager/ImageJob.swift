import Foundation
import OspreyCodecs
import Synchronization

/// The work behind every load of one variant of one URL with the same result-shaping options: looked up, downloaded,
/// decoded, transformed, processed and stored once, delivered to each of its subscribers (coalescing across stages,
/// MISSION M11).
///
/// A subscriber that cancels leaves; when the last one leaves the job is abandoned — its task cancelled, its share of
/// the download released — unless a subscriber asked for ``ImageRequest/Options/detached`` (M18), in which case it
/// runs on into the cache.
final class ImageJob: Sendable {
    /// What makes two loads one job.
    struct Key: Hashable, Sendable {
        let variantKey: String
        let options: ImageRequest.Options
        let cache: ObjectIdentifier?
        let loader: ObjectIdentifier?
        /// Whether the final image is kept as a variant (see ``ImageRequest/keepsVariant``).
        let keepsVariant: Bool
    }

    private struct State {
        var subscribers: [ImageTask] = []
        /// Finishing or abandoned: takes no new subscribers.
        var isClosed = false
        var isDetached = false
        var runner = RunnerSlot()
        var dataTask: (any DataLoadingTask)?
        var isPreviewing = false
    }

    let key: Key
    /// The first subscriber's request; every subscriber's agrees on what shapes the result.
    let request: ImageRequest
    let manager: ImageManager
    let cache: ImageCache
    let loader: any DataLoading
    /// The key the original bytes are stored under (the variant's is `key.variantKey`).
    let baseKey: String
    /// How the job decodes: the manager's options with the request's size, budget and first-frame choice.
    let decoding: DecodingOptions
    private let state = Mutex(State())

    init(key: Key, request: ImageRequest, manager: ImageManager) {
        self.key = key
        self.request = request
        self.manager = manager
        self.cache = request.cache ?? manager.cache
        self.loader = request.loader ?? manager.loader
        self.baseKey = manager.cacheKey(for: request.url)
        self.decoding = manager.decodingOptions(for: request)
    }

    // MARK: Subscribers

    /// Adds `task` as a subscriber; `false` when the job takes no one new (it is finishing or abandoned).
    func add(_ task: ImageTask) -> Bool {
        let added = state.withLock { state -> Bool in
            guard !state.isClosed else { return false }
            // A task cancelled meanwhile is simply not added.
            guard task.attach(to: self) else { return true }
            state.subscribers.append(task)
            if task.request.options.contains(.detached) { state.isDetached = true }
            return true
        }
        if added { prioritiesChanged() }
        return added
    }

    /// Removes a cancelled subscriber; abandons the job when it was the last and the job is not detached.
    func remove(_ task: ImageTask) {
        let runner = state.withLock { state -> Task<Void, Never>?? in
            state.subscribers.removeAll { $0 === task }
            guard state.subscribers.isEmpty, !state.isDetached, !state.isClosed else { return .none }
            state.isClosed = true
            return .some(state.runner.runner)
        }
        guard let runner else { return prioritiesChanged() }
        manager.removeJob(self)
        // Cancelling the runner also releases the download: the task awaiting its response leaves it.
        runner?.cancel()
    }

    /// Moves the download to the highest priority among the subscribers.
    func prioritiesChanged() {
        let (dataTask, priority) = state.withLock { ($0.dataTask, $0.subscribers.map(\.priority).max()) }
        if let dataTask, let priority, dataTask.priority != priority { dataTask.setPriority(priority) }
    }

    /// The priority to download at: the highest among the subscribers.
    var priority: DownloadPriority {
        state.withLock { $0.subscribers.map(\.priority).max() } ?? request.effectivePriority
    }

    var wantsStoreBeforeDelivery: Bool {
        state.withLock { $0.subscribers.contains { $0.request.options.contains(.waitStoreCache) } }
    }

    // MARK: Running

    func start() {
        manager.jobStarted(self)
        let runner = Task { await self.run() }
        let (abandoned, waiters) = state.withLock { state in (state.isClosed, state.runner.set(runner)) }
        for waiter in waiters { waiter.resume(returning: runner) }
        if abandoned { runner.cancel() }
    }

    /// Waits for the job's work to end (suspended, not polling, when its runner is not made yet).
    func wait() async {
        await RunnerSlot.waitForEnd { waiter in state.withLock { $0.runner.runner(orKeep: waiter) } }
    }

    private func run() async {
        defer { manager.jobEnded(self) }
        guard !Task.isCancelled else { return finish(.failure(.cancelled)) }
        let (outcome, store) = await load()
        finish(outcome)
        // Stores nobody waits for run after the delivery, still as part of the job; their outcome is logged.
        _ = await store?()
    }

    /// Records the download so priority changes reach it.
    func setDataTask(_ task: any DataLoadingTask) {
        state.withLock { $0.dataTask = task }
        prioritiesChanged()
    }

    // MARK: Delivering

    func send(_ event: ImageTask.Event) {
        let subscribers = state.withLock { $0.subscribers }
        for subscriber in subscribers { subscriber.deliver(event) }
    }

    private func finish(_ outcome: Result<ImageResult, ImageError>) {
        manager.removeJob(self)
        let subscribers = state.withLock { state in
            state.isClosed = true
            state.dataTask = nil
            defer { state.subscribers = [] }
            return state.subscribers
        }
        for subscriber in subscribers { subscriber.deliver(.finished(outcome)) }
    }

    /// Reports download progress and, for a progressive load, decodes a preview off the loader's thread when none is
    /// being decoded (M14, M15).
    func received(_ progress: DownloadProgress, decoder: IncrementalImageDecoder?) {
        send(.progress(progress))
        guard let decoder else { return }
        decoder.append(progress.newBytes)
        let starts = state.withLock { state in
            guard !state.isPreviewing, !state.isClosed else { return false }
            state.isPreviewing = true
            return true
        }
        guard starts else { return }
        // A preview is skipped rather than waited for when the memory budget has no room for it now.
        let reservation = previewReservation(decoder)
        guard let reservation else {
            state.withLock { $0.isPreviewing = false }
            return
        }
        Task(executorPreference: manager.decodingPool) {
            defer {
                reservation?.release()
                self.state.withLock { $0.isPreviewing = false }
            }
            guard let partial = decoder.makePreview(),
                let image = try? ImageManager.process(partial, with: self.request.processors)
            else { return }
            self.send(
                .preview(ImageResult(image: image, data: nil, cacheType: .none, url: self.request.url, isFinal: false)))
        }
    }
}

extension ImageJob {
    /// What the budget grants a preview of `decoder`'s data now: `.some(nil)` without a budget, `nil` when the header
    /// has not arrived or there is no room.
    private func previewReservation(_ decoder: IncrementalImageDecoder) -> MemoryBudget.Reservation?? {
        guard let budget = manager.configuration.memoryBudget else { return .some(nil) }
        guard let estimate = decoder.previewEstimate else { return nil }
        let processing = Self.processingBytes(after: estimate, processors: request.processors, transforms: false)
        let bytes = max(estimate.peakBytes, ImageDecoder.saturating(sum: estimate.imageBytes, processing))
        return budget.reserveIfFree(bytes).map { .some($0) }
    }
}

extension ImageManager {
    func jobStarted(_ job: ImageJob) {
        state.withLock { $0.runningJobs[ObjectIdentifier(job)] = job }
    }

    func jobEnded(_ job: ImageJob) {
        state.withLock { _ = $0.runningJobs.removeValue(forKey: ObjectIdentifier(job)) }
    }

    /// Waits until every job has ended, abandoned and detached ones included (tests use it to know that nothing more
    /// will be delivered).
    func waitForJobs() async {
        while true {
            let (jobs, outputs) = state.withLock { (Array($0.runningJobs.values), Array($0.runningOutputs.values)) }
            guard !jobs.isEmpty || !outputs.isEmpty else { return }
            for output in outputs { await output.waitForEnd() }
            for job in jobs { await job.wait() }
        }
    }
}
