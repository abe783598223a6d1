public import OspreyCodecs

/// How alike two images look: SSIMULACRA 2, the perceptual metric libjxl uses (its `tools/ssimulacra2.cc`, version
/// 2.1), computed on Osprey's own pixel buffers.
///
/// A score of 100 means the images are the same; about 90 is visually lossless at a normal viewing distance, 70 high
/// quality, 50 medium, 30 low; it goes negative for strong distortion.
///
/// ```swift
/// let score = try ImageQuality.ssimulacra2(reference: original, distorted: reencoded)   // 83.7
///
/// // One reference against several candidates: its half of the work is done once.
/// let reference = try ImageQuality.Reference(original.frames[0].pixels)
/// let scores = try candidates.map { try reference.ssimulacra2($0.frames[0].pixels) }
/// ```
///
/// The metric, as the reference computes it: both images in linear sRGB (one with alpha blended over grey, 0.1 and
/// 0.9 in turn, the lower score kept, as libjxl's tool does; a distorted image with alpha over the same grey, or over
/// 0.5 when the reference is opaque), six scales from 1:1 to 1:32 (each halved in linear light), and at each scale,
/// in the XYB colour space rescaled to about 0–1, three error maps per channel from Gaussian-blurred (σ 1.5) means
/// and variances: SSIM without its luminance denominator, ringing (edges in the distorted image where the reference
/// is smooth) and blurring (the reverse), each pooled by its mean and its 4-norm; the 108 numbers weighted into one.
/// Single precision throughout, as libjxl's; the blur is the exact Gaussian (11 taps) where libjxl approximates it
/// recursively, with the edges the PyPI `ssimulacra2` package gives it (see `GaussianBlur`): scores agree with that
/// package's within 0.02; libjxl's tool pads with zeros all round, which moves scores near the edges of its coarse
/// scales (see `GaussianBlur`).
public enum ImageQuality {
    /// The SSIMULACRA 2 score of `distorted` against `reference` (their first frames, upright).
    ///
    /// - Throws: ``ImageQualityError`` when the sizes differ or are under 8 × 8 pixels; `CodecError` when pixels
    ///   cannot be converted.
    public static func ssimulacra2(reference: Image, distorted: Image) throws -> Double {
        try Reference(reference).ssimulacra2(distorted)
    }

    /// The SSIMULACRA 2 score of the pixels `distorted` against `reference`.
    ///
    /// - Throws: ``ImageQualityError`` when the sizes differ or are under 8 × 8 pixels; `CodecError` when pixels
    ///   cannot be converted.
    public static func ssimulacra2(reference: PixelBuffer, distorted: PixelBuffer) throws -> Double {
        try Reference(reference).ssimulacra2(distorted)
    }

    /// A reference image prepared for scoring: its linear planes, and at each scale its XYB planes, their blurred
    /// means and blurred squares, computed once for any number of candidates (about 36 floats a pixel).
    public struct Reference: Sendable {
        /// The reference's width and height.
        public let width: Int
        /// The height both images share.
        public let height: Int
        /// The prepared scales per background its alpha is blended over (0.5 alone for an opaque reference).
        private let prepared: [Float: [PreparedScale]]

        /// Prepares `image`'s first frame, upright.
        ///
        /// - Throws: ``ImageQualityError/tooSmall(width:height:)`` under 8 × 8 pixels; `CodecError` when its pixels
        ///   cannot be converted.
        public init(_ image: Image) throws {
            try self.init(Self.upright(image))
        }

        /// Prepares the pixels `pixels`.
        ///
        /// - Throws: ``ImageQualityError/tooSmall(width:height:)`` under 8 × 8 pixels; `CodecError` when the pixels
        ///   cannot be converted.
        public init(_ pixels: PixelBuffer) throws {
            guard pixels.width >= 8, pixels.height >= 8 else {
                throw ImageQualityError.tooSmall(width: pixels.width, height: pixels.height)
            }
            width = pixels.width
            height = pixels.height
            // As libjxl's ssimulacra2 tool: a reference with alpha is scored over a dark and a light background.
            let backgrounds: [Float] = pixels.format.hasAlpha ? [0.1, 0.9] : [0.5]
            var prepared: [Float: [PreparedScale]] = [:]
            for background in backgrounds {
                var scales: [PreparedScale] = []
                LinearPlanes.forEachScale(of: try LinearPlanes(pixels, background: background)) { _, xyb in
                    scales.append(PreparedScale(xyb))
                }
                prepared[background] = scales
            }
            self.prepared = prepared
        }

        /// The SSIMULACRA 2 score of `image`'s first frame, upright, against this reference.
        ///
        /// - Throws: ``ImageQualityError/sizesDiffer(reference:distorted:)``; `CodecError` when its pixels cannot be
        ///   converted.
        public func ssimulacra2(_ image: Image) throws -> Double {
            try ssimulacra2(Self.upright(image))
        }

        /// The SSIMULACRA 2 score of the pixels `distorted` against this reference.
        ///
        /// - Throws: ``ImageQualityError/sizesDiffer(reference:distorted:)``; `CodecError` when the pixels cannot be
        ///   converted.
        public func ssimulacra2(_ distorted: PixelBuffer) throws -> Double {
            guard distorted.width == width, distorted.height == height else {
                throw ImageQualityError.sizesDiffer(
                    reference: ImageSize(width: width, height: height),
                    distorted: ImageSize(width: distorted.width, height: distorted.height))
            }
            var lowest = Double.infinity
            // Over each background the reference was prepared for; a distorted image with alpha over the same one.
            for (background, references) in prepared {
                try Task.checkCancellation()
                var norms: [ScaleNorms] = []
                LinearPlanes.forEachScale(of: try LinearPlanes(distorted, background: background)) { scale, xyb in
                    norms.append(references[scale].compare(xyb))
                }
                lowest = min(lowest, ImageQuality.score(norms))
            }
            return lowest
        }

        static func upright(_ image: Image) throws -> PixelBuffer {
            try image.mappingFrames { $0 }.frames[0].pixels
        }
    }

    static let scaleCount = 6
}

/// Why two images could not be scored.
public enum ImageQualityError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The images are not the same size: the metric compares pixel by pixel.
    case sizesDiffer(reference: ImageSize, distorted: ImageSize)
    /// An image under 8 pixels on a side, which the metric's first scale cannot measure.
    case tooSmall(width: Int, height: Int)

    /// What went wrong, in a sentence for logs and error messages.
    public var description: String {
        switch self {
        case .sizesDiffer(let reference, let distorted):
            "the images differ in size: \(reference.width)x\(reference.height) and \(distorted.width)x\(distorted.height)"
        case .tooSmall(let width, let height):
            "the image is \(width)x\(height): SSIMULACRA 2 needs at least 8x8 pixels"
        }
    }
}
