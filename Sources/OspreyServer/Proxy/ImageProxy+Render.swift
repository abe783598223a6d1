import FoundationEssentials
import Logging
import NIOCore
import Osprey
import OspreyCodecs
import Prometheus
import Tracing

// The pipeline: from a request in any URL style, checked, to the rendered image.
extension ImageProxy {
    /// The bytes a query answered before rendered to, when memory still has them; in a span of its own when tracing.
    private func encodedInMemory(_ known: KnownQuery) -> EncodedImage? {
        guard let tracer = manager.tracer else { return manager.cache.encodedImage(forKey: known.key) }
        let span = tracer.startSpan("osprey.cache.lookup")
        defer { span.end() }
        let hit = manager.cache.encodedImage(forKey: known.key)
        span.attributes["osprey.cache.result"] = hit == nil ? "miss" : "memory"
        return hit
    }

    /// The answer for a request already parsed and checked before (same raw URL, same preferred format), when memory
    /// still holds its bytes.
    private func knownAnswer(_ queryKey: String, style: URLStyle) -> Outcome? {
        guard let known = knownQueries.value(forKey: queryKey), let hit = encodedInMemory(known) else { return nil }
        if let expires = known.expires, hasPassed(expires) { return .failure(Self.expired(style)) }
        metrics.hit(.resultMemory)
        return .image(
            RenderedImage(hit), signed: known.signed, vary: known.vary, expires: known.expires,
            disposition: known.disposition.map { RenderParameters.disposition($0, naming: hit.format) })
    }

    /// Answers the `/img` query `query` for a client that sent `accept` and, when the server reads them, `hints`.
    func render(query: String?, path: String, accept: String?, hints: ClientHints?, logger: Logger) async -> Outcome {
        let accepted = Self.acceptedFormats(for: accept, preferring: configuration.autoFormats)
        var queryKey = Self.formatsKey(accepted) + ":" + path + "?" + (query ?? "")
        if let hints { queryKey += "#" + hints.key }
        if let known = knownAnswer(queryKey, style: .img) { return known }
        var parameters: RenderParameters
        do {
            parameters = try RenderParameters(
                query: query, maxOutputPixels: configuration.maxOutputPixels, coders: configuration.coders,
                presets: presets, presetsOnly: configuration.presetsOnly, allowsLocalSources: localRoot != nil,
                hasWatermark: configuration.watermark != nil)
        } catch {
            return .failure(error)
        }
        if let refused = refusal(ofSignature: parameters.signature, path: path, pairs: parameters.pairs)
            ?? parameters.effortRefusal(maxEffort: configuration.maxEffort)
        {
            return .failure(refused)
        }
        var hintVary: [String] = []
        if let hints, let settings = configuration.clientHints {
            hintVary = hints.apply(
                to: &parameters, configuration: settings, maxOutputPixels: configuration.maxOutputPixels)
        }
        return await render(
            parameters, signed: parameters.signature != nil, queryKey: queryKey, accepted: accepted, style: .img,
            hintVary: hintVary, logger: logger)
    }

    /// Answers an imgproxy URL (`path` from the slash after the configured prefix).
    func render(imgproxyPath path: String, accept: String?, logger: Logger) async -> Outcome {
        guard let imgproxy = configuration.imgproxy else { return .failure(.badRequest("imgproxy URLs are off")) }
        let accepted = Self.acceptedFormats(for: accept, preferring: configuration.autoFormats)
        let queryKey = Self.formatsKey(accepted) + ":imgproxy:" + path
        if let known = knownAnswer(queryKey, style: .imgproxy) { return known }
        let url: ImgproxyURL
        do {
            url = try ImgproxyURL(path: path, configuration: imgproxy, server: configuration)
        } catch {
            return .failure(error)
        }
        let signed = !imgproxy.keys.isEmpty && url.isSigned(by: imgproxy)
        guard signed || configuration.allowsUnsigned else {
            return .failure(.badSignature("the imgproxy signature does not match"))
        }
        return await render(
            url.parameters, signed: signed, queryKey: queryKey, accepted: accepted, style: .imgproxy, logger: logger
        )
    }

    /// Answers a thumbor URL (`path` from the slash after the configured prefix).
    func render(thumborPath path: String, accept: String?, logger: Logger) async -> Outcome {
        guard let thumbor = configuration.thumbor else { return .failure(.badRequest("thumbor URLs are off")) }
        let accepted = Self.acceptedFormats(for: accept, preferring: configuration.autoFormats)
        let queryKey = Self.formatsKey(accepted) + ":thumbor:" + path
        if let known = knownAnswer(queryKey, style: .thumbor) { return known }
        let url: ThumborURL
        do {
            url = try ThumborURL(path: path, server: configuration)
        } catch {
            return .failure(error)
        }
        let signed = url.signature != "unsafe" && url.isSigned(by: thumbor.keys)
        guard signed || (url.signature == "unsafe" && configuration.allowsUnsigned) else {
            return .failure(
                .badSignature(
                    url.signature == "unsafe"
                        ? "unsafe thumbor URLs are not allowed here" : "the thumbor signature does not match"))
        }
        return await render(
            url.parameters, signed: signed, queryKey: queryKey, accepted: accepted, style: .thumbor, logger: logger)
    }

