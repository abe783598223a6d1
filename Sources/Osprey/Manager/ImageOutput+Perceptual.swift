import OspreyCodecs

extension ImageOutput {
    /// How the encoder's quality is chosen.
    public enum Quality: Sendable, Hashable {
        /// ``ImageOutput/options``' quality, or ``ImageOutput/qualities``' for the format written.
        case fixed
        /// The lowest quality whose output scores at least `target` on SSIMULACRA 2 against the image (see
        /// ``ImageQuality``): fewer bytes for easy pictures, enough for hard ones. JPEG, WebP, AVIF and JPEG XL, still
        /// images; other formats, lossless output and animations keep the fixed quality.
        case perceptual(target: Double)

        /// The target `q=auto` aims at without one: 70, "high quality" on SSIMULACRA 2's scale. On the 15 corpus
        /// photos fit inside 1024 px it takes 0.91× the bytes imgproxy's default (WebP at quality 79) takes, and its
        /// worst photo scores 70.1 where that default's worst scores 59.3 (docs/benchmarks.md); aiming at that
        /// default's median score instead (75.7) takes 1.12× its bytes.
        public static let defaultTarget = 70.0

        /// Perceptual at ``defaultTarget``.
        public static var perceptual: Quality { .perceptual(target: defaultTarget) }
    }

    /// The lowest quality of `format` whose encoding of `image` scores at least `target`, and its bytes; the highest
    /// quality tried when none does (100 at most). The search starts from the quality that format usually needs for
    /// the target, then interpolates between the scores it measured: three or four encodes for most photos, six at
    /// most.
    static func perceptualEncoding(
        of image: Image, as format: ImageFormat, options: EncodingOptions, target: Double
    ) throws(CodecError) -> PerceptualEncoding {
        var pixels = image.frames[0].pixels
        if format == .jpeg, pixels.format.hasAlpha {
            // Scored against what the format can show: the image over its background.
            let background = options.background
            pixels = try pixels.flattened(red: background.red, green: background.green, blue: background.blue)
        }
        let reference: ImageQuality.Reference
        do {
            reference = try ImageQuality.Reference(pixels)
        } catch {
            // An image under 8 × 8 pixels cannot be scored: the fixed quality.
            let bytes = try ImageEncoder.encode(image, as: format, options: options)
            return PerceptualEncoding(bytes: bytes, quality: options.quality, score: .nan, encodes: 1)
        }
        var decoding = DecodingOptions()
        decoding.colorHandling = .keepProfile
        decoding.firstFrameOnly = true
        decoding.readsMetadata = false
        decoding.coders = options.coders
        var tried: [Int: (bytes: [UInt8], score: Double)] = [:]
        func attempt(_ quality: Int) throws(CodecError) -> Double {
            var options = options
            options.quality = quality
            let bytes = try ImageEncoder.encode(image, as: format, options: options)
            let decoded = try ImageDecoder.decode(bytes, options: decoding)
            let score = (try? reference.ssimulacra2(decoded.frames[0].pixels)) ?? -.infinity
            tried[quality] = (bytes, score)
            return score
        }
        var search = PerceptualSearch(target: target, start: PerceptualSearch.start(for: format, target: target))
        while let quality = search.next {
            search.record(quality, score: try attempt(quality))
            // A cancelled load keeps what it has (its caller is gone; the bytes are not stored).
            if Task.isCancelled { break }
        }
        let chosen = search.chosen
        return PerceptualEncoding(
            bytes: tried[chosen]!.bytes, quality: chosen, score: tried[chosen]!.score, encodes: tried.count)
    }
}

/// What a perceptual search found: the bytes, their quality and score, and how many encodes it took.
struct PerceptualEncoding {
    let bytes: [UInt8]
    let quality: Int
    let score: Double
    let encodes: Int
}

extension ImageOutput {
    /// The lossy formats `format=best` tries for `image`, in a fixed order: those of `accepted` an encoder writes,
    /// JPEG only for an opaque image.
    static func bestCandidates(
        for image: Image, accepted: Set<ImageFormat>, coders: ImageCoderRegistry
    ) -> [ImageFormat] {
        [ImageFormat.jpeg, .webp, .avif, .jxl].filter { format in
            accepted.contains(format) && coders.encoder(for: format) != nil
                && (format != .jpeg || !image.pixelFormat.hasAlpha)
        }
    }

    /// The smallest of the candidates at the same target, and of the lossless ones for a picture of few colours.
    func encodeBest(_ image: Image, accepted: Set<ImageFormat>) throws(CodecError) -> EncodedImage {
        let target: Double =
            switch quality {
            case .perceptual(let target): target
            case .fixed: Quality.defaultTarget
            }
        var best: EncodedImage?
        func keep(_ candidate: EncodedImage) {
            if best == nil || candidate.bytes.count < best!.bytes.count { best = candidate }
        }
        for format in Self.bestCandidates(for: image, accepted: accepted, coders: options.coders) {
            let found = try Self.perceptualEncoding(
                of: image, as: format, options: options(for: format), target: target)
            keep(EncodedImage(bytes: found.bytes, format: format, quality: found.quality))
        }
        if Self.hasFewColors(image.frames[0].pixels) {
            var lossless = options
            lossless.isLossless = true
            lossless.pngPaletteQuality = nil
            for format in [ImageFormat.webp, .png]
            where accepted.contains(format) && options.coders.encoder(for: format) != nil {
                keep(EncodedImage(bytes: try ImageEncoder.encode(image, as: format, options: lossless), format: format))
            }
        }
        guard let best else {
            // Nothing lossy accepted: what the source rule writes.
            var source = ImageOutput(.source(accepted: accepted), options: options)
            source.maxBytes = maxBytes
            return try source.encode(image)
        }
        if let maxBytes, best.bytes.count > maxBytes, let quality = best.quality {
            // Over the limit: the highest quality of the format kept that fits, as for a fixed format.
            var fitted = ImageOutput(.format(best.format), options: options(for: best.format))
            fitted.options.quality = quality
            fitted.maxBytes = maxBytes
            return try fitted.encode(image)
        }
        return best
    }

