public import OspreyCodecs

extension ImageProcessors {
    /// Centres the image on a `width` × `height` canvas (at least the image's size) filled with a colour, the image's
    /// median colour, or the image itself stretched over the canvas and blurred (thumbor's `fill(color)`,
    /// `fill(auto)` and `fill(blur)` after `fit-in`): a fixed-size slot without bars of an unrelated colour.
    public struct Letterbox: ImageProcessing, Hashable {
        /// What fills the canvas around the image.
        public enum Fill: Sendable, Hashable, CustomStringConvertible {
            /// A colour.
            case color(PixelColor)
            /// The median of each of the image's colour channels (thumbor's `auto`).
            case median
            /// The image, stretched to the canvas and blurred with a Gaussian of this standard deviation, in pixels
            /// of the image before stretching (thumbor's `blur` uses 50).
            case blurred(sigma: Double)

            /// The value as logs and messages print it.
            public var description: String {
                switch self {
                case .color(let color): "\(color)"
                case .median: "median"
                case .blurred(let sigma): "blur\(sigma)"
                }
            }
        }

        /// The canvas's width, in pixels (0: the image's).
        public var width: Int
        /// The canvas's height, in pixels (0: the image's).
        public var height: Int
        /// What fills the canvas.
        public var fill: Fill
        /// Whether the image's transparent pixels show the fill (thumbor's `fill_transparent`): `false` keeps them
        /// transparent, as pasted.
        public var fillsTransparency: Bool

        /// Makes the processor for a `width` × `height` canvas of `fill`.
        public init(width: Int, height: Int, fill: Fill, fillsTransparency: Bool = false) {
            (self.width, self.height, self.fill, self.fillsTransparency) = (width, height, fill, fillsTransparency)
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String {
            "letterbox(\(width)x\(height),\(fill)" + (fillsTransparency ? ",transparent)" : ")")
        }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            let (w, h) = image.uprightSize
            let (canvasWidth, canvasHeight) = (max(width, w), max(height, h))
            let (x, y) = ((canvasWidth - w) / 2, (canvasHeight - h) / 2)
            return try image.mappingFrames { pixels in
                var canvas: PixelBuffer
                switch fill {
                case .color(let color):
                    canvas = try PixelBuffer(
                        width: canvasWidth, height: canvasHeight, format: pixels.format.holding(color).withAlpha)
                    canvas.fill(with: color)
                case .median:
                    canvas = try PixelBuffer(width: canvasWidth, height: canvasHeight, format: .rgba8)
                    canvas.fill(with: try pixels.medianColor())
                case .blurred(let sigma):
                    let blurred = try Blur(radius: sigma).process(Image(pixels: pixels.converted(to: .rgba8)))
                    canvas = try Resize(width: canvasWidth, height: canvasHeight, fit: .fill, upscale: true)
                        .process(blurred).pixels.converted(to: .rgba8)
                }
                let image = try pixels.converted(to: .rgba8)
                if fillsTransparency {
                    canvas.blend(image, x: x, y: y, opacity: 256)
                } else {
                    canvas.paste(image, x: x, y: y)
                }
                return canvas
            }
        }
    }
}

extension PixelBuffer {
    /// The median of each colour channel over every pixel, opaque.
    func medianColor() throws(CodecError) -> PixelColor {
        let rgb = try converted(to: .rgb8)
        var histograms = [[Int]](repeating: [Int](repeating: 0, count: 256), count: 3)
        rgb.withUnsafeBytes { bytes in
            for y in 0..<rgb.height {
                var offset = y * rgb.bytesPerRow
                for _ in 0..<rgb.width {
                    for c in 0..<3 { histograms[c][Int(bytes[offset + c])] += 1 }
                    offset += 3
                }
            }
        }
        let half = (rgb.width * rgb.height + 1) / 2
        let medians = histograms.map { histogram -> UInt8 in
            var seen = 0
            for (value, count) in histogram.enumerated() {
                seen += count
                if seen >= half { return UInt8(value) }
            }
            return 0
        }
        return PixelColor(red: medians[0], green: medians[1], blue: medians[2])
    }
}