    /// The error an expired URL gets in `style`: 410 Gone, or imgproxy's 404.
    static func expired(_ style: URLStyle) -> ProxyError {
        style == .imgproxy ? .sourceNotFound : .expired
    }

    /// Renders checked `parameters`: the expiry, the source's policy, then the pipeline (or the source's bytes for
    /// `raw`, `skip_processing` and thumbor's `meta/`).
    private func render(
        _ parameters: RenderParameters, signed: Bool, queryKey: String, accepted: [ImageFormat], style: URLStyle,
        hintVary: [String] = [], logger: Logger
    ) async -> Outcome {
        // After the signature: an expiry nobody signed proves nothing, and a forger learns nothing from it.
        if let expires = parameters.expires, hasPassed(expires) { return .failure(Self.expired(style)) }
        var local: LocalSource?
        if let path = parameters.localPath, let localRoot {
            switch LocalSource.resolve(path, in: localRoot, maximumSize: configuration.maxSourceBytes) {
            case .success(let source): local = source
            case .failure(let error): return await fallback(for: error, parameters, accepted: accepted)
            }
        } else {
            guard let host = parameters.source.host(percentEncoded: false), policy.allowsHost(host) else {
                return .failure(.forbiddenSource)
            }
        }
        if parameters.raw || !parameters.skipProcessing.isEmpty || parameters.meta {
            return await sourceAnswer(
                parameters, signed: signed, local: local, queryKey: queryKey, accepted: accepted, style: style,
                logger: logger)
        }
        var fetchedMark: ThumborWatermark?
        if let markSource = parameters.markSource {
            switch await fetchMark(markSource) {
            case .success(let mark): fetchedMark = mark
            case .failure(let error): return .failure(error)
            }
        }
        let request: ImageRequest
        switch makeRequest(parameters, local: local, mark: fetchedMark) {
        case .success(let made): request = made
        case .failure(let error): return .failure(error)
        }
        let output = Self.output(parameters, accepted: accepted, configuration: configuration)
        let key = manager.cacheKey(for: request, as: output)
        let vary = (parameters.format?.variesByAccept == true ? ["Accept"] : []) + hintVary
        let disposition = parameters.contentDisposition(format: parameters.likelyFormat(accepted: accepted))
        // A local file may be edited under the same URL (a new key each time): its queries are resolved every time.
        if local == nil {
            knownQueries.setValue(
                KnownQuery(
                    key: key, signed: signed, vary: vary, expires: parameters.expires,
                    disposition: disposition),
                forKey: queryKey, cost: queryKey.utf8.count + key.utf8.count)
        }

        let start = ContinuousClock.now
        let loaded: EncodedResult
        switch await load(request, as: output) {
        case .success(let result): loaded = result
        case .failure(.overtime):
            return .failure(.unavailable("the image took longer than the processing limit", retryAfter: nil))
        case .failure(.image(.processingFailed(let identifier, let error)))
        where identifier.hasPrefix(SelectFrame.name):
            return .failure(.badRequest("\(error)"))
        case .failure(.image(.processingFailed(let identifier, let error)))
        where identifier.hasPrefix(OutputPixelLimit.name):
            return .failure(.tooLarge("\(error)"))
        case .failure(.image(let error)):
            logger.info("cannot render", metadata: ["url": "\(parameters.source)", "error": "\(error)"])
            return await fallback(for: ProxyError(error, limits: configuration), parameters, accepted: accepted)
        }
        switch (loaded.cacheType, loaded.imageCacheType) {
        case (.memory, _): metrics.hit(.resultMemory)
        case (.disk, _): metrics.hit(.resultDisk)
        case (.notCached, .memory?): metrics.hit(.sourceMemory)
        case (.notCached, .disk?): metrics.hit(.sourceDisk)
        case (.notCached, _): metrics.hit(.origin)
        }
        if loaded.cacheType == .notCached { metrics.processing.record(ContinuousClock.now - start) }
        return .image(
            RenderedImage(loaded.encoded, storagePermission: loaded.storagePermission), signed: signed,
            vary: vary, expires: parameters.expires,
            disposition: parameters.contentDisposition(format: loaded.encoded.format))
    }

