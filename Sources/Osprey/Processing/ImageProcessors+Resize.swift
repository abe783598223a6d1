public import OspreyCodecs

extension ImageProcessors {
    /// Scales an image to a target size: the proxy's `w`, `h` and `fit` (and imgproxy's and thumbor's resizing
    /// options), the CLI's `--resize` and `--fit`.
    ///
    /// - `inside` fits the image within the box, keeping its aspect ratio (CSS `object-fit: contain`; imgproxy's
    ///   `fit`, thumbor's `fit-in`);
    /// - `cover` fills the box, keeping the aspect ratio, and crops what overflows around ``anchor``
    ///   (`object-fit: cover`; imgproxy's `fill-down`, and `fill` when enlarging);
    /// - `clip` is `cover` whose smaller source keeps its own length on each side it is short of the box (imgproxy's
    ///   `fill` without `enlarge`); with ``upscale`` it is `cover`;
    /// - `fill` stretches the image to exactly the box (`object-fit: fill`; imgproxy's `force`);
    /// - `outside` covers the box keeping the aspect ratio, cropping nothing (thumbor's `full-fit-in`);
    /// - `auto` is `clip` when the image and the box are both landscape or both portrait, `inside` otherwise
    ///   (imgproxy's `auto`).
    ///
    /// With only a width or only a height the other follows the aspect ratio, whatever the fit. Without ``upscale``
    /// an image is never enlarged: `inside` leaves a smaller image as it is, `fill` keeps each side at most the
    /// source's, and `cover` keeps the box's aspect ratio at the source's scale (a smaller crop, not a blurrier one).
    /// ``zoomX`` and ``zoomY`` multiply the scale the box gives, and ``minWidth`` and ``minHeight`` raise it until the
    /// result is at least that large (both as imgproxy's `zoom`, `min-width` and `min-height`, which may enlarge).
    ///
    /// Resampling is separable with ``ResamplingFilter/lanczos3`` by default, in gamma space with premultiplied alpha
    /// (see ``ResamplingFilter``). A large reduction first averages blocks of whole pixels (``reducingGap``), as
    /// libvips' `resize` and Pillow's `thumbnail` do by default.
    public struct Resize: ImageProcessing, Hashable {
        /// How the image meets the box.
        public enum Fit: String, Sendable, Hashable, CaseIterable {
            case inside, cover, clip, fill, outside, auto
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
        /// The least width of the result: the scale is raised (enlarging if need be) until it is reached. `nil` by
        /// default.
        public var minWidth: Int?
        /// The least height of the result, as ``minWidth``. `nil` by default.
        public var minHeight: Int?
        /// Multiplies the horizontal scale the box gives (more than 1 enlarges past the box). 1 by default.
        public var zoomX: Double
        /// Multiplies the vertical scale the box gives. 1 by default.
        public var zoomY: Double
        /// Moves a `cover` crop from where ``anchor`` puts it, away from the edge it is anchored to (to the right and
        /// down from the centre): pixels of the result when 1 or more (or -1 or less), a fraction of the scaled
        /// image's width otherwise, as imgproxy's gravity offsets. 0 by default.
        public var offsetX: Double
        /// Moves a `cover` crop vertically, as ``offsetX``. 0 by default.
        public var offsetY: Double

        /// Makes a resize into a `width` × `height` box (one side alone keeps the aspect ratio) fitted as `fit` says.
        public init(
            width: Int? = nil, height: Int? = nil, fit: Fit = .inside, anchor: Anchor = .center,
            filter: ResamplingFilter = .lanczos3, upscale: Bool = false, reducingGap: Double? = 2,
            minWidth: Int? = nil, minHeight: Int? = nil, zoomX: Double = 1, zoomY: Double = 1, offsetX: Double = 0,
            offsetY: Double = 0
        ) {
            self.width = width
            self.height = height
            self.fit = fit
            self.anchor = anchor
            self.filter = filter
            self.upscale = upscale
            self.reducingGap = reducingGap.map { max($0, 1) }
            self.minWidth = minWidth
            self.minHeight = minHeight
            // A zoom that is not a positive finite number zooms nothing.
            self.zoomX = zoomX.isFinite && zoomX > 0 ? zoomX : 1
            self.zoomY = zoomY.isFinite && zoomY > 0 ? zoomY : 1
            self.offsetX = offsetX.isFinite ? offsetX : 0
            self.offsetY = offsetY.isFinite ? offsetY : 0
        }

