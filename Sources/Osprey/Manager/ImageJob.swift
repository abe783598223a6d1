import FoundationEssentials
import OspreyCodecs
import Synchronization

/// The work behind every load of one variant of one URL with the same result-shaping options: looked up, downloaded,
/// decoded, transformed, processed and stored once, delivered to each of its subscribers (coalescing across stages).
///
/// Who subscribes, at what priority, and when the job is abandoned live in the manager's ``JobTable``: a subscriber
/// that cancels leaves; when the last one leaves the job's task is cancelled — releasing its share of the download —
/// unless a subscriber asked for ``ImageRequest/Options/detached``, in which case it runs on into the cache. The job
/// itself only runs the stages and reports to the table.
final class ImageJob: Sendable {
    /// What makes two loads one job.
    struct Key: Hashable, Sendable {
        let variantKey: String
        let options: ImageRequest.Options
        let cache: ObjectIdentifier?
        let loader: ObjectIdentifier?
        /// Whether the final image is kept as a variant (see ``ImageRequest/keepsVariant``).
        let keepsVariant: Bool
        /// The request's alternative sources.
        let alternatives: [String]
    }

    /// The job's entry in the manager's table, where its subscribers and priority are kept.
    let id: ImageManager.Jobs.JobID
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
    /// A progressive preview waits for the decoding stage or is being decoded: later data waits for it to end
    /// rather than queueing another behind it.
    private let isPreviewing = Atomic(false)
    /// The download is complete: the final decode follows, and a preview still waiting is not decoded.
    let isDownloaded = Atomic(false)
    /// The outcome is delivered: no preview follows it.
    private let isDelivered = Atomic(false)
    /// The preview under way, cancelled when the outcome is delivered (so that one waiting for a suspended decoding
    /// stage leaves).
    private let preview = Mutex<Task<Void, Never>?>(nil)

    init(id: ImageManager.Jobs.JobID, key: Key, baseKey: String, request: ImageRequest, manager: ImageManager) {
        self.id = id
        self.key = key
        self.request = request
        self.manager = manager
        self.cache = request.cache ?? manager.cache
        self.loader = request.loader ?? manager.loader
        self.baseKey = baseKey
        self.decoding = manager.decodingOptions(for: request)
    }

    /// The priority to download at: the highest among the subscribers.
    var priority: DownloadPriority { manager.priority(of: id) ?? request.priority }

    var wantsStoreBeforeDelivery: Bool { manager.waitsForStore(id) }

    // MARK: Running

    /// The job's work, run by the manager on a task of its own (cancelled when every subscriber has left).
    func run() async {
        guard !Task.isCancelled else { return deliver(.failure(.cancelled)) }
        let (outcome, store) = await load()
        deliver(outcome)
        // Stores nobody waits for run after the delivery, still as part of the job; their outcome is logged.
        _ = await store?()
    }

    /// Records the download so priority changes reach it.
    func setDataTask(_ task: any DataLoadingTask) {
        manager.downloadStarted(task, for: id)
    }

    // MARK: Delivering

    func send(_ event: ImageTask.Event) {
        for subscriber in manager.subscribers(of: id) { subscriber.deliver(event) }
    }

    private func deliver(_ outcome: Result<ImageResult, ImageError>) {
        isDelivered.store(true, ordering: .releasing)
        preview.withLock { $0 }?.cancel()
        manager.deliver(outcome, from: id)
    }

    /// Reports download progress and, for a progressive load, decodes a preview off the loader's thread when none is
    /// waiting or being decoded. A preview passes the decoding stage like every decode: while the stage is suspended
    /// it waits there, the data that arrives meanwhile queues no other, and once it runs it decodes all the data
    /// there is by then (or nothing, when the download has ended and the final decode follows).
    func received(_ progress: DownloadProgress, decoder: IncrementalImageDecoder?) {
        send(.progress(progress))
        guard let decoder else { return }
        decoder.append(progress.newBytes)
        guard !isDelivered.load(ordering: .acquiring),
            isPreviewing.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        let task = Task(executorPreference: manager.decodingPool) {
            defer { self.isPreviewing.store(false, ordering: .releasing) }
            let skips = { self.isDownloaded.load(ordering: .acquiring) || self.isDelivered.load(ordering: .acquiring) }
            _ = await self.manager.decodingQueue.run(for: self.request.url, skipping: skips) {
                self.decodePreview(decoder)
            }
        }
        preview.withLock { $0 = task }
        if isDelivered.load(ordering: .acquiring) { task.cancel() }
    }

    /// Decodes and sends a preview of the data `decoder` has; skipped rather than waited for when the memory budget
    /// has no room for it now.
    private func decodePreview(_ decoder: IncrementalImageDecoder) {
        guard let reservation = previewReservation(decoder) else { return }
        defer { reservation?.release() }
        guard let partial = decoder.makePreview(),
            let image = try? ImageManager.process(partial, with: request.processors)
        else { return }
        send(.preview(ImageResult(image: image, data: nil, cacheType: .notCached, url: request.url, isFinal: false)))
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