    /// The answers made of the source's bytes: `raw`, `skip_processing` when the source's format is listed (and the
    /// output's is the same), and thumbor's `meta/`.
    private func sourceAnswer(
        _ parameters: RenderParameters, signed: Bool, local: LocalSource?, queryKey: String, accepted: [ImageFormat],
        style: URLStyle, logger: Logger
    ) async -> Outcome {
        var request: ImageRequest
        if let local {
            request = ImageRequest(provider: local, options: [.detached])
        } else {
            do throws(ImageError) {
                request = try ImageRequest(url: parameters.source, options: [.detached])
            } catch {
                return .failure(ProxyError(error, limits: configuration))
            }
        }
        let data: DataResult
        do throws(ImageError) {
            data = try await manager.data(for: request)
        } catch {
            logger.info("cannot fetch", metadata: ["url": "\(parameters.source)", "error": "\(error)"])
            return await fallback(for: ProxyError(error, limits: configuration), parameters, accepted: accepted)
        }
        guard data.header.pixelCount <= configuration.maxSourcePixels else {
            return .failure(.tooLarge("the source has more than \(configuration.maxSourcePixels) pixels"))
        }
        if parameters.meta {
            let frames = (try? ImageHeader.frames(in: data.data).count) ?? 1
            let meta = ThumborMeta(parameters: parameters, header: data.header, frameCount: frames)
            return .json(meta.json, signed: signed, expires: parameters.expires)
        }
        let format = data.header.format
        let sameFormat = parameters.format == nil || parameters.format == .encoded(format)
        if parameters.raw || (parameters.skipProcessing.contains(format) && sameFormat) {
            metrics.hit(data.cacheType == .notCached ? .origin : .sourceDisk)
            let image = RenderedImage(
                EncodedImage(bytes: data.data, format: format), storagePermission: data.storagePermission)
            return .image(
                image, signed: signed, vary: [], expires: parameters.expires,
                disposition: parameters.contentDisposition(format: format))
        }
        // Listed for skipping, but not this source's format: rendered as asked.
        var rendered = parameters
        rendered.skipProcessing = []
        rendered.raw = false
        rendered.meta = false
        return await render(
            rendered, signed: signed, queryKey: queryKey, accepted: accepted, style: style, logger: logger)
    }

    /// thumbor's watermark image, fetched under the same source policy as any source.
    private func fetchMark(_ source: ThumborWatermark.Source) async -> Result<ThumborWatermark, ProxyError> {
        guard let host = source.url.host(percentEncoded: false), policy.allowsHost(host) else {
            return .failure(.forbiddenSource)
        }
        do throws(ImageError) {
            let request = try ImageRequest(url: source.url, options: [.decodeFirstFrameOnly])
            let mark = try await manager.image(for: request).image
            return .success(ThumborWatermark(source: source, mark: mark))
        } catch {
            // The mark could not be had: a bad gateway whatever the reason, not the source's failure.
            return .failure(.badRequest("the thumbor watermark image cannot be loaded"))
        }
    }

    /// The fallback image rendered as `parameters` ask, when `error` says the source could not be had and there is
    /// one (``ServerConfiguration/fallbackImage``); otherwise, or when the fallback itself fails, `error`.
    private func fallback(
        for error: ProxyError, _ parameters: RenderParameters, accepted: [ImageFormat]
    ) async -> Outcome {
        guard let fallback = configuration.fallbackImage, error.isSourceFailure else { return .failure(error) }
        let bytes = fallback.bytes
        let request = ImageRequest(
            provider: ClosureDataProvider(cacheKey: fallback.cacheKey) { bytes }, options: [.decodeFirstFrameOnly],
            processors: processors(for: parameters, mark: nil))
        let output = Self.output(parameters, accepted: accepted, configuration: configuration)
        guard case .success(let loaded) = await load(request, as: output) else { return .failure(error) }
        metrics.fallbacks.increment()
        return .fallback(
            RenderedImage(loaded.encoded), status: fallback.status,
            vary: parameters.format?.variesByAccept == true ? ["Accept"] : [])
    }

    /// What `parameters` ask of an image, with the server's watermark (and a fetched one), and the output pixel limit
    /// last.
    private func processors(for parameters: RenderParameters, mark: ThumborWatermark?) -> [any ImageProcessing] {
        parameters.processors(watermark: configuration.watermark, fetchedMark: mark)
            + [OutputPixelLimit(maxPixels: configuration.maxOutputPixels)]
    }

    /// Why a query of `path` with `pairs` and `signature` (its `sig`) is refused: a signature that does not match, or
    /// none where the server takes only signed requests; `nil` when it is accepted.
    func refusal(ofSignature signature: String?, path: String, pairs: [(name: String, value: String)]) -> ProxyError? {
        guard let signature else {
            return configuration.allowsUnsigned ? nil : .badSignature("the request must be signed ('sig')")
        }
        guard let signer, signer.isValid(signature, path: path, parameters: pairs) else {
            return .badSignature("the signature does not match")
        }
        return nil
    }

