/// A decoder for one image format, as the ``ImageCoderRegistry`` consults it: whether some bytes are its format,
/// what their header says, what decoding them takes, and the decode.
///
/// A decoder returns the pixels as the file stores them, with the ``Image/orientation`` and
/// ``Image/colorProfile`` the file gives; ``ImageDecoder`` then applies what the ``DecodingOptions`` ask
/// (conversion to sRGB, turning upright), so that a new format gets the same colour and orientation handling as the
/// built-in ones. ``ImageDecoder`` also checks the header against ``DecodingOptions/limits`` before calling
/// ``decode(_:options:)``, and the decoded image after it; a decoder that can decode scaled down may read
/// ``DecodingOptions/targetSize`` and ``DecodingOptions/pixelBudget``.
///
/// ```swift
/// struct PPMDecoder: ImageDecoding {
///     var format: ImageFormat { .ppm }
///     func recognizes(_ prefix: UnsafeRawBufferPointer) -> Bool { prefix.starts(with: [0x50, 0x36]) }  // "P6"
///     func header(of data: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader { ... }
///     func decode(_ data: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image { ... }
/// }
/// ImageCoderRegistry.shared.register(PPMDecoder())
/// ```
public protocol ImageDecoding: Sendable {
    /// The format this decoder reads.
    var format: ImageFormat { get }
    /// The most leading bytes ``recognizes(_:)`` needs. 12 by default.
    var signatureLength: Int { get }
    /// Whether `prefix`, the first bytes of some data (at most ``signatureLength`` of them, possibly fewer, possibly
    /// none), begins an image of this format. Called for every image sniffed: it should look at the bytes and nothing
    /// else.
    func recognizes(_ prefix: UnsafeRawBufferPointer) -> Bool
    /// What the header of `data` says (``ImageHeader/format`` must be ``format``), read without decoding pixels.
    ///
    /// - Throws: ``CodecError/malformed(format:reason:)`` for a header that cannot be read.
    func header(of data: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader
    /// What decoding `data` with `options` will take. By default: the header's size at 4 bytes a pixel, one frame,
    /// and a turned copy when the image has an orientation to apply.
    func memoryEstimate(_ data: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> DecodingEstimate
    /// Decodes `data`: the stored pixels, the orientation and profile the file gives, and its metadata when
    /// ``DecodingOptions/readsMetadata`` asks.
    func decode(_ data: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image
}

extension ImageDecoding {
    /// 12 bytes, what the built-in formats need; a coder whose signature is longer says so.
    public var signatureLength: Int { 12 }

    /// The memory decoding `data` as `options` ask takes, from its header: what a budget reserves first.
    public func memoryEstimate(
        _ data: UnsafeRawBufferPointer, options: DecodingOptions
    ) throws(CodecError) -> DecodingEstimate {
        let header = try header(of: data)
        let bytes = ImageDecoder.saturating(header.width, header.height, 4)
        let upright = header.orientation != .up && !options.keepsStoredOrientation ? bytes : 0
        return DecodingEstimate(
            width: header.width, height: header.height, channels: 4, frameCount: 1, imageBytes: bytes,
            peakBytes: ImageDecoder.saturating(sum: bytes, upright))
    }
}

/// An encoder for one image format, as the ``ImageCoderRegistry`` consults it.
///
/// ``ImageEncoder`` hands it an image already turned upright (``Image/orientation`` is `.up`); the encoder writes
/// what ``EncodingOptions`` ask of its format (quality, the profile, the metadata policy) where the format can carry
/// it, and ignores what it cannot.
public protocol ImageEncoding: Sendable {
    /// The format this encoder writes.
    var format: ImageFormat { get }
    /// Encodes `image` (upright; one frame, or several for a format that animates).
    ///
    /// - Throws: ``CodecError/encodingFailed(format:reason:)``.
    func encode(_ image: Image, options: EncodingOptions) throws(CodecError) -> [UInt8]
}
