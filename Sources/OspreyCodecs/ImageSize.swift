/// A width and a height in pixels.
public struct ImageSize: Sendable, Hashable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// Makes a size.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Width times height, or `Int.max` when that overflows (a hostile header's sides can be 2³² each).
    public var pixelCount: Int { ImageDecoder.saturating(width, height) }

    /// The size with width and height exchanged.
    public var transposed: ImageSize { ImageSize(width: height, height: width) }

    /// The value as logs and messages print it.
    public var description: String { "\(width)x\(height)" }
}