    /// Whether the Unix time `expires` has come, on the configuration's wall clock.
    func hasPassed(_ expires: Int) -> Bool {
        configuration.now().seconds >= Double(expires)
    }

    /// How long a response may be cached: ``ServerConfiguration/cacheMaxAge``, or less when the URL expires sooner,
    /// so that no cache in front serves it past its `exp`.
    func maxAge(expires: Int?) -> Int {
        guard let expires else { return configuration.cacheMaxAge }
        let left = Double(expires) - configuration.now().seconds
        return max(0, min(configuration.cacheMaxAge, Int(saturating: left.rounded(.down))))
    }

    /// The manager's request for `parameters` (read from `local` for a local source): the source, the frame and the
    /// processors, the output pixel limit last; one frame only for a still output. A render runs to its end (and is
    /// cached) even when every request waiting for it has gone.
    private func makeRequest(
        _ parameters: RenderParameters, local: LocalSource?, mark: ThumborWatermark?
    ) -> Result<ImageRequest, ProxyError> {
        var processors = processors(for: parameters, mark: mark)
        if let frame = parameters.frame { processors.insert(SelectFrame(index: frame), at: 0) }
        var request: ImageRequest
        if let local {
            request = ImageRequest(provider: local, options: [.detached], processors: processors)
        } else {
            do throws(ImageError) {
                request = try ImageRequest(url: parameters.source, options: [.detached], processors: processors)
            } catch {
                guard case .invalidURL(_, let reason) = error else { return .failure(.internalError) }
                return .failure(RenderParameters.invalidSource(reason))
            }
        }
        if case .some(let hint) = parameters.decodingHint { request.decodingSizeHint = hint }
        if parameters.frame == nil, parameters.format == .encoded(.jpeg) || parameters.format == .encoded(.png) {
            request.options.insert(.decodeFirstFrameOnly)
        }
        return .success(request)
    }

    /// What the result is encoded as: the format asked for (`auto` resolved to the first of `accepted`, the preferred
    /// format the client accepts, if any), the quality (asked for, else the request's and then the server's for the
    /// format, else 80), the palette, the effort, the most bytes, the metadata, the source's bytes when smaller.
    static func output(
        _ parameters: RenderParameters, accepted: [ImageFormat], configuration: ServerConfiguration
    ) -> ImageOutput {
        var options = EncodingOptions()
        options.coders = configuration.coders
        options.quality = parameters.quality ?? RenderParameters.defaultQuality
        options.metadata = parameters.metadata
        options.pngPaletteQuality = parameters.pngPaletteQuality
        if let effort = parameters.effort { options.setEffort(effort) }
        if let background = parameters.background {
            // What transparency is flattened onto in a format without alpha (JPEG), as well as the canvas colour.
            options.background = EncodingOptions.Color(
                red: background.red, green: background.green, blue: background.blue)
        }
        let format: ImageOutput.Format =
            switch parameters.format {
            case .encoded(let format): .format(format)
            // The preferred formats the client named, and those every client takes.
            case .best,
                .auto where configuration.autoFormatIsBest:
                .best(accepted: Set(accepted + [.jpeg, .png, .gif]))
            case .auto where !accepted.isEmpty: .format(accepted[0])
            // None preferred: the source's format when the client surely takes it, else the common one that fits.
            case .auto: .source(accepted: [.jpeg, .png, .gif])
            case nil: .source()
            }
        var output = ImageOutput(format, options: options)
        if let target = parameters.perceptualTarget {
            output.quality = .perceptual(target: target)
        } else if parameters.quality == nil {
            let qualities = configuration.formatQualities.merging(parameters.formatQualities) { $1 }
            if case .format(let known) = format {
                // Resolved now: the key names one quality, as a request that gave it would.
                if let quality = qualities[known] { output.options.quality = quality }
            } else {
                output.qualities = qualities
            }
        }
        output.maxBytes = parameters.maxBytes
        output.keepsSmallerSource = true  // never larger than a source that already is the answer
        return output
    }

    /// The manager's encoded load, abandoned (503) when the source and processing time limits have both passed.
    private func load(_ request: ImageRequest, as output: ImageOutput) async -> Result<EncodedResult, LoadFailure> {
        let limit = configuration.sourceTimeout + configuration.processingTimeout
        return await withDeadline(limit, clock: configuration.clock, overtime: .failure(.overtime)) {
            do throws(ImageError) {
                return .success(try await self.manager.encodedImage(for: request, as: output))
            } catch {
                return .failure(.image(error))
            }
        }
    }

    private enum LoadFailure: Error {
        case image(ImageError)
        case overtime
    }
}
