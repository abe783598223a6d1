import Logging
import OspreyCodecs

// A job's last stage: what it writes to the disk cache, staged before the delivery and finished after it.
extension ImageJob {
    /// The disk writes for a downloaded image: the original (its bytes, or the transformed image re-encoded) under the
    /// base key with the origin's validators, and with ``ImageManager/Configuration/storesProcessedImagesOnDisk`` the
    /// variant under its own key. `nil` for `cacheMemoryOnly`. A write that fails is logged and reported as the
    /// store's outcome; so is a disk cache that stores nothing because its directory is unusable.
    ///
    /// Original bytes are staged here, before the image is delivered, so a load of another variant that follows the
    /// delivery derives it from them rather than downloading again while the write is on its way. The store keeps
    /// only the images it will encode: a decoded image it does not need (the original when its bytes are stored) is
    /// not held while the write runs after the memory budget was given back.
    func diskStore(original: Image, bytes: [UInt8]?, final: Image, validators: HTTPValidators) -> Store? {
        guard !request.options.contains(.cacheMemoryOnly) else { return nil }
        let baseKey = self.baseKey
        let variantKey = key.variantKey
        let storesVariant =
            manager.configuration.storesProcessedImagesOnDisk && variantKey != baseKey && request.keepsVariant
        let cache = self.cache
        let logger = manager.configuration.logger
        let url = request.url
        let expiration = request.diskCacheExpiration
        // The default serializer keeps the original's bytes as they are: staged now. Another is given the image
        // (with its bytes) on the thread pool when the write runs.
        let staged =
            cache.keepsOriginalBytes
            ? bytes.map {
                cache.stageData($0, forKey: baseKey, validators: validators, expiration: expiration)
            }
            : nil
        let originalToSerialize = staged == nil ? original : nil
        let originalBytes = staged == nil ? bytes : nil
        let variantToSerialize = storesVariant ? final : nil
        return { [self] in
            await observe(.store)
            return await manager.tracing.withSpan("osprey.cache.store") { span in
                do throws(CacheError) {
                    if let staged {
                        try await staged()
                    } else if let originalToSerialize {
                        try await cache.storeOnDisk(
                            originalToSerialize, original: originalBytes, forKey: baseKey, validators: validators,
                            expiration: expiration, coders: decoding.coders)
                    }
                    if let variantToSerialize {
                        try await cache.storeOnDisk(
                            variantToSerialize, original: nil, forKey: variantKey, validators: validators,
                            expiration: expiration, coders: decoding.coders)
                    }
                    return .stored
                } catch {
                    span.fail(error)
                    cache.logStoreFailure(error, url: url, to: logger)
                    return .failed(error)
                }
            }
        }
    }
}
