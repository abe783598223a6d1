/// Encodes an ``Image`` as JPEG, PNG, WebP or GIF.
///
/// The pixels are turned upright first when the image still carries an orientation, since no encoder here writes
/// EXIF. Animated images keep every frame, duration and the loop count in GIF and WebP; JPEG and PNG take the first
/// frame.
///
/// ```swift
/// let webp = try ImageEncoder.encode(image, as: .webp, quality: 80)
/// let png = try ImageEncoder.encode(image, as: .png)
/// ```
public enum ImageEncoder {
    /// Encodes `image` as `format` at `quality` (0…100, for JPEG and lossy WebP), other options at their defaults.
    public static func encode(_ image: Image, as format: ImageFormat, quality: Int) throws(CodecError) -> [UInt8] {
        var options = EncodingOptions()
        options.quality = quality
        return try encode(image, as: format, options: options)
    }

    /// Encodes `image` as `format`.
    ///
    /// - Throws: ``CodecError/unsupportedFormat`` for `.unknown`; ``CodecError/encodingFailed(format:reason:)`` with
    ///   the library's message.
    public static func encode(
        _ image: Image, as format: ImageFormat, options: EncodingOptions = EncodingOptions()
    ) throws(CodecError) -> [UInt8] {
        var frames = image.frames
        if image.orientation != .up {
            frames = try frames.map { frame throws(CodecError) in
                ImageFrame(pixels: try frame.pixels.applying(image.orientation), duration: frame.duration)
            }
        }
        switch format {
        case .jpeg: return try JPEGEncoder.encode(frames[0].pixels, options: options)
        case .png: return try PNGEncoder.encode(frames[0].pixels, options: options)
        case .webp: return try WebPEncoder.encode(frames, loopCount: image.loopCount, options: options)
        case .gif: return try GIFEncoder.encode(frames, loopCount: image.loopCount)
        case .unknown: throw .unsupportedFormat
        }
    }
}
