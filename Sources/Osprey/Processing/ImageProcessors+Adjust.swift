public import OspreyCodecs

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ImageProcessors {
    /// Tone and colour adjustments of every colour channel (alpha kept), in this order: ``brightness`` and the
    /// per-channel offsets added, ``contrast`` around mid-gray, ``gamma``, then ``saturation``. Each parameter at its
    /// default changes nothing, so one adjustment per processor composes in whatever order a URL gives them:
    ///
    /// ```swift
    /// let request = try ImageRequest(url: url, processors: [.adjust(brightness: 20), .adjust(contrast: 1.2)])
    /// ```
    ///
    /// The arithmetic is thumbor's filters' (`brightness`, `contrast`, `rgb`, `saturation`), on 8-bit sRGB values:
    /// the proxy's `brightness=`, `contrast=`, `saturation=`, `gamma=`, imgproxy's `br`, `co` and `sa`, and thumbor's
    /// filters of those names map onto it.
    public struct Adjust: ImageProcessing, Hashable {
        /// Added to each colour channel, in 0–255 units (-255…255; thumbor's `brightness(p)` is `255 × p / 100`).
        /// 0 by default.
        public var brightness: Double
        /// A factor around 128: `value' = (value − 128) × contrast + 128`; 1 by default, 0 flattens to gray.
        public var contrast: Double
        /// A factor of each channel's distance from the pixel's perceived brightness
        /// `√(0.299 R² + 0.587 G² + 0.114 B²)`; 1 by default, 0 is gray, 2 twice as vivid.
        public var saturation: Double
        /// `value' = 255 × (value / 255)^(1 / gamma)`: more than 1 lightens the mid-tones. 1 by default.
        public var gamma: Double
        /// Added to the red, green and blue channels, in 0–255 units (thumbor's `rgb(r, g, b)`). 0 by default.
        public var red: Double
        /// See ``red``.
        public var green: Double
        /// See ``red``.
        public var blue: Double

        /// Makes an adjustment; a parameter that is not finite (or a gamma or saturation below 0) is its default.
        public init(
            brightness: Double = 0, contrast: Double = 1, saturation: Double = 1, gamma: Double = 1, red: Double = 0,
            green: Double = 0, blue: Double = 0
        ) {
            func finite(_ value: Double, _ fallback: Double, range: ClosedRange<Double>) -> Double {
                value.isFinite ? min(max(value, range.lowerBound), range.upperBound) : fallback
            }
            self.brightness = finite(brightness, 0, range: -255...255)
            self.contrast = finite(contrast, 1, range: 0...100)
            self.saturation = finite(saturation, 1, range: 0...100)
            self.gamma = gamma.isFinite && gamma > 0 ? min(gamma, 100) : 1
            self.red = finite(red, 0, range: -255...255)
            self.green = finite(green, 0, range: -255...255)
            self.blue = finite(blue, 0, range: -255...255)
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String {
            var parts: [String] = []
            if brightness != 0 { parts.append("brightness=\(brightness)") }
            if red != 0 || green != 0 || blue != 0 { parts.append("rgb=\(red):\(green):\(blue)") }
            if contrast != 1 { parts.append("contrast=\(contrast)") }
            if gamma != 1 { parts.append("gamma=\(gamma)") }
            if saturation != 1 { parts.append("saturation=\(saturation)") }
            return "adjust(" + parts.joined(separator: ",") + ")"
        }

        /// Whether the adjustment changes nothing.
        public var isIdentity: Bool {
            brightness == 0 && red == 0 && green == 0 && blue == 0 && contrast == 1 && gamma == 1 && saturation == 1
        }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            guard !isIdentity else { return image }
            let offsets = [red, green, blue]
            let tonal = brightness != 0 || offsets != [0, 0, 0] || contrast != 1 || gamma != 1
            return try image.mappingFrames { pixels in
                var adjusted = pixels
                if tonal {
                    adjusted = try pixels.mappingChannels { channel, value in
                        var v = Double(value) + brightness + offsets[channel]
                        v = (v - 128) * contrast + 128
                        if gamma != 1 { v = 255 * pow(min(max(v, 0), 255) / 255, 1 / gamma) }
                        return UInt8(min(max(v.rounded(), 0), 255))
                    }
                }
                guard saturation != 1 else { return adjusted }
                return try adjusted.saturated(by: saturation)
            }
        }
    }

    /// Makes blocks of `size` × `size` pixels one colour each, their average (imgproxy's `pixelate`): the blocks
    /// are aligned to the top-left corner, the last ones in a row or column cut short by the edge.
    public struct Pixelate: ImageProcessing, Hashable {
        /// The side of a block, in pixels; 1 or less leaves the image as it is.
        public var size: Int

        /// Makes the processor for `size`-pixel blocks.
        public init(size: Int) {
            self.size = size
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String { "pixelate(\(size))" }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            guard size > 1 else { return image }
            return try image.mappingFrames { try $0.pixelated(size) }
        }
    }
}

