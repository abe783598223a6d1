public import OspreyCodecs

extension ImageProcessors {
    /// Scales an image to a target size: the proxy's `w`, `h` and `fit`, the CLI's `--resize` and
    /// `--fit`.
    ///
    /// - `inside` fits the image within the box, keeping its aspect ratio (CSS `object-fit: contain`);
    /// - `cover` fills the box, keeping the aspect ratio, and crops what overflows around ``anchor``
    ///   (`object-fit: cover`);
    /// - `fill` stretches the image to exactly the box (`object-fit: fill`).
    ///
    /// With only a width or only a height the other follows the aspect ratio, whatever the fit. Without ``upscale``
    /// an image is never enlarged: `inside` leaves a smaller image as it is, `fill` keeps each side at most the
    /// source's, and `cover` keeps the box's aspect ratio at the source's scale (a smaller crop, not a blurrier one).
    ///
    /// Resampling is separable with ``ResamplingFilter/lanczos3`` by default, in gamma space with premultiplied alpha
    /// (see ``ResamplingFilter``). A large reduction first averages blocks of whole pixels (``reducingGap``), as
    /// libvips' `resize` and Pillow's `thumbnail` do by default.
    public struct Resize: ImageProcessing, Hashable {
        /// How the image meets the box.
        public enum Fit: String, Sendable, Hashable, CaseIterable {
            case inside, cover, fill
        }

        /// The box's width in pixels; `nil` to follow the height.
        public var width: Int?
        /// The box's height in pixels; `nil` to follow the width.
        public var height: Int?
        /// `.inside` by default.
        public var fit: Fit
        /// Which part `cover` keeps: `.center` by default.
        public var anchor: Anchor
        /// `.lanczos3` by default.
        public var filter: ResamplingFilter
        /// Whether a smaller image may be enlarged: `false` by default.
        public var upscale: Bool
        /// When an axis shrinks by `k × reducingGap` or more (k ≥ 2), blocks of `k` pixels are first averaged
        /// (premultiplied), leaving the filter at least `reducingGap` times the output to work on: a 4000-pixel
        /// photo made 256 wide reads 571 columns through the filter instead of 4000, for a difference invisible at
        /// gaps of 2 and more. `nil` filters every source pixel. 2 by default (libvips' and Pillow's thumbnail
        /// default).
        public var reducingGap: Double?

        /// Makes a resize into a `width` × `height` box (one side alone keeps the aspect ratio) fitted as `fit` says.
        public init(
            width: Int? = nil, height: Int? = nil, fit: Fit = .inside, anchor: Anchor = .center,
            filter: ResamplingFilter = .lanczos3, upscale: Bool = false, reducingGap: Double? = 2
        ) {
            self.width = width
            self.height = height
            self.fit = fit
            self.anchor = anchor
            self.filter = filter
            self.upscale = upscale
            self.reducingGap = reducingGap.map { max($0, 1) }
        }

        public var identifier: String {
            let size = "\(width.map(String.init) ?? "auto")x\(height.map(String.init) ?? "auto")"
            let gap = reducingGap.map { "\($0)" } ?? "none"
            return "resize(\(size),fit=\(fit.rawValue),anchor=\(anchor),filter=\(filter.rawValue),upscale=\(upscale),"
                + "gap=\(gap))"
        }

        /// The longest side an output may have: 10,000,000 pixels, libvips' limit. Above it (an upscale to an absurd
        /// size), ``process(_:)`` throws before it computes any weight or allocates any row.
        public static let maximumSide = 10_000_000

        public func process(_ image: Image) throws -> Image {
            let (w, h) = image.uprightSize
            guard let plan = try plan(sourceWidth: w, sourceHeight: h) else { return image }
            guard plan.width <= Self.maximumSide, plan.height <= Self.maximumSide else {
                throw ImageProcessingError(
                    processor: identifier,
                    reason: "the output would be \(plan.width)x\(plan.height), over \(Self.maximumSide) pixels a side")
            }
            let (factorX, factorY) = reductionFactors(plan)
            let reduces = factorX > 1 || factorY > 1
            // After a reduction the filter works on the reduced buffer: its size and the rectangle scaled to it.
            let (fx, fy) = (Double(factorX), Double(factorY))
            let resampler = Resampler(
                filter: filter, sourceWidth: PixelBuffer.reduced(w, by: factorX),
                sourceHeight: PixelBuffer.reduced(h, by: factorY),
                rect: PixelRect(
                    x: plan.rect.x / fx, y: plan.rect.y / fy, width: plan.rect.width / fx, height: plan.rect.height / fy
                ),
                width: plan.width, height: plan.height)
            return try image.mappingFrames { pixels in
                try resampler.resample(reduces ? try pixels.reduced(byX: factorX, y: factorY) : pixels)
            }
        }

