public import OspreyCodecs

extension ImageProcessors {
    /// Adds a band of `color` of its own width on each side (imgproxy's `padding`): the result is `left + right`
    /// wider and `top + bottom` taller. The format widens as the colour needs, as ``Border`` does.
    public struct Pad: ImageProcessing, Hashable {
        /// The band above the image, in pixels.
        public var top: Int
        /// The band right of the image, in pixels.
        public var right: Int
        /// The band below the image, in pixels.
        public var bottom: Int
        /// The band left of the image, in pixels.
        public var left: Int
        /// The bands' colour.
        public var color: PixelColor

        /// Makes a padding of the given widths (negative ones count as 0).
        public init(top: Int, right: Int, bottom: Int, left: Int, color: PixelColor = .clear) {
            (self.top, self.right, self.bottom, self.left) = (max(top, 0), max(right, 0), max(bottom, 0), max(left, 0))
            self.color = color
        }

        public var identifier: String { "pad(\(top),\(right),\(bottom),\(left),\(color))" }

        public func process(_ image: Image) throws -> Image {
            guard top > 0 || right > 0 || bottom > 0 || left > 0 else { return image }
            return try image.mappingFrames { pixels in
                try pixels.placed(
                    onWidth: pixels.width.addingClamped(left).addingClamped(right),
                    height: pixels.height.addingClamped(top).addingClamped(bottom), x: left, y: top, color: color)
            }
        }
    }

    /// Places the image on a `width` × `height` canvas of `color`, where `anchor` says (imgproxy's `extend`): what a
    /// fixed-size slot needs from an image resized to fit inside it. Never crops: an image larger than the canvas on
    /// an axis keeps its size on that axis.
    public struct Extend: ImageProcessing, Hashable {
        /// The canvas's width, in pixels.
        public var width: Int
        /// The canvas's height, in pixels.
        public var height: Int
        /// Where on the canvas the image is placed.
        public var anchor: Anchor
        /// The colour of the canvas around the image.
        public var color: PixelColor

        /// Makes a `width` × `height` canvas of `color` with the image placed at `anchor`.
        public init(width: Int, height: Int, anchor: Anchor = .center, color: PixelColor = .clear) {
            (self.width, self.height, self.anchor, self.color) = (width, height, anchor, color)
        }

        public var identifier: String { "extend(\(width)x\(height),anchor=\(anchor),\(color))" }

        public func process(_ image: Image) throws -> Image {
            let (w, h) = image.uprightSize
            guard width > w || height > h else { return image }
            let (canvasWidth, canvasHeight) = (max(width, w), max(height, h))
            let (ax, ay) = anchor.clamped
            let x = Int((Double(canvasWidth - w) * ax).rounded())
            let y = Int((Double(canvasHeight - h) * ay).rounded())
            return try image.mappingFrames { pixels in
                try pixels.placed(onWidth: canvasWidth, height: canvasHeight, x: x, y: y, color: color)
            }
        }
    }
}

extension ImageProcessing where Self == ImageProcessors.Pad {
    /// ``ImageProcessors/Pad``: bands of `color` of the given widths.
    public static func pad(
        top: Int, right: Int, bottom: Int, left: Int, color: PixelColor = .clear
    ) -> Self {
        ImageProcessors.Pad(top: top, right: right, bottom: bottom, left: left, color: color)
    }
}

extension ImageProcessing where Self == ImageProcessors.Extend {
    /// ``ImageProcessors/Extend``: the image on a `width` × `height` canvas.
    public static func extend(
        width: Int, height: Int, anchor: Anchor = .center, color: PixelColor = .clear
    ) -> Self {
        ImageProcessors.Extend(width: width, height: height, anchor: anchor, color: color)
    }
}

extension PixelBuffer {
    /// These pixels at (`x`, `y`) on a `width` × `height` canvas of `color`, in the format that holds both.
    func placed(onWidth width: Int, height: Int, x: Int, y: Int, color: PixelColor) throws -> PixelBuffer {
        let format = self.format.holding(color)
        let inner = try converted(to: format)
        var output = try PixelBuffer(width: width, height: height, format: format)
        output.fill(with: color)
        output.paste(inner, x: x, y: y)
        return output
    }
}