extension PixelBuffer {
    /// Each colour channel moved from the pixel's perceived brightness by `factor` (thumbor's saturation filter).
    func saturated(by factor: Double) throws(CodecError) -> PixelBuffer {
        var target = self
        if format == .gray8 || format == .grayAlpha8 { return target }  // gray has no saturation to change
        target = try converted(to: format)
        let (w, h, step, stride) = (target.width, target.height, target.format.bytesPerPixel, target.bytesPerRow)
        target.withUnsafeMutableBytes { bytes in
            for y in 0..<h {
                var offset = y * stride
                for _ in 0..<w {
                    let (r, g, b) = (Double(bytes[offset]), Double(bytes[offset + 1]), Double(bytes[offset + 2]))
                    let p = (r * r * 0.299 + g * g * 0.587 + b * b * 0.114).squareRoot()
                    for (index, value) in [r, g, b].enumerated() {
                        bytes[offset + index] = UInt8(min(max((p + (value - p) * factor).rounded(), 0), 255))
                    }
                    offset += step
                }
            }
        }
        return target
    }

    /// The buffer in `size` × `size` blocks of their average colour (alpha too).
    func pixelated(_ size: Int) throws(CodecError) -> PixelBuffer {
        var target = try converted(to: format)
        let (w, h, step, stride) = (target.width, target.height, target.format.bytesPerPixel, target.bytesPerRow)
        target.withUnsafeMutableBytes { bytes in
            var sums = [Int](repeating: 0, count: step)
            for top in Swift.stride(from: 0, to: h, by: size) {
                let bottom = min(top + size, h)
                for left in Swift.stride(from: 0, to: w, by: size) {
                    let right = min(left + size, w)
                    for c in 0..<step { sums[c] = 0 }
                    for y in top..<bottom {
                        for x in left..<right {
                            for c in 0..<step { sums[c] += Int(bytes[y * stride + x * step + c]) }
                        }
                    }
                    let count = (bottom - top) * (right - left)
                    let mean = sums.map { UInt8(($0 + count / 2) / count) }
                    for y in top..<bottom {
                        for x in left..<right {
                            for c in 0..<step { bytes[y * stride + x * step + c] = mean[c] }
                        }
                    }
                }
            }
        }
        return target
    }
}

extension ImageProcessing where Self == ImageProcessors.Adjust {
    /// Brightness, contrast, saturation, gamma and per-channel offsets (see ``ImageProcessors/Adjust``).
    public static func adjust(
        brightness: Double = 0, contrast: Double = 1, saturation: Double = 1, gamma: Double = 1
    ) -> Self {
        ImageProcessors.Adjust(brightness: brightness, contrast: contrast, saturation: saturation, gamma: gamma)
    }
}

extension ImageProcessing where Self == ImageProcessors.Pixelate {
    /// Blocks of `size` × `size` pixels of their average colour.
    public static func pixelate(size: Int) -> Self { ImageProcessors.Pixelate(size: size) }
}
