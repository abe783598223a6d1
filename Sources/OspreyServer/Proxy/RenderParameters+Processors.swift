import FoundationEssentials
import Osprey
import OspreyCodecs

// From parameters to the pipeline: the processors, the decode-size hint, and the canonical `/img` spelling.
extension RenderParameters {
    /// The processors the source goes through, in order (imgproxy's pipeline order, whatever style asked): the
    /// `trim`; the `crop` region; the resize to `w`×`h` (a downsample, decoded scaled where the format allows,
    /// unless something comes before it; turned sides swapped, so that `w` and `h` are the result's), its cover window
    /// placed by `gravity`, around `fp` or a focal rectangle, or by the picture's interest (`gravity=smart`); the
    /// proportion; the turn and the flip; the adjustments, gray, blur, sharpening and pixelation; the `extend`,
    /// aspect-ratio and letterbox canvases; the corners or circle; the padding; the watermark.
    func processors(
        watermark mark: WatermarkImage? = nil, fetchedMark: ThumborWatermark? = nil
    )
        -> [any ImageProcessing]
    {
        var processors: [any ImageProcessing] = []
        if let trim { processors.append(trim) }
        if let crop { processors.append(ImageProcessors.Crop(crop.region)) }
        if let thumborCrop {
            processors.append(thumborCrop)
        } else if let resize = resizeProcessor(decodedFirst: processors.isEmpty) {
            processors.append(resize)
        }
        if let thumborUpscale { processors.append(thumborUpscale) }
        if let proportion { processors.append(ProportionalScale(factor: proportion)) }
        if quarterTurns != 0 { processors.append(ImageProcessors.Rotate(quarterTurns: quarterTurns)) }
        if flipsHorizontally || flipsVertically {
            processors.append(ImageProcessors.Flip(horizontally: flipsHorizontally, vertically: flipsVertically))
        }
        processors += adjustments.map { $0 as any ImageProcessing }
        if grayscale { processors.append(ImageProcessors.Grayscale()) }
        if let blur { processors.append(ImageProcessors.Blur(radius: blur)) }
        if let sharpen { processors.append(ImageProcessors.Sharpen(sigma: sharpen, amount: sharpenAmount)) }
        if let pixelate { processors.append(ImageProcessors.Pixelate(size: pixelate)) }
        let canvas = background ?? .clear
        if extends {
            let (width, height) = (width ?? 0, height ?? 0)
            let placement = extendPlacement ?? Placement(anchor: gravity ?? .center)
            processors.append(
                ImageProcessors.Extend(
                    width: width, height: height, anchor: placement.anchor, color: canvas,
                    offsetX: placement.offsetX, offsetY: placement.offsetY))
        }
        if extendsAspectRatio, let width, let height {
            let placement = extendAspectRatioPlacement
            processors.append(
                ImageProcessors.ExtendToAspectRatio(
                    width: width, height: height, anchor: placement.anchor, color: canvas,
                    offsetX: placement.offsetX, offsetY: placement.offsetY))
        }
        if let letterbox {
            processors.append(
                ImageProcessors.Letterbox(
                    width: width ?? 0, height: height ?? 0, fill: letterbox,
                    fillsTransparency: letterboxFillsTransparency))
        }
        if let flattenColor {
            processors.append(
                ImageProcessors.Letterbox(width: 0, height: 0, fill: .color(flattenColor), fillsTransparency: true))
        }
        if let corners { processors.append(corners) }
        if circle { processors.append(ImageProcessors.Circle()) }
        if let padding {
            processors.append(
                ImageProcessors.Pad(
                    top: padding.top, right: padding.right, bottom: padding.bottom, left: padding.left, color: canvas))
        }
        if let watermark, let mark {
            processors.append(
                ImageProcessors.Watermark(
                    mark: mark.image, name: mark.name, opacity: watermark.opacity, anchor: watermark.anchor,
                    offsetX: watermark.x, offsetY: watermark.y, scale: watermark.scale, tiled: watermark.tiled))
        }
        if let fetchedMark { processors.append(fetchedMark) }
        return processors
    }

