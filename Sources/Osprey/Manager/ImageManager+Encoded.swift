import Foundation
import Logging
import OspreyCodecs
import Synchronization

extension ImageManager {
    /// Loads `request` and encodes its image as `output` — the last stage of the pipeline, what an image proxy
    /// answers with: the encoded bytes in memory, else on disk (with
    /// ``Configuration/storesProcessedImagesOnDisk``), else the image (through every cache and the download, as
    /// ``image(for:)-(ImageRequest)`` loads it) encoded now on the manager's processing threads and kept in memory and,
    /// with that setting, on disk under the variant's key (``cacheKey(for:as:)``), as the origin allows.
    ///
    /// Loads of one variant (the same request and output) under way at once make one encode, and every variant of a
    /// source shares its download and its decode. The load ends when its caller's task is cancelled
    /// (``ImageError/cancelled``); the encode goes on while another load waits for it, or to its end when a request
    /// has ``ImageRequest/Options/detached``.
    ///
    /// ```swift
    /// let request = try ImageRequest(url: url, processors: [.downsample(width: 320)])
    /// let result = try await manager.encodedImage(for: request, as: ImageOutput(.format(.webp)))
    /// print(result.encoded.bytes.count, result.encoded.digest, result.cacheType)
    /// ```
    nonisolated(nonsending) public func encodedImage(
        for request: ImageRequest, as output: ImageOutput
    ) async throws(ImageError) -> EncodedResult {
        if let immediate = immediateOutcome(for: request, as: output) { return try immediate.get() }
        let variantKey = cacheKey(for: request, as: output)
        let jobKey = ImageJob.Key(
            variantKey: variantKey, options: request.options.intersection(.shapingResult),
            cache: request.cache.map(ObjectIdentifier.init),
            loader: request.loader.map { ObjectIdentifier($0 as AnyObject) }, keepsVariant: true)
        let detached = request.options.contains(.detached)
        while true {
            let joined = state.withLock { state -> (OutputJob, Int, isNew: Bool)? in
                guard !state.isShutDown else { return nil }
                if let job = state.outputJobs[jobKey], let waiter = job.subscribe(detached: detached) {
                    return (job, waiter, false)
                }
                let job = OutputJob()
                let waiter = job.subscribe(detached: detached)!
                state.outputJobs[jobKey] = job
                state.runningOutputs[ObjectIdentifier(job)] = job
                return (job, waiter, true)
            }
            guard let (job, waiter, isNew) = joined else { throw .cancelled }
            if isNew {
                job.start { [self] in
                    let outcome = await produce(request, as: output, key: variantKey, job: job)
                    finished(job, key: jobKey)
                    return outcome
                } ended: { [self] in
                    // After the writes that follow the delivery: shutdown waits for them.
                    _ = state.withLock { $0.runningOutputs.removeValue(forKey: ObjectIdentifier(job)) }
                }
            }
            if let outcome = await job.wait(waiter) { return try outcome.get() }
        }
    }

    /// The key ``encodedImage(for:as:)`` caches `request`'s image encoded as `output` under, in memory and on disk:
    /// the request's variant key and the output's identifier. `nil` output: the key of the image itself.
    public func cacheKey(for request: ImageRequest, as output: ImageOutput? = nil) -> String {
        variantKey(for: request, output: output)
    }

    /// The outcome an encoded load has before any work: shut down, a URL on the failed list, or bytes in memory.
    private func immediateOutcome(
        for request: ImageRequest, as output: ImageOutput
    ) -> Result<EncodedResult, ImageError>? {
        if isShutDown { return .failure(.cancelled) }
        if !request.options.contains(.retryFailed), failedURLs.contains(request.url) {
            return .failure(.previouslyFailed(request.url, reason: failedURLs.failure(for: request.url)))
        }
        guard request.options.isDisjoint(with: [.fromLoaderOnly, .refreshCached]) else { return nil }
        let cache = request.cache ?? self.cache
        guard let encoded = cache.encodedImage(forKey: cacheKey(for: request, as: output)) else { return nil }
        return .success(
            EncodedResult(
                encoded: encoded, cacheType: .memory, imageCacheType: nil, url: request.url,
                storagePermission: .anyCache))
    }

