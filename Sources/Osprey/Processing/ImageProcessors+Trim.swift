public import OspreyCodecs

extension ImageProcessors {
    /// Cuts away a uniform border: the smallest rectangle holding every pixel that differs from the background by
    /// more than ``threshold`` is kept (imgproxy's `trim`, thumbor's `trim`). The background is a colour given, or
    /// the top-left (or bottom-right) pixel's. Pixels are compared flattened onto magenta (`#ff00ff`), as imgproxy
    /// does, so a transparent border is trimmed as one colour. Every frame of an animation is cut to the first
    /// frame's rectangle; an image that is all background is left as it is.
    public struct Trim: ImageProcessing, Hashable {
        /// Where the background colour comes from.
        public enum Background: Sendable, Hashable, CustomStringConvertible {
            /// The top-left pixel's colour (the default).
            case topLeft
            /// The bottom-right pixel's colour.
            case bottomRight
            /// A colour given (its alpha ignored).
            case color(PixelColor)

            /// The value as logs and messages print it.
            public var description: String {
                switch self {
                case .topLeft: "top-left"
                case .bottomRight: "bottom-right"
                case .color(let color): "\(color)"
                }
            }
        }

        /// The background's colour: the top-left pixel's by default.
        public var background: Background
        /// How far (Euclidean distance of the red, green and blue values, 0–442) a pixel may be from the background
        /// and still count as background. 10 by default (imgproxy's); thumbor's tolerance is the same measure.
        public var threshold: Double
        /// Cut as much from the right as from the left: the lesser of the two (imgproxy's `equal_hor`). `false` by
        /// default.
        public var equalHorizontal: Bool
        /// Cut as much from the bottom as from the top (imgproxy's `equal_ver`). `false` by default.
        public var equalVertical: Bool

        /// Makes a trim of the border that is within `threshold` of `background`.
        public init(
            background: Background = .topLeft, threshold: Double = 10, equalHorizontal: Bool = false,
            equalVertical: Bool = false
        ) {
            self.background = background
            self.threshold = threshold.isNaN ? 10 : max(threshold, 0)
            self.equalHorizontal = equalHorizontal
            self.equalVertical = equalVertical
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String {
            "trim(\(background),threshold=\(threshold),equal=\(equalHorizontal ? "h" : "")\(equalVertical ? "v" : ""))"
        }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            let first = image.orientation == .up ? image.pixels : try image.pixels.applying(image.orientation)
            guard var box = try first.contentBox(background: background, threshold: threshold) else { return image }
            let (w, h) = (first.width, first.height)
            if equalHorizontal {
                let cut = min(box.x, w - box.x - box.width)
                box = (cut, box.y, w - 2 * cut, box.height)
            }
            if equalVertical {
                let cut = min(box.y, h - box.y - box.height)
                box = (box.x, cut, box.width, h - 2 * cut)
            }
            guard box != (0, 0, w, h) else { return image }
            return try Crop(.rect(x: box.x, y: box.y, width: box.width, height: box.height)).process(image)
        }
    }
}

extension PixelBuffer {
    /// The rectangle holding every pixel farther than `threshold` from the background colour, or `nil` when there is
    /// none (all background).
    func contentBox(
        background: ImageProcessors.Trim.Background, threshold: Double
    ) throws(CodecError) -> (x: Int, y: Int, width: Int, height: Int)? {
        let rgba = try converted(to: .rgba8)
        let (w, h, stride) = (rgba.width, rgba.height, rgba.bytesPerRow)
        guard w > 0, h > 0 else { return nil }
        return rgba.withUnsafeBytes { bytes in
            // A pixel's colour flattened onto magenta, so that transparency is a colour of its own.
            func flattened(_ offset: Int) -> (Double, Double, Double) {
                let a = Double(bytes[offset + 3]) / 255
                return (
                    Double(bytes[offset]) * a + 255 * (1 - a), Double(bytes[offset + 1]) * a,
                    Double(bytes[offset + 2]) * a + 255 * (1 - a)
                )
            }
            let reference: (Double, Double, Double)
            switch background {
            case .topLeft: reference = flattened(0)
            case .bottomRight: reference = flattened((h - 1) * stride + (w - 1) * 4)
            case .color(let color): reference = (Double(color.red), Double(color.green), Double(color.blue))
            }
            let limit = threshold * threshold
            func differs(_ x: Int, _ y: Int) -> Bool {
                let (r, g, b) = flattened(y * stride + x * 4)
                let (dr, dg, db) = (r - reference.0, g - reference.1, b - reference.2)
                return dr * dr + dg * dg + db * db > limit
            }
            var (left, right, top, bottom) = (w, -1, h, -1)
            for y in 0..<h {
                // The first differing pixel from the left, and from the right past what is already known.
                guard let first = (0..<w).first(where: { differs($0, y) }) else { continue }
                left = min(left, first)
                top = min(top, y)
                bottom = y
                if let last = (max(first, right + 1)..<w).reversed().first(where: { differs($0, y) }) {
                    right = max(right, last)
                }
                right = max(right, first)
            }
            guard right >= left, bottom >= top else { return nil }
            return (left, top, right - left + 1, bottom - top + 1)
        }
    }
}

extension ImageProcessing where Self == ImageProcessors.Trim {
    /// Cuts away the border within `threshold` of the background (the top-left pixel's colour by default).
    public static func trim(
        background: ImageProcessors.Trim.Background = .topLeft, threshold: Double = 10
    ) -> Self {
        ImageProcessors.Trim(background: background, threshold: threshold)
    }
}
