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
    /// A progressive preview is being decoded: the next waits for it to end rather than queueing behind it.
    private let isPreviewing = Atomic(false)
    /// The outcome is delivered: no preview follows it.
    private let isDelivered = Atomic(false)

    init(id: ImageManager.Jobs.JobID, key: Key, request: ImageRequest, manager: ImageManager) {
        self.id = id
        self.key = key
        self.request = request
        self.manager = manager
        self.cache = request.cache ?? manager.cache
        self.loader = request.loader ?? manager.loader
        self.baseKey = manager.cacheKey(for: request.url)
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
        manager.deliver(outcome, from: id)
    }

    /// Reports download progress and, for a progressive load, decodes a preview off the loader's thread when none is
    /// being decoded.
    func received(_ progress: DownloadProgress, decoder: IncrementalImageDecoder?) {
        send(.progress(progress))
        guard let decoder else { return }
        decoder.append(progress.newBytes)
        guard !isDelivered.load(ordering: .acquiring),
            isPreviewing.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        // A preview is skipped rather than waited for when the memory budget has no room for it now.
        let reservation = previewReservation(decoder)
        guard let reservation else {
            isPreviewing.store(false, ordering: .releasing)
            return
        }
        Task(executorPreference: manager.decodingPool) {
            defer {
                reservation?.release()
                self.isPreviewing.store(false, ordering: .releasing)
            }
            guard let partial = decoder.makePreview(),
                let image = try? ImageManager.process(partial, with: self.request.processors)
            else { return }
            self.send(
                .preview(
                    ImageResult(image: image, data: nil, cacheType: .notCached, url: self.request.url, isFinal: false)))
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
