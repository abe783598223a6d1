import FoundationEssentials
import Osprey
import OspreyCodecs

/// thumbor's crop-and-resize, its `Transformer` without `fit-in`: the source cropped to the box's aspect ratio (whole
/// pixels, around the alignment's or the focal rectangle's point, with thumbor's rounding), then resized to exactly
/// the box, enlarging (`no_upscale()` first shrinks the box to the source; `stretch()` crops nothing). thumbor's
/// arithmetic to the pixel, so that its URLs crop where thumbor crops; the resampling is Osprey's Lanczos-3. As the
/// first processor it is the decode-size hint too.
struct ThumborCrop: ImageProcessing, DecodingSizeHint {
    /// The box; 0 for a side that follows the aspect ratio.
    let width: Int
    let height: Int
    /// thumbor's `halign` and `valign` as fractions (left 0, center 0.5, right 1).
    let alignment: Anchor
    /// thumbor's `focal(LxT:RxB)`, in source pixels.
    let focal: (left: Int, top: Int, right: Int, bottom: Int)?
    let noUpscale: Bool
    let stretch: Bool

    var identifier: String {
        let focus = focal.map { ",focal=\($0.left)x\($0.top):\($0.right)x\($0.bottom)" } ?? ""
        return "thumborcrop(\(width)x\(height),align=\(alignment)\(focus)" + (noUpscale ? ",noupscale" : "")
            + (stretch ? ",stretch)" : ")")
    }

    /// Python's `round`: half to even.
    static func round(_ value: Double) -> Double { value.rounded(.toNearestOrEven) }

    /// The whole-pixel crop of a `sourceWidth` × `sourceHeight` source and the size it is resized to, as thumbor
    /// computes them.
    func plan(
        sourceWidth sw: Int, sourceHeight sh: Int
    ) -> (crop: (x: Int, y: Int, width: Int, height: Int), width: Int, height: Int) {
        var (requestWidth, requestHeight) = (width, height)
        if noUpscale { (requestWidth, requestHeight) = (min(requestWidth, sw), min(requestHeight, sh)) }
        let (sourceWidth, sourceHeight) = (Double(sw), Double(sh))
        // Target dimensions: a side not given follows the source's aspect ratio, rounded as Python rounds.
        var targetWidth = Double(requestWidth)
        var targetHeight = Double(requestHeight)
        if requestWidth == 0, requestHeight == 0 {
            (targetWidth, targetHeight) = (sourceWidth, sourceHeight)
        } else if requestWidth == 0 {
            targetWidth = Self.round(Double(requestHeight) * sourceWidth / sourceHeight)
        } else if requestHeight == 0 {
            targetHeight = Self.round(Double(requestWidth) * sourceHeight / sourceWidth)
        }
        let full = (x: 0, y: 0, width: sw, height: sh)
        let size = (max(Int(targetWidth), 1), max(Int(targetHeight), 1))
        guard !stretch else { return (full, size.0, size.1) }
        let (safeWidth, safeHeight) = (targetWidth > 0 ? targetWidth : 1, targetHeight > 0 ? targetHeight : 1)
        let sourceRatio = (sourceWidth / sourceHeight * 100).rounded(.toNearestOrEven) / 100
        let targetRatio = (safeWidth / safeHeight * 100).rounded(.toNearestOrEven) / 100
        guard sourceRatio != targetRatio else { return (full, size.0, size.1) }
        // The centre of mass: the alignment's point, or the focal rectangle's centre, floored as thumbor floors.
        let (focusX, focusY): (Double, Double)
        if let focal, focal.right > focal.left, focal.bottom > focal.top {
            focusX = Double(focal.left + (focal.right - focal.left) / 2)
            focusY = Double(focal.top + (focal.bottom - focal.top) / 2)
        } else {
            let (x, y) = alignment.clamped
            (focusX, focusY) = ((sourceWidth * x).rounded(.towardZero), (sourceHeight * y).rounded(.towardZero))
        }
        let cropWidth: Int
        let cropHeight: Int
        if targetWidth / sourceWidth > targetHeight / sourceHeight {
            cropWidth = sw
            cropHeight = Int(Self.round(sourceWidth * targetHeight / safeWidth))
        } else {
            cropWidth = Int(Self.round((targetWidth * sourceHeight / safeHeight).rounded(.up)))
            cropHeight = sh
        }
        let left = Int(Self.round(min(max(focusX - Double(cropWidth) / 2, 0), Double(sw - cropWidth))))
        let top = Int(Self.round(min(max(focusY - Double(cropHeight) / 2, 0), Double(sh - cropHeight))))
        let crop = (x: left, y: top, width: min(left + cropWidth, sw) - left, height: min(top + cropHeight, sh) - top)
        return (crop, size.0, size.1)
    }

    func process(_ image: Image) throws -> Image {
        let turned = image.orientation.swapsDimensions
        let (w, h) = turned ? (image.height, image.width) : (image.width, image.height)
        let stored = image.storedSize.map { ($0.width, $0.height) } ?? (w, h)
        let plan = plan(sourceWidth: stored.0, sourceHeight: stored.1)
        // Planned at the stored size, sampled from what was decoded.
        let (fx, fy) = (Double(w) / Double(stored.0), Double(h) / Double(stored.1))
        let rect = PixelRect(
            x: Double(plan.crop.x) * fx, y: Double(plan.crop.y) * fy, width: Double(plan.crop.width) * fx,
            height: Double(plan.crop.height) * fy)
        guard plan.crop != (0, 0, stored.0, stored.1) || (plan.width, plan.height) != stored || stored != (w, h) else {
            return image
        }
        return try ImageProcessors.Resize(width: plan.width, height: plan.height, fit: .fill, upscale: true)
            .resampled(image, rect: rect, width: plan.width, height: plan.height)
    }

    /// The size the decoder may scale to and still cover the output (JPEG's DCT scaling, WebP's): the crop's scale.
    func decodingSize(for header: ImageHeader) throws -> ImageSize? {
        let source = header.displaySize
        let plan = plan(sourceWidth: source.width, sourceHeight: source.height)
        // Twice the output's scale, as Pillow's and libvips' thumbnails decode (thumbor decodes at full size): the
        // resize then has the detail a full decode would give it.
        let scale =
            2 * max(Double(plan.width) / Double(plan.crop.width), Double(plan.height) / Double(plan.crop.height))
        guard scale < 1 else { return nil }
        return ImageSize(
            width: Int((Double(source.width) * scale).rounded(.up)),
            height: Int((Double(source.height) * scale).rounded(.up)))
    }
}

/// thumbor's `upscale()` filter after `fit-in`: an image smaller than the box on both sides is enlarged to fit it,
/// its sides truncated as thumbor truncates them.
struct ThumborUpscale: ImageProcessing {
    let width: Int
    let height: Int

    var identifier: String { "thumborupscale(\(width)x\(height))" }

    func process(_ image: Image) throws -> Image {
        let turned = image.orientation.swapsDimensions
        let (w, h) = turned ? (image.height, image.width) : (image.width, image.height)
        guard width > 0, height > 0, w < width, h < height else { return image }
        let (newWidth, newHeight) =
            Double(w) / Double(width) >= Double(h) / Double(height)
            ? (width, h * width / w) : (w * height / h, height)
        return try ImageProcessors.Resize(width: newWidth, height: newHeight, fit: .fill, upscale: true)
            .resampled(
                image, rect: PixelRect(x: 0, y: 0, width: Double(w), height: Double(h)),
                width: max(newWidth, 1), height: max(newHeight, 1))
    }
}
