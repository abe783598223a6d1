public import OspreyCodecs

extension ImageProcessors {
    /// Rounds the corners with a `radius`-pixel arc (or an ellipse's quarter, `radius` wide and ``verticalRadius``
    /// high), anti-aliased: the pixels outside become transparent, so the result has alpha (`rgba8` or
    /// `grayAlpha8`), or, with a ``color``, that colour (thumbor's `round_corner`). The radii are capped at half the
    /// sides.
    public struct RoundCorners: ImageProcessing, Hashable {
        /// The corners' horizontal radius, in pixels.
        public var radius: Int
        /// The corners' vertical radius, in pixels: `radius` when `nil` (the default).
        public var verticalRadius: Int?
        /// What fills the corners: `nil` (the default) for transparency.
        public var color: PixelColor?

        /// Makes corners of `radius` pixels (a negative one counts as 0), `verticalRadius` high when given, filled
        /// with `color` or transparent.
        public init(radius: Int, verticalRadius: Int? = nil, color: PixelColor? = nil) {
            self.radius = max(radius, 0)
            self.verticalRadius = verticalRadius.map { max($0, 0) }
            self.color = color
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String {
            var text = "roundCorners(\(radius)"
            if let verticalRadius, verticalRadius != radius { text += "|\(verticalRadius)" }
            if let color { text += ",\(color)" }
            return text + ")"
        }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            let vertical = verticalRadius ?? radius
            guard radius > 0, vertical > 0 else { return image }
            return try image.mappingFrames {
                try $0.roundingCorners(radiusX: Double(radius), radiusY: Double(vertical), fill: color)
            }
        }
    }

    /// Keeps the largest centred circle: a square crop whose corners are rounded to a full circle, transparent
    /// outside.
    public struct Circle: ImageProcessing, Hashable {
        /// Makes the processor.
        public init() {}

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String { "circle" }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            let (w, h) = image.uprightSize
            let side = min(w, h)
            let square = try Crop(.size(width: side, height: side, anchor: .center)).process(image)
            return try square.mappingFrames {
                try $0.roundingCorners(radiusX: Double(side) / 2, radiusY: Double(side) / 2, fill: nil)
            }
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

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String { "border(\(width),\(color))" }

        /// Applies the processor to `image`.
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

    /// The pixels with each corner outside a `radiusX` × `radiusY` elliptical arc made transparent (with alpha
    /// added), or blended into `fill`: a pixel keeps as much of itself as lies inside the arc (its centre's distance
    /// from the arc, in pixels along the shorter radius, clamped to 0...1).
    func roundingCorners(radiusX: Double, radiusY: Double, fill: PixelColor?) throws(CodecError) -> PixelBuffer {
        var output = try converted(to: fill.map { format.holding($0) } ?? format.withAlpha)
        // A circle's radius is capped at half the shorter side, an ellipse's radii at half their sides.
        let circular = radiusX == radiusY
        let rx = min(radiusX, circular ? Double(min(width, height)) / 2 : Double(width) / 2)
        let ry = min(radiusY, circular ? Double(min(width, height)) / 2 : Double(height) / 2)
        let (spanX, spanY) = (Int(rx.rounded(.up)), Int(ry.rounded(.up)))
        let (w, h, step, stride) = (output.width, output.height, output.format.bytesPerPixel, output.bytesPerRow)
        let isGray = output.format == .gray8 || output.format == .grayAlpha8
        let paint: [Double] =
            fill.map { color in
                (isGray ? [Double(color.red)] : [Double(color.red), Double(color.green), Double(color.blue)])
                    + (output.format.hasAlpha ? [Double(color.alpha)] : [])
            } ?? []
        let radius = min(rx, ry)
        output.withUnsafeMutableBytes { bytes in
            for j in 0..<min(spanY, h) {
                for i in 0..<min(spanX, w) {
                    // The pixel's centre measured from the arc's centre, towards the corner, in units of the radii.
                    let (dx, dy) = ((rx - (Double(i) + 0.5)) / rx, (ry - (Double(j) + 0.5)) / ry)
                    guard dx > 0, dy > 0 else { continue }
                    let coverage = min(max((1 - (dx * dx + dy * dy).squareRoot()) * radius + 0.5, 0), 1)
                    guard coverage < 1 else { continue }
                    // The same pixel in each of the four corners.
                    for (x, y) in [(i, j), (w - 1 - i, j), (i, h - 1 - j), (w - 1 - i, h - 1 - j)] {
                        let base = y * stride + x * step
                        if paint.isEmpty {
                            let alpha = base + step - 1
                            bytes[alpha] = UInt8((Double(bytes[alpha]) * coverage).rounded())
                        } else {
                            for c in 0..<step {
                                let mixed = Double(bytes[base + c]) * coverage + paint[c] * (1 - coverage)
                                bytes[base + c] = UInt8(min(max(mixed.rounded(), 0), 255))
                            }
                        }
                    }
                }
            }
        }
        return output
    }
}

extension ImageProcessing where Self == ImageProcessors.RoundCorners {
    /// Rounds the corners with a `radius`-pixel arc (`verticalRadius` high, when given); transparent outside, or
    /// `color`.
    public static func roundCorners(radius: Int, verticalRadius: Int? = nil, color: PixelColor? = nil) -> Self {
        ImageProcessors.RoundCorners(radius: radius, verticalRadius: verticalRadius, color: color)
    }
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
