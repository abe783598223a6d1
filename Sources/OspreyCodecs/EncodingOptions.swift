/// How ``ImageEncoder`` encodes.
///
/// ```swift
/// var options = EncodingOptions()
/// options.quality = 80
/// options.isProgressive = true
/// let jpeg = try ImageEncoder.encode(image, as: .jpeg, options: options)
/// ```
public struct EncodingOptions: Sendable, Hashable {
    /// Lossy quality from 0 (smallest) to 100 (best), for JPEG, lossy WebP, AVIF and JPEG XL. 85 by default.
    public var quality = 85
    /// JPEG: write a progressive file. `false` by default.
    public var isProgressive = false
    /// JPEG and AVIF: how colour is subsampled. `.automatic` by default: full colour at quality 90 and above, halved in both
    /// directions below, as libvips does.
    public var chromaSubsampling = ChromaSubsampling.automatic
    /// PNG: zlib compression level from 0 (fastest) to 9 (smallest), for gray and truecolour images. 6 by default. A
    /// palette (a byte or less per pixel) is always written at 9, as pngquant writes it.
    public var pngCompressionLevel = 6
    /// PNG: below 100, a colour image is quantised to a palette of at most 256 colours by libimagequant, aiming at
    /// this quality (0–100, as pngquant's `--quality 0-N`), dithered, its transparency kept: a fraction of the
    /// lossless bytes for a photo or an illustration with gradients; gray is widened to colour first (a gray colour
    /// profile is then left out). `nil` by default: lossless (a colour image of at most 256 colours is written in a
    /// palette either way, pixel for pixel).
    public var pngPaletteQuality: Int?

    /// ``pngPaletteQuality`` when it asks for a palette (below 100), else `nil`: the one place the rule is read.
    package var palettePNGQuality: Int? { pngPaletteQuality.flatMap { $0 < 100 ? $0 : nil } }
    /// WebP, AVIF and JPEG XL: encode losslessly, ignoring ``quality`` (AVIF: 4:4:4 with the identity matrix, so
    /// that the RGB values come back exactly). `false` by default.
    public var isLossless = false
    /// AVIF: libaom's speed, from 0 (slowest) to 10 (fastest). 8 by default, a server's setting (as imgproxy's):
    /// 102 ms for a 1920×1080 photo on one thread, where 6 takes 420 ms and 4 3.5 s (docs/benchmarks.md).
    public var avifSpeed = 8
    /// JPEG XL: libjxl's effort, from 1 (fastest) to 9 (smallest). 4 by default, a server's setting (as imgproxy's;
    /// cjxl's is 7).
    public var jxlEffort = 4
    /// WebP: libwebp's method, from 0 (fastest) to 6 (smallest). 4 by default, libwebp's own (and cwebp's).
    public var webpMethod = 4
    /// JPEG (which has no alpha): the colour transparent pixels are composited over, as RGB. White by default.
    public var background = Color(red: 255, green: 255, blue: 255)

    // MARK: Colour

    /// Embed the image's ``Image/colorProfile`` (one a decoder kept with ``ColorHandling/keepProfile``) in JPEG,
    /// PNG and WebP, so the pixels keep meaning what they meant. `true` by default. A profile that does not fit the
    /// output (a gray profile in an RGB-only WebP) is left out.
    public var embedsColorProfile = true
    /// What to keep of the image's ``Image/metadata``: nothing (the default: no EXIF, no XMP, so no GPS position
    /// leaks), the copyright fields, or all of it with the orientation reset. See ``ImageMetadata/Policy``. JPEG, PNG
    /// and WebP carry it; GIF does not.
    public var metadata = ImageMetadata.Policy.strip
    /// Tag output without a profile as sRGB with a compact sRGB profile (a few hundred bytes) instead of leaving it
    /// untagged, which readers also take as sRGB. `false` by default.
    public var tagsSRGB = false

    /// The encoders to choose from: ``ImageCoderRegistry/shared`` (the built-in ones and any registered there) by
    /// default.
    public var coders = ImageCoderRegistry.shared

    /// Makes the default options.
    public init() {}

    /// The encoders' effort on one scale, from 1 (fastest) to 9 (smallest files), for whichever of WebP, AVIF and JPEG
    /// XL is written: JPEG XL's ``jxlEffort`` is `effort` itself, AVIF's ``avifSpeed`` is 10 − `effort` (9 … 1), and
    /// WebP's ``webpMethod`` spreads 0 … 6 over it (1–2: 0, 3: 1, 4: 2, 5–6: 3, 7: 4, 8: 5, 9: 6). Each format's
    /// default stands on its own measurement (docs/benchmarks.md): WebP's method 4 is effort 7, AVIF's speed 8 is 2,
    /// JPEG XL's 4 is 4. Values outside 1…9 are clamped.
    public mutating func setEffort(_ effort: Int) {
        let effort = min(max(effort, 1), 9)
        jxlEffort = effort
        avifSpeed = 10 - effort
        webpMethod = (effort - 1) * 6 / 8
    }

    /// JPEG chroma subsampling.
    public enum ChromaSubsampling: Sendable, Hashable {
        /// `.yuv444` at quality 90 and above, `.yuv420` below.
        case automatic
        /// Full-resolution colour (largest files, sharpest colour edges).
        case yuv444
        /// Colour halved horizontally.
        case yuv422
        /// Colour halved in both directions.
        case yuv420
    }

    /// An opaque colour.
    public struct Color: Sendable, Hashable {
        /// Red, 0–255.
        public var red: UInt8
        /// Green, 0–255.
        public var green: UInt8
        /// Blue, 0–255.
        public var blue: UInt8

        /// Makes a colour from its components.
        public init(red: UInt8, green: UInt8, blue: UInt8) {
            self.red = red
            self.green = green
            self.blue = blue
        }
    }
}
