public import OspreyCodecs

extension ImageProcessors {
    /// Sharpens by unsharp masking: each colour channel moves away from its Gaussian blur of standard deviation
    /// `sigma` by `amount` times the difference (`out = in + amount × (in − blur)`), so edges gain contrast and flat
    /// areas stay as they were. Alpha is left alone. What a downscaled photo often wants (imgproxy's `sharpen`).
    public struct Sharpen: ImageProcessing, Hashable {
        /// The blur's standard deviation, in pixels: the size of the detail that gains contrast.
        public var sigma: Double
        /// How strongly: 1 by default.
        public var amount: Double

        /// Makes an unsharp mask of `sigma` and `amount` (negative ones count as 0).
        public init(sigma: Double, amount: Double = 1) {
            self.sigma = max(sigma, 0)
            self.amount = max(amount, 0)
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String { "sharpen(\(sigma),\(amount))" }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            let boxes = Blur.boxWidths(sigma: sigma)
            guard amount > 0, boxes.contains(where: { $0 > 1 }) else { return image }
            return try image.mappingFrames { pixels in
                let blurred = try pixels.boxBlurred(widths: boxes)
                var output = try pixels.converted(to: pixels.format)  // tightly packed, as `blurred` is
                let channels = pixels.format.bytesPerPixel
                let colours = pixels.format.hasAlpha ? channels - 1 : channels
                let count = pixels.width * pixels.height
                // Fixed point, 8 fractional bits: the amount scaled once.
                // At most 256 × 64: no sharper is visible, and the products below stay within Int.
                let scaled = Int(saturating: (min(amount, 64) * 256).rounded())
                blurred.withUnsafeBytes { smooth in
                    output.withUnsafeMutableBytes { sharp in
                        for pixel in 0..<count {
                            let base = pixel * channels
                            for channel in 0..<colours {
                                let value = Int(sharp[base + channel])
                                let detail = value - Int(smooth[base + channel])
                                sharp[base + channel] = UInt8(clamping: value + (detail * scaled) >> 8)
                            }
                        }
                    }
                }
                return output
            }
        }
    }
}

extension ImageProcessing where Self == ImageProcessors.Sharpen {
    /// ``ImageProcessors/Sharpen``: unsharp masking at `sigma`, by `amount`.
    public static func sharpen(sigma: Double, amount: Double = 1) -> Self {
        ImageProcessors.Sharpen(sigma: sigma, amount: amount)
    }
}
