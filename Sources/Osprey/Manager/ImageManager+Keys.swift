import FoundationEssentials
import OspreyCodecs

// Cache keys and the identity of a job.
//
// The disk keeps originals under the base key (the key filter's, else the absolute URL). What a request produces —
// after its size, pixel budget, first-frame choice and processors — is cached under the variant key: the base key
// plus a canonical suffix for each of those, so a resized variant and the original never collide, and two requests
// that would produce the same pixels share one entry. The suffix starts with a space, which no URL's absolute string
// holds (URL percent-encodes it): a source URL spelling a suffix in its fragment or query cannot take a variant's
// key. (A key filter is trusted to keep its keys apart in the same way.)
extension ImageManager {
    /// What separates a variant key's suffix from its base key: a space, never in a URL's absolute string.
    static let variantSeparator = " osprey:"

    /// The keys one load is cached under, made once when it starts and handed down its stages.
    struct CacheKeys: Sendable {
        /// The original bytes': the key filter's, else the URL's absolute string.
        let base: String
        /// The final image's: `base` plus what shapes the image (size, budget, frame, processors), or `base` when
        /// nothing does.
        let image: String
        /// The encoded output's, for a load of encoded bytes: `image` plus the output's identifier.
        let output: String?

        /// What the load's result is cached under: its output's key, else its image's.
        var variant: String { output ?? image }

        /// The keys of the image an encoded load encodes.
        var withoutOutput: CacheKeys { CacheKeys(base: base, image: image, output: nil) }
    }

    /// The keys `request`'s load is cached under, encoded as `output` when given: the base key, the image's (the base
    /// key plus a canonical suffix for its size, pixel budget, first-frame choice and processors) and the output's.
    func cacheKeys(for request: ImageRequest, output: ImageOutput? = nil) -> CacheKeys {
        let base = cacheKey(for: request.url)
        let decoding = decodingOptions(for: request)
        var parts: [String] = []
        if let size = decoding.targetSize { parts.append("size=\(size.width)x\(size.height)") }
        if let budget = decoding.pixelBudget { parts.append("budget=\(budget)") }
        if decoding.firstFrameOnly { parts.append("frame=first") }
        if !request.processors.isEmpty { parts.append("processors=\(request.processors.compositeIdentifier)") }
        // A hint from the first processor is in its identifier already; one set on the request is not.
        if case .some(let hint) = request.explicitHint, request.targetSize == nil {
            parts.append("hint=\(hint?.identifier ?? "none")")
        }
        let image = parts.isEmpty ? base : base + Self.variantSeparator + parts.joined(separator: ";")
        let output = output.map { image + (parts.isEmpty ? Self.variantSeparator : ";") + $0.identifier }
        return CacheKeys(base: base, image: image, output: output)
    }

    /// The manager's decoding options with the request's size, budget and first-frame choice on top.
    func decodingOptions(for request: ImageRequest) -> DecodingOptions {
        var options = configuration.decoding
        if let targetSize = request.targetSize { options.targetSize = targetSize }
        if let budget = request.pixelBudget {
            options.pixelBudget = budget
        } else if request.options.contains(.scaleDownLargeImages) {
            options.pixelBudget = configuration.scaleDownPixelBudget
        }
        if request.options.contains(.decodeFirstFrameOnly) { options.firstFrameOnly = true }
        return options
    }

    /// How a request's bytes are decoded: its decoding options, at the size its decoding-size hint gives.
    func decoder(for request: ImageRequest) -> JobDecoder {
        JobDecoder(options: decodingOptions(for: request), request: request)
    }

    /// What makes two loads one job: the same variant (``CacheKeys/variant``: the image's, or the output's for an
    /// encoded load), the same result-shaping options, the same cache, loader and alternative sources.
    func jobKey(for request: ImageRequest, keys: CacheKeys) -> ImageJob.Key {
        ImageJob.Key(
            variantKey: keys.variant, options: request.options.intersection(.shapingResult),
            cache: request.cache.map(ObjectIdentifier.init),
            loader: request.loader.map { ObjectIdentifier($0 as AnyObject) }, keepsVariant: request.keepsVariant,
            alternatives: request.alternativeURLs.map(\.absoluteString))
    }
}
