import FoundationEssentials
import Logging
import OspreyCodecs

// A job's decode and processing of downloaded bytes: the decode shared with the other variants of the source
// (in the manager's job table), the transform hook, the processors, on the manager's decoding and processing threads.
extension ImageJob {
    /// Decodes downloaded `bytes` and runs the transform hook and the processors, holding what the memory budget
    /// grants for it until the final image is made; returns the decoded image, the transformed one (`nil` when the
    /// hook left it alone) and the final one. A lasting failure (undecodable, larger than the whole budget) enters
    /// the failed-URL list for `source`, the URL the bytes came from.
    func decodeAndProcess(
        _ bytes: [UInt8], from source: URL, keepsInMemory: Bool
    ) async -> Result<(decoded: Image, transformed: Image?, final: Image), ImageError> {
        await observe(.decode)
        guard !Task.isCancelled else { return .failure(.cancelled) }
        let reservation: MemoryBudget.Reservation?
        switch await reserveMemory(for: bytes) {
        case .success(let granted): reservation = granted
        case .failure(let error):
            manager.failedURLs.record(source, failure: error)
            return .failure(error)
        }
        defer { reservation?.release() }
        let decoded: Image
        let queued = await manager.tracing.withSpan("osprey.decode") { span in
            let queued = await manager.decodingQueue.run(for: request.url) {
                await decode(bytes, keepsInMemory: keepsInMemory)
            }
            switch queued {
            case .success(let image)?:
                span.set("osprey.image.width", image.width)
                span.set("osprey.image.height", image.height)
            case .failure(let error)?: span.fail(error)
            case nil: span.fail(ImageError.cancelled)
            }
            return queued
        }
        guard let queued else { return .failure(.cancelled) }
        switch queued {
        case .success(let image): decoded = image
        case .failure(.cancelled):
            return .failure(.cancelled)
        case .failure(let error):
            manager.failedURLs.record(source, failure: .decodingFailed(error))
            return .failure(.decodingFailed(error))
        }
        for warning in decoded.warnings {
            manager.configuration.logger.warning(
                "decoded with a warning", metadata: ["osprey.url": "\(request.url)", "osprey.warning": "\(warning)"])
        }

        await observe(.process)
        guard !Task.isCancelled else { return .failure(.cancelled) }
        return await transformAndProcess(decoded).map { (decoded, $0.0, $0.1) }
    }

    /// How the job decodes bytes (see ``ImageManager/decoder(for:)``).
    var decoder: JobDecoder { JobDecoder(options: decoding, request: request) }

    /// Whether the job shares its decode with the other variants of its source and uses a decoded source kept in
    /// memory: not when the transform hook runs, which makes the source that variants derive from another image.
    var sharesDecodes: Bool { manager.configuration.transformDownloadedImage == nil }

    /// What makes the job's decode shareable with another's.
    var decodeSource: DecodeSource {
        DecodeSource(baseKey: baseKey, pixelBudget: decoding.pixelBudget, loader: ObjectIdentifier(loader as AnyObject))
    }

    /// Downloaded `bytes` decoded, by the manager's job table: by the decode the other variants of the source share
    /// (keeping its image in memory for the variants that follow, when `keepsInMemory`), or alone on the decoding
    /// threads. The job leaves at once when cancelled; the decode is cancelled when no other job waits for it.
    private func decode(_ bytes: [UInt8], keepsInMemory: Bool) async -> Result<Image, CodecError> {
        let shares = sharesDecodes
        let cache = self.cache
        let (baseKey, decoding, expiration) = (self.baseKey, self.decoding, request.memoryCacheExpiration)
        let outcome = await manager.decode(
            bytes, for: id, source: shares ? decodeSource : nil, decoder: decoder
        ) { image, header, size in
            guard shares, keepsInMemory else { return }
            cache.storeDecodedSource(
                DecodedSource(image: image, header: header, size: size, options: decoding), forKey: baseKey,
                expiration: expiration)
        }
        return outcome ?? .failure(.cancelled)
    }

    /// Runs the transform hook (unless the image is animated and the request did not ask) and the processors;
    /// returns the transformed image (`nil` when the hook left it alone) and the final one.
    private func transformAndProcess(_ image: Image) async -> Result<(Image?, Image), ImageError> {
        var transformed: Image?
        if let transform = manager.configuration.transformDownloadedImage,
            !image.isAnimated || request.options.contains(.transformAnimatedImage)
        {
            let url = request.url
            let queued = await manager.processingQueue.run(for: url) {
                await withTaskExecutorPreference(manager.processingPool) {
                    Result { () throws(ImageError) -> Image? in
                        do {
                            return try transform(image, url)
                        } catch {
                            throw .processingFailed(identifier: "transformDownloadedImage", error: error)
                        }
                    }
                }
            }
            guard let outcome = queued else { return .failure(.cancelled) }
            switch outcome {
            case .success(let image): transformed = image
            case .failure(let error): return .failure(error)
            }
        }
        switch await process(transformed ?? image) {
        case .success(let final): return .success((transformed, final))
        case .failure(let error): return .failure(error)
        }
    }

    func process(_ image: Image) async -> Result<Image, ImageError> {
        let processors = request.processors
        guard !processors.isEmpty else { return .success(image) }
        return await manager.tracing.withSpan("osprey.process") { span in
            span.set("osprey.processors", processors.map(\.identifier).joined(separator: "|"))
            let queued = await manager.processingQueue.run(for: request.url) {
                await withTaskExecutorPreference(manager.processingPool) {
                    Result { () throws(ImageError) in try ImageManager.process(image, with: processors) }
                }
            }
            return span.record(queued ?? .failure(.cancelled))
        }
    }
}