        /// The whole factors a plan first averages by on each axis (1: none), per ``reducingGap``; at most 255,
        /// which keeps the block sums within 32 bits.
        func reductionFactors(_ plan: (rect: PixelRect, width: Int, height: Int)) -> (Int, Int) {
            guard let reducingGap, !reducingGap.isNaN else { return (1, 1) }
            func factor(_ span: Double, _ output: Int) -> Int {
                min(max(Int(saturating: span / Double(output) / reducingGap), 1), 255)
            }
            return (factor(plan.rect.width, plan.width), factor(plan.rect.height, plan.height))
        }

        /// What resizing a `sourceWidth` × `sourceHeight` image does: the source rectangle sampled and the output
        /// size; `nil` when the image stays as it is.
        ///
        /// - Throws: ``ImageProcessingError`` when neither side is given, or a side of the box or of the source is not
        ///   positive (an empty source has no scale that would not enlarge it).
        public func plan(sourceWidth w: Int, sourceHeight h: Int) throws -> (rect: PixelRect, width: Int, height: Int)?
        {
            guard width != nil || height != nil else {
                throw ImageProcessingError(processor: identifier, reason: "give a width, a height or both")
            }
            guard (width ?? 1) > 0, (height ?? 1) > 0 else {
                throw ImageProcessingError(processor: identifier, reason: "the width and height must be positive")
            }
            guard w > 0, h > 0 else {
                throw ImageProcessingError(processor: identifier, reason: "the source is empty (\(w)×\(h))")
            }
            let (sw, sh) = (Double(w), Double(h))
            let full = PixelRect(x: 0, y: 0, width: sw, height: sh)
            // Saturating: an upscale to an absurd size becomes a buffer too large to allocate (an error), not a trap.
            func rounded(_ value: Double) -> Int { value < Double(Int.max) ? max(Int(value.rounded()), 1) : .max }
            func unchanged(_ rect: PixelRect, _ ow: Int, _ oh: Int) -> (PixelRect, Int, Int)? {
                rect == full && ow == w && oh == h ? nil : (rect, ow, oh)
            }

            guard let boxWidth = width, let boxHeight = height else {
                // One side given: the other follows the aspect ratio.
                var scale = width.map { Double($0) / sw } ?? Double(height!) / sh
                if !upscale { scale = min(scale, 1) }
                return unchanged(full, rounded(sw * scale), rounded(sh * scale))
            }
            let (bw, bh) = (Double(boxWidth), Double(boxHeight))
            switch fit {
            case .inside:
                var scale = min(bw / sw, bh / sh)
                if !upscale { scale = min(scale, 1) }
                return unchanged(full, rounded(sw * scale), rounded(sh * scale))
            case .fill:
                return upscale
                    ? unchanged(full, boxWidth, boxHeight) : unchanged(full, min(boxWidth, w), min(boxHeight, h))
            case .cover:
                let scale = max(bw / sw, bh / sh)
                // Without upscaling, a box larger than the image shrinks to the source's scale, keeping its shape.
                let shrink = !upscale && scale > 1 ? scale : 1
                let (ow, oh) = (min(rounded(bw / shrink), boxWidth), min(rounded(bh / shrink), boxHeight))
                let effective = scale / shrink
                let (cw, ch) = (min(Double(ow) / effective, sw), min(Double(oh) / effective, sh))
                let (ax, ay) = anchor.clamped
                let rect = PixelRect(x: (sw - cw) * ax, y: (sh - ch) * ay, width: cw, height: ch)
                return unchanged(rect, ow, oh)
            }
        }
    }
}

extension ImageProcessing where Self == ImageProcessors.Resize {
    /// Scales to fit, cover or fill a box (see ``ImageProcessors/Resize``).
    public static func resize(
        width: Int? = nil, height: Int? = nil, fit: ImageProcessors.Resize.Fit = .inside, anchor: Anchor = .center,
        filter: ResamplingFilter = .lanczos3, upscale: Bool = false, reducingGap: Double? = 2
    ) -> Self {
        ImageProcessors.Resize(
            width: width, height: height, fit: fit, anchor: anchor, filter: filter, upscale: upscale,
            reducingGap: reducingGap)
    }
}