    /// Whether `pixels` hold at most 256 distinct colours (alpha included): a logo, a screenshot, a diagram, which
    /// lossless formats often store in fewer bytes than lossy ones.
    static func hasFewColors(_ pixels: PixelBuffer) -> Bool {
        guard let rgba = try? pixels.converted(to: .rgba8) else { return false }
        var colors = Set<UInt32>()
        return rgba.withUnsafeBytes { bytes in
            for y in 0..<rgba.height {
                let row = y * rgba.bytesPerRow
                for x in 0..<rgba.width {
                    let offset = row + 4 * x
                    let color =
                        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
                        | UInt32(bytes[offset + 3])
                    if colors.insert(color).inserted, colors.count > 256 { return false }
                }
            }
            return true
        }
    }
}

/// The search for the lowest quality that reaches a score, as a value: which quality to try next from the scores seen
/// so far. Kept apart from the encoder so that its steps can be tested on any curve.
struct PerceptualSearch {
    let target: Double
    /// The most encodes a search makes.
    static let attempts = 6
    /// The scores seen, by quality.
    private(set) var scores: [Int: Double] = [:]
    /// The highest quality known to score under the target (0: none yet), and the lowest known to reach it (101:
    /// none yet).
    private(set) var failing = 0
    private(set) var passing = 101
    /// What to try next; `nil` when the search is over.
    private(set) var next: Int?

    init(target: Double, start: Int) {
        self.target = target
        next = min(max(start, 1), 100)
    }

    /// The quality the search settled on: the lowest that reached the target, else the best scoring one tried.
    var chosen: Int {
        if passing <= 100 { return passing }
        return scores.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }!.key
    }

    /// Where a search for `target` starts on `format`: the quality that format needed, on the corpus photos at
    /// 1024 px, to reach the target (the medians at scores 70, 80 and 85, docs/benchmarks.md; a line through the
    /// nearest two between and beyond them).
    static func start(for format: ImageFormat, target: Double) -> Int {
        let medians: (Double, Double, Double) =
            switch format {
            case .jpeg: (66.5, 83.2, 88.5)
            case .webp: (70.4, 85.0, 90.2)
            case .avif: (59.9, 76.4, 85.2)
            case .jxl: (37.2, 68.2, 77.4)
            default: (70, 85, 90)
            }
        let estimate =
            target < 80
            ? medians.0 + (target - 70) * (medians.1 - medians.0) / 10
            : medians.1 + (target - 80) * (medians.2 - medians.1) / 5
        return Int(estimate.rounded())
    }

    /// Records the score of `quality` and chooses what to try next.
    mutating func record(_ quality: Int, score: Double) {
        scores[quality] = score
        if score >= target { passing = min(passing, quality) } else { failing = max(failing, quality) }
        next = nil
        // Done when the boundary is found (or one untried quality from it: the passing one is kept, at most a step
        // too high), when the target is out of reach at 100, or when every attempt is spent.
        if passing - failing <= 2 || failing == 100 || scores.count >= Self.attempts { return }
        // Close enough after four encodes: within four steps of quality.
        if scores.count >= 4, passing <= 100, passing - failing <= 4 { return }
        guard var guess = guess() else { return }
        if scores[guess] != nil {
            guess = (failing + min(passing, 101)) / 2
            if scores[guess] != nil || guess < 1 || guess > 100 { return }
        }
        next = guess
    }

    /// The next quality to try. Between a failing and a passing quality: where the line through their scores
    /// crosses the target. With passing qualities only: a step below where the slope of the two lowest (or a usual
    /// slope, half a point of score per step of quality) puts the target, so that the next is likely to fail just
    /// under it and close the bracket; with failing ones only, a step above, likewise.
    private func guess() -> Int? {
        let points = scores.sorted { $0.key < $1.key }
        func slope(_ side: ArraySlice<(key: Int, value: Double)>) -> Double {
            guard side.count == 2, let first = side.first, let last = side.last else { return 0.5 }
            let slope = (last.value - first.value) / Double(last.key - first.key)
            return slope > 0.2 ? slope : 0.5
        }
        if failing >= 1, passing <= 100, let low = scores[failing], let high = scores[passing] {
            let estimate =
                high - low > 0.05
                ? Double(failing) + (target - low) * Double(passing - failing) / (high - low)
                : Double(failing + passing) / 2
            // (Less a hair, so that 75.000000001 from rounding errors is 75.)
            return min(max(Int((estimate - 1e-6).rounded(.up)), failing + 1), passing - 1)
        }
        if passing <= 100, let score = scores[passing] {
            let estimate = Double(passing) - (score - target) / slope(points.filter { $0.value >= target }.prefix(2))
            return max(min(Int(estimate.rounded(.down)) - 1, passing - 2), 1)
        }
        guard let score = scores[failing] else { return nil }
        let estimate = Double(failing) + (target - score) / slope(points.filter { $0.value < target }.suffix(2))
        return min(max(Int(estimate.rounded(.up)) + 1, failing + 2), 100)
    }
}
