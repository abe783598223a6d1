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
        /// photos fit inside 1024 px it takes 0.92× the bytes imgproxy's default (WebP at quality 79) takes, and its
        /// worst photo scores 70.4 where that default's worst scores 59.3 (docs/benchmarks.md); aiming at that
        /// default's median score instead (75.7) takes 1.13× its bytes.
        public static let defaultTarget = 70.0

        /// Perceptual at ``defaultTarget``.
        public static var perceptual: Quality { .perceptual(target: defaultTarget) }
    }

    /// The lowest quality of `format` whose encoding of `image` scores at least `target` (or one scoring at most
    /// ``PerceptualSearch/closeEnough`` above it), and its bytes; the highest quality tried when none does (100 at
    /// most). For WebP, AVIF and JPEG XL a probe first encodes at the quality that format usually needs for the target
    /// with the fastest effort (a quarter to a third of the time), whose score says where the search starts; then the
    /// search interpolates between the scores it measured: two or three encodes for most photos, six at most.
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
        func score(_ options: EncodingOptions) throws(CodecError) -> (bytes: [UInt8], score: Double) {
            let bytes = try ImageEncoder.encode(image, as: format, options: options)
            let decoded = try ImageDecoder.decode(bytes, options: decoding)
            return (bytes, (try? reference.ssimulacra2(decoded.frames[0].pixels)) ?? -.infinity)
        }
        var tried: [Int: (bytes: [UInt8], score: Double)] = [:]
        func attempt(_ quality: Int) throws(CodecError) -> Double {
            var options = options
            options.quality = quality
            tried[quality] = try score(options)
            return tried[quality]!.score
        }
        let start = PerceptualSearch.start(for: format, target: target)
        var probe = options
        probe.quality = start
        probe.setEffort(1)
        // (No probe where the encoder is already at its fastest, or has no effort: JPEG's encodes are cheap.)
        let probed =
            switch format {
            case .webp: probe.webpMethod != options.webpMethod
            case .avif: probe.avifSpeed != options.avifSpeed
            case .jxl: probe.jxlEffort != options.jxlEffort
            default: false
            }
        var search = PerceptualSearch(target: target, start: start, probe: probed ? try score(probe).score : nil)
        while let quality = search.next {
            search.record(quality, score: try attempt(quality))
            // A cancelled load keeps what it has (its caller is gone; the bytes are not stored).
            if Task.isCancelled { break }
        }
        let chosen = search.chosen
        return PerceptualEncoding(
            bytes: tried[chosen]!.bytes, quality: chosen, score: tried[chosen]!.score,
            encodes: tried.count + (probed ? 1 : 0))
    }
}

/// What a perceptual search found: the bytes, their quality and score, and how many encodes it took (the probe
/// included).
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
///
/// Its constants come from every quality of WebP on the 15 corpus photos fit inside 1024 px (docs/benchmarks.md):
/// below the target a score rises about a point per step of quality, above it a third of a point; stopping at a
/// passing score within 2.5 points of the target, and stepping one quality past each estimate, sends 1–2% more bytes
/// than the lowest passing quality of each photo at targets 70 and 76, in half the encodes of a search that closes in
/// on that quality exactly.
struct PerceptualSearch {
    let target: Double
    /// The most encodes a search makes (a probe aside).
    static let attempts = 6
    /// A passing score this close to the target ends the search.
    static let closeEnough = 2.5
    /// How much a score usually changes per step of quality, below the target and above it (above it, the slope to
    /// the nearest other score seen, the probe's included, is taken instead when there is one: a probe far under the
    /// target sends the first encode far above it, where scores rise several times faster).
    static let slopeBelow = 1.0
    static let slopeAbove = 0.35
    /// The steps of quality added to each estimate, so that it likely passes.
    static let margin = 1
    /// The scores seen, by quality.
    private(set) var scores: [Int: Double] = [:]
    /// The highest quality known to score under the target (0: none yet), and the lowest known to reach it (101:
    /// none yet).
    private(set) var failing = 0
    private(set) var passing = 101
    /// What to try next; `nil` when the search is over.
    private(set) var next: Int?
    /// The probe's quality and score, when there was one: a hint for slopes, never chosen.
    private let probe: (quality: Int, score: Double)?

    /// A search from `start`, or from where the score of a probe at `start` (a faster encode of that quality) puts the
    /// target.
    init(target: Double, start: Int, probe: Double? = nil) {
        self.target = target
        self.probe = probe.map { (start, $0) }
        let first = probe.map { Self.estimate(target: target, from: start, score: $0, slope: nil) } ?? start
        next = min(max(first, 1), 100)
    }

    /// Where the line from `score` at `quality` crosses `target`, at `slope` (the usual slope on that side of the
    /// target when `nil`), a margin's steps up: rounded up when climbing to the target, down when descending.
    private static func estimate(target: Double, from quality: Int, score: Double, slope: Double?) -> Int {
        let crossing = Double(quality) + (target - score) / (slope ?? (score < target ? slopeBelow : slopeAbove))
        return Int(score < target ? crossing.rounded(.up) : crossing.rounded(.down)) + margin
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
        // Close enough: a passing score just above the target, or after four encodes within four steps of quality.
        if passing <= 100, scores[passing]! - target <= Self.closeEnough { return }
        if scores.count >= 4, passing <= 100, passing - failing <= 4 { return }
        guard var guess = guess() else { return }
        if scores[guess] != nil {
            guess = (failing + min(passing, 101)) / 2
            if scores[guess] != nil || guess < 1 || guess > 100 { return }
        }
        next = guess
    }

    /// The next quality to try. Between a failing and a passing quality: where the line through their scores
    /// crosses the target. With passing qualities only: where the usual slope above the target puts it, a step up;
    /// with failing ones only, likewise with the slope below it.
    private func guess() -> Int? {
        if failing >= 1, passing <= 100, let low = scores[failing], let high = scores[passing] {
            let estimate =
                high - low > 0.05
                ? Double(failing) + (target - low) * Double(passing - failing) / (high - low)
                : Double(failing + passing) / 2
            // (Less a hair, so that 75.000000001 from rounding errors is 75.)
            return min(max(Int((estimate - 1e-6).rounded(.up)), failing + 1), passing - 1)
        }
        if passing <= 100, let score = scores[passing] {
            let estimate = Self.estimate(target: target, from: passing, score: score, slope: measuredSlope(at: passing))
            return max(min(estimate, passing - 1), 1)
        }
        guard let score = scores[failing] else { return nil }
        return min(max(Self.estimate(target: target, from: failing, score: score, slope: nil), failing + 1), 100)
    }

    /// The slope from `quality`'s score to the nearest other score seen (the probe's included), when it rises by more
    /// than 0.2 a step (flatter says nothing reliable).
    private func measuredSlope(at quality: Int) -> Double? {
        guard let score = scores[quality] else { return nil }
        let others =
            scores.filter { $0.key != quality }.map { (quality: $0.key, score: $0.value) }
            + (probe.map { $0.quality != quality ? [$0] : [] } ?? [])
        guard let nearest = others.min(by: { abs($0.quality - quality) < abs($1.quality - quality) }) else {
            return nil
        }
        let slope = (score - nearest.score) / Double(quality - nearest.quality)
        return slope > 0.2 ? slope : nil
    }
}
