/// How ``ImageDecoder`` decodes: scaling, frames, orientation, partial data, and the limits that keep hostile input
/// from costing unbounded memory or time.
///
/// ```swift
/// var options = DecodingOptions()
/// options.pixelBudget = 4_000_000        // decode large photos downscaled
/// options.firstFrameOnly = true
/// let image = try ImageDecoder.decode(data, options: options)
/// ```
public struct DecodingOptions: Sendable, Hashable {
    // MARK: Size

    /// Decode scaled down as far as possible while the result stays at least this large in both dimensions, given
    /// in display orientation. JPEG scales by M/8 inside the decoder (DCT scaling), WebP stills by any factor; other
    /// formats decode at full size. `nil` (full size) by default.
    public var targetSize: ImageSize?
    /// Decode scaled down so that the result has at most this many pixels, where the format allows (JPEG, WebP
    /// stills); a full-size decode is never made first. `nil` (no budget) by default.
    public var pixelBudget: Int?

    // MARK: Content

    /// Decode only the first frame of an animated GIF or WebP. `false` by default.
    public var firstFrameOnly = false
    /// Keep the pixels as stored and report the EXIF orientation in ``Image/orientation`` instead of turning them
    /// upright. `false` by default: pixels come out upright and the image reports `.up`.
    public var keepsStoredOrientation = false
    /// What to do with the colour profile a file embeds: convert the pixels to sRGB (the default), keep the profile
    /// on ``Image/colorProfile`` with the pixels as stored, or ignore it. See ``ColorHandling``.
    public var colorHandling = ColorHandling.convertToSRGB
    /// Read the file's EXIF and XMP onto ``Image/metadata``. `true` by default.
    public var readsMetadata = true
    /// Accept data that ends early, returning what was decoded (the rest transparent or black) instead of throwing
    /// ``CodecError/truncated(format:)``. `false` by default.
    public var allowsPartialImages = false

    /// The decoders to choose from: ``ImageCoderRegistry/shared`` (the built-in ones and any registered there) by
    /// default.
    public var coders = ImageCoderRegistry.shared

    /// Stops the decode when cancelled (see ``DecodingCancellation``): `nil` (runs to its end) by default.
    public var cancellation: DecodingCancellation?

    // MARK: Limits

    /// Limits checked before any pixel buffer is allocated.
    public var limits = Limits()

    /// Makes the default options.
    public init() {}

    /// The bounds hostile input cannot push a decode past.
    public struct Limits: Sendable, Hashable {
        /// The most pixels a decode may produce, all frames counted: 100 million by default (400 MB of RGBA). This is
        /// what a decode allocates: a JPEG scaled down by its decoder (``DecodingOptions/targetSize``,
        /// ``DecodingOptions/pixelBudget``) is counted at its decoded size. See ``maxSourcePixelCount`` for a limit on
        /// the size the file declares.
        public var maxPixelCount = 100_000_000
        /// The most pixels the image may declare in its header (width × height, before any scaling), checked before
        /// anything is decoded, whatever the format and whatever scale it would be decoded at. `nil` (no limit but
        /// ``maxPixelCount``) by default: decoding a huge JPEG at 1/8 is what ``DecodingOptions/pixelBudget`` is for.
        /// A proxy sets it, so that a request for a thumbnail cannot make it work through an image 64 times larger
        /// than the limit it advertises.
        public var maxSourcePixelCount: Int?
        /// The most frames an animation may have: 1,000 by default.
        public var maxFrameCount = 1_000
        /// The most scans a progressive JPEG may have: 500 by default. Each scan re-reads the whole image.
        public var maxScanCount = 500

        /// Makes the default limits.
        public init() {}

        /// The working memory libjpeg may use beside the output (a progressive file buffers all its coefficients):
        /// 8 bytes per allowed pixel, at least 256 MiB.
        var maxDecoderMemory: Int { max(maxPixelCount.multipliedReportingOverflow(by: 8).partialValue, 256 << 20) }
    }
}
