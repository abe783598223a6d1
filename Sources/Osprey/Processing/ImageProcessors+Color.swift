public import OspreyCodecs

extension ImageProcessors {
    /// Makes an image gray by BT.601 luma (0.299 R + 0.587 G + 0.114 B, as JPEG's Y and Pillow's `L`): the result is
    /// `gray8`, or `grayAlpha8` when the image has alpha.
    public struct Grayscale: ImageProcessing, Hashable {
        /// Makes the processor.
        public init() {}

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String { "grayscale" }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            let target: PixelFormat = image.pixelFormat.hasAlpha ? .grayAlpha8 : .gray8
            return try image.mappingFrames { try $0.converted(to: target) }
        }
    }

    /// Washes an image with a colour, by the colour's alpha, where the image is (its alpha is kept): Kingfisher's
    /// tint. An opaque colour paints every visible pixel; `alpha: 128` is a half-strength wash.
    public struct Tint: ImageProcessing, Hashable {
        /// The colour, its alpha the strength.
        public var color: PixelColor

        /// Makes the processor for `color` (its alpha the strength).
        public init(_ color: PixelColor) {
            self.color = color
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String { "tint(\(color))" }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            try image.blending(color) { _, paint in paint }
        }
    }

    /// Blends a colour onto an image with the overlay blend mode (darks darken, lights lighten; Photoshop's and
    /// CSS `mix-blend-mode: overlay`), by the colour's alpha; the image's alpha is kept.
    public struct Overlay: ImageProcessing, Hashable {
        /// The colour, its alpha the strength.
        public var color: PixelColor

        /// Makes the processor for `color` (its alpha the strength).
        public init(_ color: PixelColor) {
            self.color = color
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String { "overlay(\(color))" }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            try image.blending(color) { base, top in
                base < 128 ? (2 * base * top + 127) / 255 : 255 - (2 * (255 - base) * (255 - top) + 127) / 255
            }
        }
    }
}

extension Image {
    /// Every frame with `color` blended onto each colour channel by `mode(base, paint)` (0–255 each), mixed with the
    /// base by the colour's alpha; the image's alpha is kept.
    func blending(_ color: PixelColor, _ mode: (Int, Int) -> Int) throws -> Image {
        let paint = [Int(color.red), Int(color.green), Int(color.blue)]
        let a = Int(color.alpha)
        return try mappingFrames { pixels in
            try pixels.mappingChannels { channel, value in
                let base = Int(value)
                return UInt8((base * (255 - a) + mode(base, paint[channel]) * a + 127) / 255)
            }
        }
    }
}

extension PixelBuffer {
    /// The buffer with each colour channel mapped through `curve` (channel index 0–2, value) → value; alpha is kept.
    /// The curve is tabulated once per channel, so a pixel costs three lookups. A gray buffer stays gray when the
    /// three channels' tables agree, and becomes RGB otherwise.
    func mappingChannels(_ curve: (Int, UInt8) -> UInt8) throws(CodecError) -> PixelBuffer {
        let tables = (0..<3).map { channel in (0...255).map { curve(channel, UInt8($0)) } }
        let isGray = format == .gray8 || format == .grayAlpha8
        var target = self
        if isGray, tables[0] != tables[1] || tables[1] != tables[2] {
            target = try converted(to: format.hasAlpha ? .rgba8 : .rgb8)
        }
        let (w, h, step, stride) = (target.width, target.height, target.format.bytesPerPixel, target.bytesPerRow)
        let channels = target.format == .gray8 || target.format == .grayAlpha8 ? 1 : 3
        let flat = tables.flatMap { $0 }
        flat.withUnsafeBufferPointer { table in
            target.withUnsafeMutableBytes { bytes in
                for y in 0..<h {
                    var offset = y * stride
                    for _ in 0..<w {
                        for c in 0..<channels { bytes[offset + c] = table[c << 8 | Int(bytes[offset + c])] }
                        offset += step
                    }
                }
            }
        }
        return target
    }
}

extension ImageProcessing where Self == ImageProcessors.Grayscale {
    /// Gray by BT.601 luma.
    public static func grayscale() -> Self { ImageProcessors.Grayscale() }
}

extension ImageProcessing where Self == ImageProcessors.Tint {
    /// Washes the image with `color`, by its alpha.
    public static func tint(_ color: PixelColor) -> Self { ImageProcessors.Tint(color) }
}

extension ImageProcessing where Self == ImageProcessors.Overlay {
    /// Blends `color` on with the overlay blend mode, by its alpha.
    public static func overlay(_ color: PixelColor) -> Self { ImageProcessors.Overlay(color) }
}
