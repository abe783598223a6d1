import FoundationEssentials
import Logging
import Osprey
import OspreyCodecs

// `GET /info`: what an image says of itself and its placeholders, from one small decode shared with `/img`.
extension ImageProxy {
    /// The side the pixels for the placeholders are reduced to fit: what BlurHash and ThumbHash read.
    static let infoSide = ImagePlaceholders.hashSide

    /// Answers the `/info` query `query`.
    func info(query: String?, path: String, logger: Logger) async -> Outcome {
        let parameters: InfoParameters
        do {
            parameters = try InfoParameters(query: query, allowsLocalSources: localRoot != nil)
        } catch {
            return .failure(error)
        }
        if let refused = refusal(ofSignature: parameters.signature, path: path, pairs: parameters.pairs) {
            return .failure(refused)
        }
        let signed = parameters.signature != nil
        if let expires = parameters.expires, hasPassed(expires) { return .failure(.expired) }
        var local: LocalSource?
        if let path = parameters.localPath, let localRoot {
            switch LocalSource.resolve(path, in: localRoot, maximumSize: configuration.maxSourceBytes) {
            case .success(let source): local = source
            case .failure(let error): return .failure(error)
            }
        } else {
            guard let host = parameters.source.host(percentEncoded: false), policy.allowsHost(host) else {
                return .failure(.forbiddenSource)
            }
        }
        let answerKey = parameters.source.absoluteString + "#" + parameters.variant
        if local == nil, let known = infoAnswers.value(forKey: answerKey) {
            metrics.hit(.resultMemory)
            return .json(known, signed: signed, expires: parameters.expires)
        }
        switch await infoDocument(parameters, local: local, logger: logger) {
        case .success(let json):
            if local == nil { infoAnswers.setValue(json, forKey: answerKey, cost: json.count + answerKey.utf8.count) }
            return .json(json, signed: signed, expires: parameters.expires)
        case .failure(let error):
            return .failure(error)
        }
    }

    /// The JSON document for `parameters`: the pixels from a decode at the smallest scale that still fills 100 × 100
    /// (the same load as `/img`'s, so that variants asked at once share its download and its decode), the rest from
    /// the source's bytes.
    private func infoDocument(
        _ parameters: InfoParameters, local: LocalSource?, logger: Logger
    ) async -> Result<[UInt8], ProxyError> {
        let processors: [any ImageProcessing] = [
            ImageProcessors.Downsample(width: Self.infoSide, height: Self.infoSide)
        ]
        var request: ImageRequest
        if let local {
            request = ImageRequest(provider: local, options: [.detached], processors: processors)
        } else {
            do throws(ImageError) {
                request = try ImageRequest(url: parameters.source, options: [.detached], processors: processors)
            } catch {
                return .failure(ProxyError(error, limits: configuration))
            }
        }
        let limit = configuration.sourceTimeout + configuration.processingTimeout
        let manager = self.manager
        let load = request
        let loaded: Result<(ImageResult, [UInt8]), ImageError>? = await withDeadline(
            limit, clock: configuration.clock, overtime: nil
        ) {
            do throws(ImageError) {
                let result = try await manager.image(for: load)
                // The bytes come with a download or a disk hit; from memory, the data cache has them.
                if let data = result.data { return .success((result, data)) }
                var plain = load
                plain.processors = []
                return .success((result, try await manager.data(for: plain).data))
            } catch {
                return .failure(error)
            }
        }
        let result: ImageResult
        let data: [UInt8]
        switch loaded {
        case nil:
            return .failure(.unavailable("the image took longer than the processing limit", retryAfter: nil))
        case .failure(let error)?:
            logger.info("cannot describe", metadata: ["url": "\(parameters.source)", "error": "\(error)"])
            return .failure(ProxyError(error, limits: configuration))
        case .success(let loaded)?:
            (result, data) = loaded
        }
        metrics.hit(result.cacheType == .notCached ? .origin : result.cacheType == .disk ? .sourceDisk : .sourceMemory)
        do {
            var info = try ImageInfo(data: data, coders: configuration.coders)
            try info.addPlaceholders(
                ImagePlaceholders(result.image), blurComponents: parameters.blurComponents, colors: parameters.colors)
            return .success(info.json(includingGPS: configuration.infoIncludesGPS))
        } catch let error as CodecError {
            return .failure(ProxyError(error, limits: configuration))
        } catch {
            return .failure(.undecodable)
        }
    }
}
