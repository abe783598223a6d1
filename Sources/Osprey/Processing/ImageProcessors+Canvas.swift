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

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String { "pad(\(top),\(right),\(bottom),\(left),\(color))" }

        /// Applies the processor to `image`.
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
    /// an axis keeps its size on that axis (a side of 0 is the image's own).
    public struct Extend: ImageProcessing, Hashable {
        /// The canvas's width, in pixels.
        public var width: Int
        /// The canvas's height, in pixels.
        public var height: Int
        /// Where on the canvas the image is placed.
        public var anchor: Anchor
        /// The colour of the canvas around the image.
        public var color: PixelColor
        /// Moves the image from where ``anchor`` puts it, away from the edge it is anchored to: pixels when 1 or
        /// more (or -1 or less), else a fraction of the canvas, as imgproxy's gravity offsets. 0 by default.
        public var offsetX: Double
        /// Moves the image vertically, as ``offsetX``. 0 by default.
        public var offsetY: Double

        /// Makes a `width` × `height` canvas of `color` with the image placed at `anchor`, moved by the offsets.
        public init(
            width: Int, height: Int, anchor: Anchor = .center, color: PixelColor = .clear, offsetX: Double = 0,
            offsetY: Double = 0
        ) {
            (self.width, self.height, self.anchor, self.color) = (width, height, anchor, color)
            (self.offsetX, self.offsetY) = (offsetX.isFinite ? offsetX : 0, offsetY.isFinite ? offsetY : 0)
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String {
            let offset = offsetX != 0 || offsetY != 0 ? ",offset=\(offsetX):\(offsetY)" : ""
            return "extend(\(width)x\(height),anchor=\(anchor),\(color)\(offset))"
        }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            let (w, h) = image.uprightSize
            guard width > w || height > h else { return image }
            return try image.placed(
                onWidth: max(width, w), height: max(height, h), anchor: anchor, offsetX: offsetX, offsetY: offsetY,
                color: color)
        }
    }

    /// Places the image on the smallest canvas of `color` with the aspect ratio `width`:`height` that holds it,
    /// where `anchor` says (imgproxy's `extend_aspect_ratio`): letterboxing instead of cropping.
    public struct ExtendToAspectRatio: ImageProcessing, Hashable {
        /// The ratio's width.
        public var width: Int
        /// The ratio's height.
        public var height: Int
        /// Where on the canvas the image is placed.
        public var anchor: Anchor
        /// The colour of the canvas around the image.
        public var color: PixelColor
        /// Moves the image from where ``anchor`` puts it, as ``Extend/offsetX``. 0 by default.
        public var offsetX: Double
        /// Moves the image vertically, as ``Extend/offsetY``. 0 by default.
        public var offsetY: Double

        /// Makes the processor for a `width`:`height` canvas (each side positive) of `color`, the image at `anchor`.
        public init(
            width: Int, height: Int, anchor: Anchor = .center, color: PixelColor = .clear, offsetX: Double = 0,
            offsetY: Double = 0
        ) {
            (self.width, self.height, self.anchor, self.color) = (width, height, anchor, color)
            (self.offsetX, self.offsetY) = (offsetX.isFinite ? offsetX : 0, offsetY.isFinite ? offsetY : 0)
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String {
            let offset = offsetX != 0 || offsetY != 0 ? ",offset=\(offsetX):\(offsetY)" : ""
            return "extendratio(\(width):\(height),anchor=\(anchor),\(color)\(offset))"
        }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            guard width > 0, height > 0 else { return image }
            let (w, h) = image.uprightSize
            // The image's own side along which it is relatively longer stays; the other grows to the ratio.
            let ratio = Double(width) / Double(height)
            var (canvasWidth, canvasHeight) = (w, h)
            if Double(w) / Double(h) > ratio {
                canvasHeight = Int(saturating: (Double(w) / ratio).rounded())
            } else {
                canvasWidth = Int(saturating: (Double(h) * ratio).rounded())
            }
            return try Extend(
                width: canvasWidth, height: canvasHeight, anchor: anchor, color: color, offsetX: offsetX,
                offsetY: offsetY
            ).process(image)
        }
    }
}

extension Image {
    /// Every frame on a `width` × `height` canvas (at least the image's size) of `color`, placed by `anchor` and the
    /// offsets.
    func placed(
        onWidth width: Int, height: Int, anchor: Anchor, offsetX: Double, offsetY: Double, color: PixelColor
    ) throws -> Image {
        let (w, h) = uprightSize
        let (ax, ay) = anchor.clamped
        let x = ImageProcessors.Resize.position(
            full: Double(width), window: Double(w), anchor: ax, offset: offsetX)
        let y = ImageProcessors.Resize.position(
            full: Double(height), window: Double(h), anchor: ay, offset: offsetY)
        return try mappingFrames { pixels in
            try pixels.placed(
                onWidth: width, height: height, x: Int(saturating: x.rounded()), y: Int(saturating: y.rounded()),
                color: color)
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

extension ImageProcessing where Self == ImageProcessors.ExtendToAspectRatio {
    /// ``ImageProcessors/ExtendToAspectRatio``: the image on the smallest `width`:`height` canvas that holds it.
    public static func extend(
        aspectWidth width: Int, aspectHeight height: Int, anchor: Anchor = .center, color: PixelColor = .clear
    ) -> Self {
        ImageProcessors.ExtendToAspectRatio(width: width, height: height, anchor: anchor, color: color)
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