    /// Takes `job` out of the table once its outcome is made, so that later loads start afresh.
    private func finished(_ job: OutputJob, key: ImageJob.Key) {
        state.withLock { state in
            if state.outputJobs[key] === job { state.outputJobs[key] = nil }
        }
    }

    /// The work of one encoded variant: the bytes on disk, else the image encoded now and stored.
    private func produce(
        _ request: ImageRequest, as output: ImageOutput, key: String, job: OutputJob
    ) async -> Result<EncodedResult, ImageError> {
        let cache = request.cache ?? self.cache
        let options = request.options
        let storesOnDisk = configuration.storesProcessedImagesOnDisk && !options.contains(.cacheMemoryOnly)
        if configuration.storesProcessedImagesOnDisk, options.isDisjoint(with: [.fromLoaderOnly, .refreshCached]),
            let found = await encodedOnDisk(forKey: key, cache: cache, coders: output.options.coders)
        {
            cache.storeEncodedInMemory(found, forKey: key)
            return .success(
                EncodedResult(
                    encoded: found, cacheType: .disk, imageCacheType: nil, url: request.url,
                    storagePermission: .anyCache))
        }

        // The image itself is not kept as a variant: its encoded bytes are.
        var imageRequest = request
        imageRequest.keepsVariant = false
        let loaded: ImageResult
        do throws(ImageError) {
            loaded = try await image(for: imageRequest)
        } catch {
            return .failure(error)
        }
        let image = loaded.image
        let format = output.format(for: image)
        let encodingOptions = output.options
        let encoded = await withTaskExecutorPreference(processingPool) {
            Result { () throws(CodecError) in
                EncodedImage(
                    bytes: try ImageEncoder.encode(image, as: format, options: encodingOptions), format: format)
            }
        }
        encodeCount.wrappingAdd(1, ordering: .relaxed)
        let encodedImage: EncodedImage
        switch encoded {
        case .success(let image): encodedImage = image
        case .failure(let error): return .failure(.encodingFailed(format: format, error))
        }

        let permission = loaded.storagePermission
        let isShared = configuration.isSharedCache
        if !isShared || permission == .anyCache { cache.storeEncodedInMemory(encodedImage, forKey: key) }
        var result = EncodedResult(
            encoded: encodedImage, cacheType: .none, imageCacheType: loaded.cacheType, url: loaded.url,
            storagePermission: permission)
        guard storesOnDisk, permission.allowsStoring(inSharedCache: isShared) else { return .success(result) }
        let store: @Sendable () async -> DiskStoreOutcome = { [configuration] in
            do throws(OspreyError) {
                try cache.diskCache.requireDirectory(toStore: key)
                // Marked private like its source, so that a shared cache on the same directory does not serve it.
                let validators = HTTPValidators(isPrivate: permission == .privateCacheOnly)
                try await cache.diskCache.store(encodedImage.bytes, forKey: key, validators: validators)
                return .stored
            } catch {
                configuration.logger.warning(
                    "cannot cache the encoded image",
                    metadata: ["osprey.url": "\(request.url)", "osprey.error": "\(error)"])
                return .failed(error)
            }
        }
        if options.contains(.waitStoreCache) {
            result.diskStore = await store()
            return .success(result)
        }
        // Delivered first; the write runs on as part of the job.
        job.afterDelivery(store)
        return .success(result)
    }

    /// The encoded bytes on disk for `key`, when they are an image `coders` recognises; read off the caller's task.
    private func encodedOnDisk(forKey key: String, cache: ImageCache, coders: ImageCoderRegistry) async -> EncodedImage?
    {
        let diskCache = cache.diskCache
        return await withTaskExecutorPreference(decodingPool) {
            guard let bytes = diskCache.blockingData(forKey: key) else { return nil }
            let format = coders.format(of: bytes)
            return format == .unknown ? nil : EncodedImage(bytes: bytes, format: format)
        }
    }
}