    /// The resize `w`, `h` and the fit ask for (a downsample when it is the first processor, so that the decoder
    /// scales), or `nil` when no size is asked.
    private func resizeProcessor(decodedFirst: Bool) -> (any ImageProcessing)? {
        guard width != nil || height != nil || minWidth != nil || minHeight != nil || zoomX != 1 || zoomY != 1 else {
            return nil
        }
        let turned = quarterTurns % 2 == 1
        let (resizeWidth, resizeHeight) = turned ? (height, width) : (width, height)
        let (minimumWidth, minimumHeight) = turned ? (minHeight, minWidth) : (minWidth, minHeight)
        let (zoomWidth, zoomHeight) = turned ? (zoomY, zoomX) : (zoomX, zoomY)
        let fit = self.fit
        if let focalRect, let resizeWidth, let resizeHeight, fit == .cover {
            return FocalCover(width: resizeWidth, height: resizeHeight, focus: .pixels(focalRect), upscale: enlarges)
        }
        if let focus, let resizeWidth, let resizeHeight {
            return FocalCover(width: resizeWidth, height: resizeHeight, focus: .point(focus), upscale: enlarges)
        }
        if smartGravity, let resizeWidth, let resizeHeight {
            return ImageProcessors.SmartCover(width: resizeWidth, height: resizeHeight)
        }
        let anchor = Self.unturned(
            gravity ?? .center, quarterTurns: quarterTurns, flipsHorizontally: flipsHorizontally,
            flipsVertically: flipsVertically)
        var resize = ImageProcessors.Resize(
            width: resizeWidth, height: resizeHeight, fit: fit, anchor: anchor, upscale: enlarges,
            minWidth: minimumWidth, minHeight: minimumHeight, zoomX: zoomWidth, zoomY: zoomHeight,
            offsetX: turned ? gravityOffsetY : gravityOffsetX, offsetY: turned ? gravityOffsetX : gravityOffsetY)
        // Neither side given (a zoom or a least size alone): the source's own size is the box.
        if resize.width == nil, resize.height == nil { resize.fit = .inside }
        if adaptive { return AdaptiveResize(resize: resize, downsamples: decodedFirst) }
        guard decodedFirst, resize.width != nil || resize.height != nil else { return resize }
        var downsample = ImageProcessors.Downsample(width: nil, height: nil)
        downsample.resize = resize
        return downsample
    }

    /// The decode-size hint when it is not the first processor's: a full-size decode when a trim or a crop of the
    /// source comes first (`.some(nil)`), the cover's downsample when a focal point or the picture's interest places
    /// it; `nil` otherwise.
    var decodingHint: (any DecodingSizeHint)?? {
        if crop != nil || trim != nil { return .some(nil) }
        // A thumbor crop first is its own hint.
        if thumborCrop != nil { return nil }
        guard focus != nil || focalRect != nil || smartGravity, width != nil || height != nil else { return nil }
        let (resizeWidth, resizeHeight) = quarterTurns % 2 == 1 ? (height, width) : (width, height)
        return .some(ImageProcessors.Downsample(width: resizeWidth, height: resizeHeight, fit: .cover))
    }

    /// `anchor`, given for the result, in the frame of the image before it was turned `quarterTurns` clockwise and
    /// flipped: where the resize's window must sit for the result's to sit at `anchor`.
    static func unturned(
        _ anchor: Anchor, quarterTurns: Int, flipsHorizontally: Bool, flipsVertically: Bool
    ) -> Anchor {
        var (x, y) = anchor.clamped
        if flipsHorizontally { x = 1 - x }
        if flipsVertically { y = 1 - y }
        switch quarterTurns {
        case 1: (x, y) = (y, 1 - x)
        case 2: (x, y) = (1 - x, 1 - y)
        case 3: (x, y) = (1 - y, x)
        default: break
        }
        return Anchor(x: x, y: y)
    }

    /// `anchor`, given in the image before it is turned `quarterTurns` clockwise and flipped, in the result's frame:
    /// the inverse of ``unturned(_:quarterTurns:flipsHorizontally:flipsVertically:)``.
    static func turned(
        _ anchor: Anchor, quarterTurns: Int, flipsHorizontally: Bool, flipsVertically: Bool
    ) -> Anchor {
        var (x, y) = anchor.clamped
        for _ in 0..<(quarterTurns % 4 + 4) % 4 { (x, y) = (1 - y, x) }
        if flipsHorizontally { x = 1 - x }
        if flipsVertically { y = 1 - y }
        return Anchor(x: x, y: y)
    }