        /// Names every parameter; those added after the first release only when they differ from their defaults, so
        /// the cache keys of resizes without them stay what they were.
        public var identifier: String {
            let size = "\(width.map(String.init) ?? "auto")x\(height.map(String.init) ?? "auto")"
            let gap = reducingGap.map { "\($0)" } ?? "none"
            var text =
                "resize(\(size),fit=\(fit.rawValue),anchor=\(anchor),filter=\(filter.rawValue),upscale=\(upscale),"
                + "gap=\(gap)"
            if minWidth != nil || minHeight != nil {
                text += ",min=\(minWidth.map(String.init) ?? "auto")x\(minHeight.map(String.init) ?? "auto")"
            }
            if zoomX != 1 || zoomY != 1 { text += ",zoom=\(zoomX):\(zoomY)" }
            if offsetX != 0 || offsetY != 0 { text += ",offset=\(offsetX):\(offsetY)" }
            return text + ")"
        }

        /// The longest side an output may have: 10,000,000 pixels, libvips' limit. Above it (an upscale to an absurd
        /// size), ``process(_:)`` throws before it computes any weight or allocates any row.
        public static let maximumSide = 10_000_000

        /// Resizes `image`. One decoded smaller than stored (a DCT-scaled JPEG, `Image.storedSize`) is planned at
        /// its stored size, so that the result has the size a full decode would give, and sampled from the rectangle
        /// that plan names, scaled to the pixels decoded.
        public func process(_ image: Image) throws -> Image {
            let (w, h) = image.uprightSize
            let stored = image.storedSize.map { ($0.width, $0.height) } ?? (w, h)
            guard var plan = try plan(sourceWidth: stored.0, sourceHeight: stored.1) else { return image }
            if stored != (w, h) {
                let (fx, fy) = (Double(w) / Double(stored.0), Double(h) / Double(stored.1))
                plan.rect = PixelRect(
                    x: plan.rect.x * fx, y: plan.rect.y * fy, width: plan.rect.width * fx, height: plan.rect.height * fy
                )
            }
            return try resampled(image, rect: plan.rect, width: plan.width, height: plan.height)
        }

        /// The `rect` of `image` (upright pixels) resampled to `width` × `height` with this resize's filter and
        /// reducing gap.
        ///
        /// - Throws: ``ImageProcessingError`` for an output over ``maximumSide`` pixels a side.
        package func resampled(_ image: Image, rect: PixelRect, width: Int, height: Int) throws -> Image {
            let (w, h) = image.uprightSize
            guard width <= Self.maximumSide, height <= Self.maximumSide else {
                throw ImageProcessingError(
                    processor: identifier,
                    reason: "the output would be \(width)x\(height), over \(Self.maximumSide) pixels a side")
            }
            let plan = (rect: rect, width: width, height: height)
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

    }
}

extension ImageProcessing where Self == ImageProcessors.Resize {
    /// Scales to fit, cover or fill a box (see ``ImageProcessors/Resize``).
    public static func resize(
        width: Int? = nil, height: Int? = nil, fit: ImageProcessors.Resize.Fit = .inside, anchor: Anchor = .center,
        filter: ResamplingFilter = .lanczos3, upscale: Bool = false, reducingGap: Double? = 2, minWidth: Int? = nil,
        minHeight: Int? = nil, zoomX: Double = 1, zoomY: Double = 1
    ) -> Self {
        ImageProcessors.Resize(
            width: width, height: height, fit: fit, anchor: anchor, filter: filter, upscale: upscale,
            reducingGap: reducingGap, minWidth: minWidth, minHeight: minHeight, zoomX: zoomX, zoomY: zoomY)
    }
}
