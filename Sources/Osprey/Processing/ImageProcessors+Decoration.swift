public import OspreyCodecs

extension ImageProcessors {
    /// Rounds the corners with a `radius`-pixel arc, anti-aliased: the pixels outside become transparent, so the
    /// result has alpha (`rgba8` or `grayAlpha8`). The radius is capped at half the shorter side.
    public struct RoundCorners: ImageProcessing, Hashable {
        /// The corners' radius, in pixels.
        public var radius: Int

        /// Makes corners of `radius` pixels (a negative one counts as 0).
        public init(radius: Int) {
            self.radius = max(radius, 0)
        }

        public var identifier: String { "roundCorners(\(radius))" }

        public func process(_ image: Image) throws -> Image {
            guard radius > 0 else { return image }
            return try image.mappingFrames { try $0.roundingCorners(radius: Double(radius)) }
        }
    }

    /// Keeps the largest centred circle: a square crop whose corners are rounded to a full circle, transparent
    /// outside.
    public struct Circle: ImageProcessing, Hashable {
        /// Makes the processor.
        public init() {}

        public var identifier: String { "circle" }

        public func process(_ image: Image) throws -> Image {
            let (w, h) = image.uprightSize
            let side = min(w, h)
            let square = try Crop(.size(width: side, height: side, anchor: .center)).process(image)
            return try square.mappingFrames { try $0.roundingCorners(radius: Double(side) / 2) }
        }
    }

    /// Frames the image with a `width`-pixel band of `color` on every side: the result is `2 × width` larger each
    /// way. The format widens as the colour needs (a coloured border on a gray image makes it RGB; a translucent one
    /// adds alpha).
    public struct Border: ImageProcessing, Hashable {
        /// The band's width, in pixels.
        public var width: Int
        /// The band's colour.
        public var color: PixelColor

        /// Makes a border `width` pixels wide (a negative one counts as 0) of `color`.
        public init(width: Int, color: PixelColor = .black) {
            self.width = max(width, 0)
            self.color = color
        }

        public var identifier: String { "border(\(width),\(color))" }

        public func process(_ image: Image) throws -> Image {
            guard width > 0 else { return image }
            return try image.mappingFrames { pixels in
                let format = pixels.format.holding(color)
                let inner = try pixels.converted(to: format)
                // Saturating: a border too wide for any buffer fails to allocate instead of trapping.
                let band = width.addingClamped(width)
                var output = try PixelBuffer(
                    width: inner.width.addingClamped(band), height: inner.height.addingClamped(band), format: format)
                output.fill(with: color)
                output.paste(inner, x: width, y: width)
                return output
            }
        }
    }
}

extension PixelFormat {
    /// The narrowest format that holds both pixels of this format and `color`.
    func holding(_ color: PixelColor) -> PixelFormat {
        let isGray = color.red == color.green && color.green == color.blue
        let alpha = hasAlpha || color.alpha < 255
        let staysGray = isGray && (self == .gray8 || self == .grayAlpha8)
        return staysGray ? (alpha ? .grayAlpha8 : .gray8) : (alpha ? .rgba8 : .rgb8)
    }

    /// The format with an alpha channel added, if it has none.
    var withAlpha: PixelFormat {
        switch self {
        case .gray8, .grayAlpha8: .grayAlpha8
        case .rgb8, .rgba8: .rgba8
        }
    }
}

extension PixelBuffer {
    /// Every pixel set to `color` (gray formats take its red).
    mutating func fill(with color: PixelColor) {
        let pixel: [UInt8] =
            switch format {
            case .gray8: [color.red]
            case .grayAlpha8: [color.red, color.alpha]
            case .rgb8: [color.red, color.green, color.blue]
            case .rgba8: [color.red, color.green, color.blue, color.alpha]
            }
        let (w, h, stride) = (width, height, bytesPerRow)
        withUnsafeMutableBytes { bytes in
            // The first row pixel by pixel, then every other row copied from it.
            for x in 0..<w {
                for (c, value) in pixel.enumerated() { bytes[x * pixel.count + c] = value }
            }
            for y in 1..<max(h, 1) {
                (bytes.baseAddress! + y * stride).copyMemory(from: bytes.baseAddress!, byteCount: w * pixel.count)
            }
        }
    }

    /// Copies `other` (of the same format) in with its top-left corner at (`x`, `y`); it must fit.
    mutating func paste(_ other: PixelBuffer, x: Int, y: Int) {
        precondition(other.format == format && x + other.width <= width && y + other.height <= height)
        let (rowLength, sourceStride, targetStride) = (
            other.width * format.bytesPerPixel, other.bytesPerRow, bytesPerRow
        )
        let offset = x * format.bytesPerPixel
        other.withUnsafeBytes { source in
            withUnsafeMutableBytes { target in
                for row in 0..<other.height {
                    (target.baseAddress! + (y + row) * targetStride + offset).copyMemory(
                        from: source.baseAddress! + row * sourceStride, byteCount: rowLength)
                }
            }
        }
    }

    /// The pixels with alpha, and each corner outside a `radius` arc made transparent: a pixel's alpha is multiplied
    /// by how much of it lies inside the arc (its centre's distance from the arc, clamped to 0...1).
    func roundingCorners(radius: Double) throws(CodecError) -> PixelBuffer {
        var output = try converted(to: format.withAlpha)
        let r = min(radius, Double(min(width, height)) / 2)
        let span = Int(r.rounded(.up))
        let (w, h, step, stride) = (output.width, output.height, output.format.bytesPerPixel, output.bytesPerRow)
        output.withUnsafeMutableBytes { bytes in
            for j in 0..<min(span, h) {
                for i in 0..<min(span, w) {
                    // Distance of the pixel's centre from the corner's arc centre, measured towards the corner.
                    let (dx, dy) = (r - (Double(i) + 0.5), r - (Double(j) + 0.5))
                    guard dx > 0, dy > 0 else { continue }
                    let coverage = min(max(r - (dx * dx + dy * dy).squareRoot() + 0.5, 0), 1)
                    guard coverage < 1 else { continue }
                    // The same pixel in each of the four corners.
                    for (x, y) in [(i, j), (w - 1 - i, j), (i, h - 1 - j), (w - 1 - i, h - 1 - j)] {
                        let alpha = y * stride + x * step + step - 1
                        bytes[alpha] = UInt8((Double(bytes[alpha]) * coverage).rounded())
                    }
                }
            }
        }
        return output
    }
}

extension ImageProcessing where Self == ImageProcessors.RoundCorners {
    /// Rounds the corners with a `radius`-pixel arc; transparent outside.
    public static func roundCorners(radius: Int) -> Self { ImageProcessors.RoundCorners(radius: radius) }
}

extension ImageProcessing where Self == ImageProcessors.Circle {
    /// Keeps the largest centred circle; transparent outside.
    public static func circle() -> Self { ImageProcessors.Circle() }
}

extension ImageProcessing where Self == ImageProcessors.Border {
    /// A `width`-pixel band of `color` around the image.
    public static func border(width: Int, color: PixelColor = .black) -> Self {
        ImageProcessors.Border(width: width, color: color)
    }
}