    /// Every `/img` parameter that shapes the output, in a fixed order and spelling, so equal renders have equal
    /// canonical forms (`exp` and `sig` shape nothing). `format=auto` is resolved by the caller before it becomes part
    /// of a key; the cache key itself is made from the processors.
    var canonical: String {
        var parts = ["fit=\(fit.rawValue)"]
        if let width { parts.append("w=\(width)") }
        if let height { parts.append("h=\(height)") }
        if enlarges { parts.append("enlarge=1") }
        if let minWidth { parts.append("mw=\(minWidth)") }
        if let minHeight { parts.append("mh=\(minHeight)") }
        if zoomX != 1 || zoomY != 1 { parts.append("zoom=\(zoomX):\(zoomY)") }
        parts.append("format=\(format?.name ?? "source")")
        parts.append(perceptualTarget.map { "q=auto:\($0.shortText)" } ?? "q=\(quality ?? Self.defaultQuality)")
        if let maxBytes { parts.append("mb=\(maxBytes)") }
        if let blur { parts.append("blur=\(blur)") }
        if let frame { parts.append("frame=\(frame)") }
        if let gravity {
            let offsets = gravityOffsetX != 0 || gravityOffsetY != 0 ? ":\(gravityOffsetX):\(gravityOffsetY)" : ""
            parts.append("gravity=" + Self.gravityName(gravity) + offsets)
        }
        if smartGravity { parts.append("gravity=smart") }
        if let focus { parts.append("fp=\(focus.x):\(focus.y)") }
        if case .rect(let x, let y, let w, let h) = crop { parts.append("crop=\(x):\(y):\(w):\(h)") }
        if let trim {
            let color = if case .color(let color) = trim.background { Self.hex(color) } else { "" }
            let sides = (trim.equalHorizontal ? "h" : "") + (trim.equalVertical ? "v" : "")
            parts.append("trim=\(trim.threshold):\(color):\(sides)")
        }
        if extends { parts.append("extend=1") }
        if extendsAspectRatio { parts.append("exar=1") }
        if let padding { parts.append("pad=\(padding.top):\(padding.right):\(padding.bottom):\(padding.left)") }
        if let background { parts.append("bg=\(Self.hex(background))") }
        if quarterTurns != 0 { parts.append("rot=\(quarterTurns * 90)") }
        if flipsHorizontally || flipsVertically {
            parts.append("flip=" + (flipsHorizontally ? "h" : "") + (flipsVertically ? "v" : ""))
        }
        if let sharpen { parts.append("sharpen=\(sharpen)") }
        if let pixelate { parts.append("pix=\(pixelate)") }
        for adjust in adjustments {
            if adjust.brightness != 0 { parts.append("brightness=\(adjust.brightness)") }
            if adjust.contrast != 1 { parts.append("contrast=\(adjust.contrast)") }
            if adjust.saturation != 1 { parts.append("saturation=\(adjust.saturation)") }
            if adjust.gamma != 1 { parts.append("gamma=\(adjust.gamma)") }
        }
        if grayscale { parts.append("grayscale=1") }
        if let corners {
            let vertical = corners.verticalRadius.map(String.init) ?? ""
            parts.append("round=\(corners.radius):\(vertical):" + (corners.color.map(Self.hex) ?? ""))
        }
        if circle { parts.append("circle=1") }
        if let watermark { parts.append("wm=" + watermark.canonical) }
        // Stripping, the default, adds nothing: keys made before metadata could be kept stay valid.
        switch metadata {
        case .strip: break
        case .copyright: parts.append("keep_copyright=1")
        case .all: parts.append("strip=0")
        }
        if raw { parts.append("raw=1") }
        if let filename { parts.append("filename=" + PercentEncoding.encodingAllButAlphanumerics(filename)) }
        if attachment { parts.append("attachment=1") }
        return parts.joined(separator: "&")
    }

    /// `RRGGBBAA`, as `bg=` takes it.
    static func hex(_ color: PixelColor) -> String {
        [color.red, color.green, color.blue, color.alpha].map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }
            .joined()
    }
}

/// The result scaled by `factor` after resizing (thumbor's `proportion(p)`, 0 < p ≤ 1).
struct ProportionalScale: ImageProcessing {
    let factor: Double

    var identifier: String { "proportion(\(factor))" }

    func process(_ image: Image) throws -> Image {
        let turned = image.orientation.swapsDimensions
        let (w, h) = turned ? (image.height, image.width) : (image.width, image.height)
        let (width, height) = (Double(w) * factor, Double(h) * factor)
        guard factor > 0, factor < 1, width >= 1, height >= 1 else { return image }
        return try ImageProcessors.Resize(
            width: Int(width.rounded()), height: Int(height.rounded()), fit: .fill
        ).process(image)
    }
}

/// A resize whose box turns to the source's orientation first (thumbor's `adaptive-fit-in`): a portrait source in a
/// landscape box fits a portrait box of the same sides, and the other way round. As a first processor it is a
/// decode-size hint too.
struct AdaptiveResize: ImageProcessing, DecodingSizeHint {
    let resize: ImageProcessors.Resize
    /// Whether it is the first processor, whose hint the decoder takes.
    let downsamples: Bool

    var identifier: String { "adaptive" + resize.identifier }

    /// The resize for a `width` × `height` source.
    func oriented(width: Int, height: Int) -> ImageProcessors.Resize {
        guard let boxWidth = resize.width, let boxHeight = resize.height else { return resize }
        let landscapeSource = width > height
        let landscapeBox = boxWidth > boxHeight
        guard width != height, boxWidth != boxHeight, landscapeSource != landscapeBox else { return resize }
        var turned = resize
        (turned.width, turned.height) = (boxHeight, boxWidth)
        return turned
    }

    func process(_ image: Image) throws -> Image {
        let turned = image.orientation.swapsDimensions
        return try oriented(width: turned ? image.height : image.width, height: turned ? image.width : image.height)
            .process(image)
    }

    func decodingSize(for header: ImageHeader) throws -> ImageSize? {
        guard downsamples else { return nil }
        let size = header.displaySize
        var downsample = ImageProcessors.Downsample(width: nil, height: nil)
        downsample.resize = oriented(width: size.width, height: size.height)
        return try downsample.decodingSize(for: header)
    }
}
