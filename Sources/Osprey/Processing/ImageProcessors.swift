public import OspreyCodecs

/// The built-in processors, each a value type whose ``ImageProcessing/identifier`` names every
/// parameter. Call sites read `.resize(width: 300)`, `.blur(radius: 4)` through the static factories on
/// ``ImageProcessing``:
///
/// ```swift
/// let request = try ImageRequest(url: url, processors: [.resize(width: 300, height: 300, fit: .cover), .circle()])
/// let thumbnail = try ImageProcessors.Resize(width: 256, height: 256).process(image)
/// ```
///
/// Processors work on the image as displayed: one that kept its stored orientation is turned upright first. Every
/// processor applies to every frame of an animation and keeps the frames' durations and the loop count. They are
/// pure (no shared state, safe on any thread) and check for cancellation between frames and, in the long loops,
/// between rows.
public enum ImageProcessors {}

/// A processor was given parameters it cannot work with (a negative size, a crop outside the image).
public struct ImageProcessingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The identifier of the processor that refused.
    public var processor: String
    /// What is wrong, and what would be right.
    public var reason: String

    /// Makes the error for the processor identified by `processor`, saying `reason`.
    public init(processor: String, reason: String) {
        self.processor = processor
        self.reason = reason
    }

    /// What went wrong, in a sentence for logs and error messages.
    public var description: String { "\(processor): \(reason)" }
}

/// A point of an image in fractions of its size: (0, 0) is the top-left corner, (1, 1) the bottom-right. Which part
/// of an image `cover` and `crop(size:)` keep.
///
/// The processors read it through ``clamped``, so a value set outside 0...1 after `init` (or NaN) still places a
/// rectangle inside the image.
public struct Anchor: Sendable, Hashable, CustomStringConvertible {
    /// 0 at the left edge, 1 at the right; a value outside is used as the nearer edge.
    public var x: Double
    /// 0 at the top edge, 1 at the bottom; a value outside is used as the nearer edge.
    public var y: Double

    /// Makes an anchor; each coordinate is clamped to 0...1 (NaN becomes 0.5).
    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
        (self.x, self.y) = clamped
    }

    /// The middle.
    public static let center = Anchor(x: 0.5, y: 0.5)
    /// The middle of the top edge.
    public static let top = Anchor(x: 0.5, y: 0)
    /// The middle of the bottom edge.
    public static let bottom = Anchor(x: 0.5, y: 1)
    /// The middle of the left edge.
    public static let left = Anchor(x: 0, y: 0.5)
    /// The middle of the right edge.
    public static let right = Anchor(x: 1, y: 0.5)
    /// The top-left corner.
    public static let topLeft = Anchor(x: 0, y: 0)
    /// The top-right corner.
    public static let topRight = Anchor(x: 1, y: 0)
    /// The bottom-left corner.
    public static let bottomLeft = Anchor(x: 0, y: 1)
    /// The bottom-right corner.
    public static let bottomRight = Anchor(x: 1, y: 1)

    /// The coordinates as processors use them: each within 0...1, NaN read as the middle.
    public var clamped: (x: Double, y: Double) {
        func unit(_ value: Double) -> Double { value.isNaN ? 0.5 : min(max(value, 0), 1) }
        return (unit(x), unit(y))
    }

    /// `x:y`, each in Swift's shortest round-tripping form: `0.5:0.5`.
    public var description: String { "\(x):\(y)" }
}

/// An 8-bit sRGB colour with straight alpha: for tints, overlays, borders and the background of corners.
public struct PixelColor: Sendable, Hashable, CustomStringConvertible {
    /// Red, 0–255.
    public var red: UInt8
    /// Green, 0–255.
    public var green: UInt8
    /// Blue, 0–255.
    public var blue: UInt8
    /// Opacity, 0 (transparent) to 255 (opaque).
    public var alpha: UInt8

    /// Makes a colour; opaque unless `alpha` says otherwise.
    public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
        self.red = red
        self.green = green
        self.blue = blue
        self.alpha = alpha
    }

    /// Opaque black.
    public static let black = PixelColor(red: 0, green: 0, blue: 0)
    /// Opaque white.
    public static let white = PixelColor(red: 255, green: 255, blue: 255)
    /// Fully transparent.
    public static let clear = PixelColor(red: 0, green: 0, blue: 0, alpha: 0)

    /// `#rrggbbaa`, lower case.
    public var description: String {
        "#" + [red, green, blue, alpha].map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}

extension ImageProcessors {
    /// Several processors run in order, as one: its identifier is theirs joined, so a list and its composition share
    /// cache entries.
    public struct Composition: ImageProcessing {
        /// The processors, in the order they run.
        public let processors: [any ImageProcessing]

        /// Makes one processor that runs `processors` in order.
        public init(_ processors: [any ImageProcessing]) {
            self.processors = processors
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String { processors.compositeIdentifier }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            try processors.reduce(image) { image, processor in
                try Task.checkCancellation()
                return try processor.process(image)
            }
        }
    }
}

extension ImageProcessing where Self == ImageProcessors.Composition {
    /// `processors` run in order, as one processor.
    public static func composition(_ processors: [any ImageProcessing]) -> Self {
        ImageProcessors.Composition(processors)
    }
}

extension Image {
    /// The image with `transform` applied to every frame's pixels (upright first), keeping durations, the loop count,
    /// the source format, the colour profile and the metadata; cancellation is checked between frames.
    package func mappingFrames(_ transform: (PixelBuffer) throws -> PixelBuffer) throws -> Image {
        let turn = orientation
        let frames = try frames.map { frame in
            try Task.checkCancellation()
            let upright = turn == .up ? frame.pixels : try frame.pixels.applying(turn)
            return ImageFrame(pixels: try transform(upright), duration: frame.duration)
        }
        var image = try Image(frames: frames, loopCount: loopCount, orientation: .up, sourceFormat: sourceFormat)
        // Processing changes where pixels are, not what their values mean nor who made them.
        image.colorProfile = colorProfile
        image.metadata = metadata
        return image
    }

    /// The size as displayed: width and height swapped when the stored orientation turns the image a quarter.
    package var uprightSize: (width: Int, height: Int) {
        orientation.swapsDimensions ? (height, width) : (width, height)
    }
}