/// One encoded variant being made, shared by every load that asks for it: each waits for the outcome, and leaving
/// (its task cancelled) gets ``ImageError/cancelled`` at once. When the last waiter leaves, the work is cancelled
/// unless a waiter asked for ``ImageRequest/Options/detached``.
final class OutputJob: Sendable {
    typealias Outcome = Result<EncodedResult, ImageError>

    private struct State {
        var waiters: [Int: CheckedContinuation<Outcome?, Never>] = [:]
        /// Waiters subscribed but not yet suspended.
        var pending: Set<Int> = []
        var nextWaiter = 0
        var isDetached = false
        /// Finished, or abandoned: takes no new waiters.
        var isClosed = false
        var outcome: Outcome?
        var runner = RunnerSlot()
        var isAbandoned = false
    }

    private let state = Mutex(State())
    private let afterwards = Mutex<[@Sendable () async -> DiskStoreOutcome]>([])

    /// A new waiter's number; `nil` once the job takes no one new.
    func subscribe(detached: Bool) -> Int? {
        state.withLock { state in
            guard !state.isClosed else { return nil }
            state.nextWaiter += 1
            state.pending.insert(state.nextWaiter)
            if detached { state.isDetached = true }
            return state.nextWaiter
        }
    }

    /// Starts the work; its outcome goes to every waiter, then what ``afterDelivery(_:)`` scheduled runs, then
    /// `ended`.
    func start(_ work: @escaping @Sendable () async -> Outcome, ended: @escaping @Sendable () -> Void) {
        let runner = Task {
            let outcome = await work()
            self.deliver(outcome)
            for store in self.afterwards.withLock({ $0 }) { _ = await store() }
            ended()
        }
        let (abandoned, waiters) = state.withLock { state in (state.isAbandoned, state.runner.set(runner)) }
        for waiter in waiters { waiter.resume(returning: runner) }
        if abandoned { runner.cancel() }
    }

    /// Runs `store` once the outcome is delivered, still as part of the job.
    func afterDelivery(_ store: @escaping @Sendable () async -> DiskStoreOutcome) {
        afterwards.withLock { $0.append(store) }
    }

    /// The outcome for `waiter`; `nil` when the job was abandoned before it could join (the caller starts anew).
    func wait(_ waiter: Int) async -> Outcome? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome?, Never>) in
                let ready = state.withLock { state -> Outcome?? in
                    guard state.pending.remove(waiter) != nil else { return .some(.failure(.cancelled)) }
                    if let outcome = state.outcome { return .some(outcome) }
                    if state.isAbandoned { return .some(nil) }
                    state.waiters[waiter] = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            leave(waiter)
        }
    }

    /// Takes `waiter` out, answering it ``ImageError/cancelled``; abandons the work when it was the last.
    private func leave(_ waiter: Int) {
        let (continuation, runner) = state.withLock {
            state -> (CheckedContinuation<Outcome?, Never>?, Task<Void, Never>?) in
            let continuation = state.waiters.removeValue(forKey: waiter)
            state.pending.remove(waiter)
            guard state.outcome == nil, state.waiters.isEmpty, state.pending.isEmpty, !state.isDetached,
                !state.isAbandoned
            else { return (continuation, nil) }
            state.isAbandoned = true
            state.isClosed = true
            return (continuation, state.runner.runner)
        }
        continuation?.resume(returning: .failure(.cancelled))
        runner?.cancel()
    }

    private func deliver(_ outcome: Outcome) {
        let waiters = state.withLock { state in
            state.isClosed = true
            state.outcome = outcome
            defer { state.waiters = [:] }
            return state.waiters
        }
        for waiter in waiters.values { waiter.resume(returning: outcome) }
    }

    /// Waits for the work, and what runs after its delivery, to end.
    func waitForEnd() async {
        await RunnerSlot.waitForEnd { waiter in state.withLock { $0.runner.runner(orKeep: waiter) } }
    }

    /// Cancels the work unless a waiter asked for it to run to its end.
    func cancelUnlessDetached() {
        let runner = state.withLock { $0.isDetached ? nil : $0.runner.runner }
        runner?.cancel()
    }
}
