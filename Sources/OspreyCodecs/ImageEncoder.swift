/// Encodes an ``Image`` as JPEG, PNG, WebP or GIF, or any format registered with the ``ImageCoderRegistry`` the
/// options name (``EncodingOptions/coders``).
///
/// The pixels are turned upright first when the image still carries an orientation. Animated images keep every
/// frame, duration and the loop count in GIF and WebP; JPEG and PNG take the first frame. JPEG, PNG and WebP carry
/// the image's colour profile when it kept one (``EncodingOptions/embedsColorProfile``).
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
    /// - Throws: ``CodecError/unsupportedFormat`` when no encoder for `format` is registered;
    ///   ``CodecError/encodingFailed(format:reason:)`` with the library's message.
    public static func encode(
        _ image: Image, as format: ImageFormat, options: EncodingOptions = EncodingOptions()
    ) throws(CodecError) -> [UInt8] {
        guard let encoder = options.coders.encoder(for: format) else { throw .unsupportedFormat }
        return try encoder.encode(image.upright(), options: options)
    }

    /// What is written beside the pixels of `image` as `format`: its profile when kept (or sRGB's when asked to tag),
    /// if it fits the channels the format writes, and what the metadata policy keeps of its EXIF and XMP.
    static func containerMetadata(
        for image: Image, format: ImageFormat, options: EncodingOptions
    ) -> ContainerMetadata {
        // WebP, AVIF and JPEG XL write gray as RGB; JPEG and PNG keep gray (JPEG drops alpha).
        let writesGray = ![ImageFormat.webp, .avif, .jxl].contains(format) && !image.pixelFormat.hasColor
        let fits: (ColorProfile) -> Bool = { $0.colorSpace == (writesGray ? .gray : .rgb) }
        var metadata = ContainerMetadata()
        if options.embedsColorProfile, let profile = image.colorProfile, fits(profile) {
            metadata.profile = profile.data
        } else if options.tagsSRGB, image.colorProfile == nil || !options.embedsColorProfile, !writesGray {
            metadata.profile = ColorProfile.sRGB.data
        }
        let kept = image.metadata.kept(by: options.metadata)
        (metadata.exif, metadata.xmp) = (kept.exif, kept.xmp)
        return metadata
    }
}
