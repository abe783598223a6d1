/// What an encoded image's header says — format and stored size — read without decoding a single pixel.
///
/// A proxy checks ``pixelCount`` against its limit before it lets a decoder allocate anything. Each
/// format's header is read by its own C library, so what passes here is what the decoder will accept as a header.
///
/// ```swift
/// let header = try ImageHeader(reading: data)
/// guard header.pixelCount <= 50_000_000 else { throw ... }
/// ```
public struct ImageHeader: Sendable, Hashable {
    /// The detected format; never ``ImageFormat/unknown``.
    public let format: ImageFormat
    /// Width in pixels, as stored (before EXIF orientation). For GIF, the logical screen; for animated WebP, the
    /// canvas.
    public let width: Int
    /// Height in pixels, as stored (before EXIF orientation).
    public let height: Int
    /// The EXIF orientation of a JPEG, a PNG (`eXIf`) or a WebP (`.up` without one, and for GIF): how the decoder
    /// will turn the stored pixels.
    public let orientation: ImageOrientation

    /// Whether the image has an alpha channel or transparency: a PNG's `tRNS`, a GIF's transparent colour index, an
    /// alpha plane (AVIF, HEIC, JPEG XL), WebP's alpha. Read from the header and the container, not the pixels.
    public var hasAlpha = false
    /// Bits per sample as stored: 8 for most images; 16 (or 1, 2, 4) for a PNG of that depth, 12 for a 12-bit
    /// JPEG, 10 or 12 for a high-bit-depth AVIF, HEIC or JPEG XL.
    public var bitDepth = 8

    /// The channels a decode produces (1 gray, 2 gray and alpha, 3 RGB, 4 RGBA): what a memory estimate counts per
    /// pixel. 4 when the header does not say.
    var channels = 4
    /// What the decoder needs beside its output: a progressive JPEG's coefficient arrays.
    var workingBytes = 0
    /// The channels the file stores: a CMYK JPEG's 4, which a profile converts from a buffer of their own.
    var storedChannels = 4

    /// Makes a header from known values.
    public init(format: ImageFormat, width: Int, height: Int, orientation: ImageOrientation = .up) {
        self.format = format
        self.width = width
        self.height = height
        self.orientation = orientation
    }

    /// The size as displayed, once the orientation is applied: what a decoder returns by default.
    public var displaySize: ImageSize {
        let size = ImageSize(width: width, height: height)
        return orientation.swapsDimensions ? size.transposed : size
    }

    /// Reads the header of `data` with the decoder of `coders` that recognises it.
    ///
    /// - Throws: ``CodecError/unsupportedFormat`` when no decoder recognises the data,
    ///   ``CodecError/malformed(format:reason:)`` with the library's message when the header is damaged or cut short.
    public init(reading data: some Collection<UInt8>, coders: ImageCoderRegistry = .shared) throws(CodecError) {
        let result: Result<ImageHeader, CodecError> =
            data.withContiguousStorageIfAvailable { Self.read(UnsafeRawBufferPointer($0), coders: coders) }
            ?? Array(data).withUnsafeBytes { Self.read($0, coders: coders) }
        self = try result.get()
    }

    /// Width times height, or `Int.max` when that overflows (a hostile header's sides can be 2³² each).
    public var pixelCount: Int { ImageDecoder.saturating(width, height) }

    /// Headers are equal when what they say publicly is: format, size and orientation.
    public static func == (lhs: ImageHeader, rhs: ImageHeader) -> Bool {
        lhs.format == rhs.format && lhs.width == rhs.width && lhs.height == rhs.height
            && lhs.orientation == rhs.orientation
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(format)
        hasher.combine(width)
        hasher.combine(height)
        hasher.combine(orientation)
    }

    static func read(
        _ bytes: UnsafeRawBufferPointer, coders: ImageCoderRegistry = .shared
    ) -> Result<ImageHeader, CodecError> {
        Result { () throws(CodecError) -> ImageHeader in
            guard let decoder = coders.decoder(recognizing: bytes) else { throw .unsupportedFormat }
            return try decoder.header(of: bytes)
        }
    }
}
