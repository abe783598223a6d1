import FoundationEssentials
import Osprey
import OspreyCodecs

/// thumbor's `watermark(url, x, y, alpha[, w_ratio, h_ratio])` with the mark already fetched: placed at `x` pixels
/// from the left (from the right when negative), `center`, `repeat`ed across, or `Np` percent of the image; `alpha`
/// 0 (opaque) to 100 (invisible); fitted within `w_ratio`% × `h_ratio`% of the image when given (thumbor's
/// `watermark.py`, its tiling capped at a 6 × 6 grid past 100 tiles as thumbor's is).
struct ThumborWatermark: ImageProcessing {
    /// The filter's arguments, before the mark is fetched.
    struct Source: Sendable, Equatable {
        let url: URL
        let x: String
        let y: String
        let alpha: Int
        let widthRatio: Int?
        let heightRatio: Int?

        var identifier: String {
            "thumborwatermark(\(url.absoluteString),\(x),\(y),\(alpha),\(widthRatio.map(String.init) ?? "none"),"
                + "\(heightRatio.map(String.init) ?? "none"))"
        }
    }

    let source: Source
    let mark: Image

    var identifier: String { source.identifier }

    func process(_ image: Image) throws -> Image {
        let (width, height) = image.uprightSize
        var markImage = try Image(pixels: mark.mappingFrames { $0 }.frames[0].pixels)
        var (markWidth, markHeight) = markImage.uprightSize
        if source.widthRatio != nil || source.heightRatio != nil {
            let size = Self.fittedSize(
                image: (width, height), mark: (markWidth, markHeight), widthRatio: source.widthRatio,
                heightRatio: source.heightRatio)
            markImage = try ImageProcessors.Resize(width: size.width, height: size.height, fit: .fill, upscale: true)
                .process(markImage)
            (markWidth, markHeight) = size
        }
        var pixels = try markImage.pixels.converted(to: .rgba8)
        // thumbor multiplies the mark's alpha by (100 - alpha) / 100.
        let opacity = (100 - source.alpha) * 256 / 100
        let xs = Self.positions(source.x, length: width, markLength: markWidth)
        let ys = Self.positions(source.y, length: height, markLength: markHeight)
        pixels = try pixels.converted(to: .rgba8)
        return try image.mappingFrames { frame in
            var output = try frame.converted(to: frame.format.hasAlpha ? .rgba8 : .rgb8)
            for y in ys {
                for x in xs where x < width && y < height {
                    output.blend(pixels, x: max(x, 0), y: max(y, 0), opacity: opacity)
                }
            }
            return output
        }
    }

    /// thumbor's `calc_watermark_size`: the mark fitted within the ratios of the image, keeping its aspect ratio.
    static func fittedSize(
        image: (width: Int, height: Int), mark: (width: Int, height: Int), widthRatio: Int?, heightRatio: Int?
    ) -> (width: Int, height: Int) {
        let (mw, mh) = (Double(mark.width), Double(mark.height))
        var maxWidth = widthRatio.map { Double(image.width) * Double($0) / 100 }
        var maxHeight = heightRatio.map { Double(image.height) * Double($0) / 100 }
        if maxWidth == nil, let maxHeight { maxWidth = mw * maxHeight / mh }
        if maxHeight == nil, let maxWidth { maxHeight = mh * maxWidth / mw }
        guard let boxWidth = maxWidth, let boxHeight = maxHeight, boxWidth > 0, boxHeight > 0 else { return mark }
        if mw / boxWidth >= mh / boxHeight {
            return (max(Int(boxWidth.rounded()), 1), max(Int((mh * boxWidth / mw).rounded()), 1))
        }
        return (max(Int((mw * boxHeight / mh).rounded()), 1), max(Int(boxHeight.rounded()), 1))
    }

    /// Where marks start along a side of `length`: one position, or the repeats' (at most 6 past 100 tiles in all is
    /// not tracked per axis here: a side repeats at most `length / markLength` times, 10 pixels apart when fewer
    /// than two fit).
    static func positions(_ text: String, length: Int, markLength: Int) -> [Int] {
        switch text {
        case "center": return [(length - markLength) / 2]
        case "repeat":
            guard markLength > 0 else { return [0] }
            var (count, spare) = (length / markLength, length % markLength)
            if Double(length) / Double(markLength) < 2 {
                count = Int((Double(length) / Double(markLength)).rounded(.up))
                spare = 10
            }
            count = min(count, 6)
            let space = spare / (max(count, 2) - 1)
            return (0..<max(count, 1)).map { $0 * (space + markLength) }
        default:
            var value = Substring(text)
            let negative = value.hasPrefix("-")
            if negative { value = value.dropFirst() }
            var number = Int(value.hasSuffix("p") ? value.dropLast() : value) ?? 0
            if value.hasSuffix("p") { number = Int((Double(length) * Double(number) / 100 + 1e-5).rounded()) }
            return [negative ? length - markLength - number : number]
        }
    }
}
