/// How the bytes of one pixel are laid out: 8 bits per channel, channels interleaved, alpha (when present) straight,
/// not premultiplied — the layouts the decoders naturally produce.
public enum PixelFormat: String, Sendable, Hashable, CaseIterable {
    /// One luminance byte (grayscale JPEG, grayscale PNG).
    case gray8
    /// Luminance then alpha (grayscale PNG with alpha).
    case grayAlpha8
    /// Red, green, blue (JPEG, opaque PNG and WebP).
    case rgb8
    /// Red, green, blue, alpha (PNG and WebP with alpha, composited GIF frames).
    case rgba8

    /// Bytes per pixel: 1, 2, 3 or 4.
    public var bytesPerPixel: Int {
        switch self {
        case .gray8: 1
        case .grayAlpha8: 2
        case .rgb8: 3
        case .rgba8: 4
        }
    }

    /// Whether the layout has colour channels (RGB), not luminance alone.
    public var hasColor: Bool { self == .rgb8 || self == .rgba8 }

    /// Whether the layout has an alpha channel (which may still be fully opaque).
    public var hasAlpha: Bool {
        switch self {
        case .grayAlpha8, .rgba8: true
        case .gray8, .rgb8: false
        }
    }
}
