import FoundationEssentials
public import OspreyCodecs

/// What an encoded image says of itself, read without decoding a pixel — format, size as displayed, orientation,
/// frames and their durations, alpha, bit depth, colour profile, camera EXIF — and, once given its pixels
/// (``addPlaceholders(_:blurComponents:colors:)``), its placeholders: what `osprey info --json` prints and the
/// proxy's `/info` answers.
///
/// ```swift
/// var info = try ImageInfo(data: bytes)
/// info.width                                     // 4032, upright
/// try info.addPlaceholders(ImagePlaceholders(thumbnail))
/// let json = info.json(includingGPS: false)     // {"alpha":false,"averageColor":"#7a8c6e",…}
/// ```
public struct ImageInfo: Sendable, Hashable, Codable {
    /// The format's name: `jpeg`, `png`, `gif`, `webp`, `avif`, `heic`, `jxl`, …
    public var format: String
    /// The format's media type.
    public var contentType: String
    /// The size of the file in bytes.
    public var bytes: Int
    /// The width as displayed, after the orientation is applied.
    public var width: Int
    /// The height as displayed.
    public var height: Int
    /// The EXIF orientation, 1 to 8.
    public var orientation: Int
    /// How many frames (1 for a still image; an APNG's as its `acTL` says, though Osprey renders its default image).
    public var frames: Int
    /// Each frame's duration in milliseconds (none for a still image).
    public var durations: [Int]
    /// How many times an animation plays; 0 forever.
    public var loopCount: Int
    /// Whether the image has an alpha channel or transparency (a PNG `tRNS`, a GIF's transparent index).
    public var alpha: Bool
    /// Bits per sample as stored: 8 for most images, 16 for a 16-bit PNG, 10 or 12 for HDR AVIF, HEIC and JPEG XL.
    public var bitDepth: Int
    /// The embedded colour profile's description (empty when it has none), when there is a profile.
    public var profile: String?
    /// The colour space the embedded profile describes (`rgb`, `gray`, `cmyk`).
    public var colorSpace: String?
    /// Why the embedded colour profile cannot be used, when it cannot.
    public var profileIgnored: String?
    /// What the EXIF says of the camera and the shot, when it says anything.
    public var exif: ImageMetadata.Camera?

    /// The BlurHash of the image (``ImagePlaceholders/blurHash(componentsX:componentsY:)``), once added.
    public var blurHash: String?
    /// The ThumbHash, in base64.
    public var thumbHash: String?
    /// The mean colour, `#rrggbb`.
    public var averageColor: String?
    /// The dominant colours, most common first.
    public var dominantColors: [Swatch]?
    /// The 64-bit perceptual hash, 16 hexadecimal digits.
    public var perceptualHash: String?

    /// A colour of the palette and the share of the pixels it stands for (0 to 1, to 4 decimals).
    public struct Swatch: Sendable, Hashable, Codable {
        /// A colour, `#rrggbb`.
        public var color: String
        /// Its share of the image's pixels, 0–1.
        public var weight: Double
    }

    /// Reads `data`'s header, frames, colour profile and EXIF; `byteCount` is the file's size when `data` is only its
    /// beginning (a JPEG's header lies in its first mebibyte).
    ///
    /// - Throws: `CodecError` when the header cannot be read or the file has no complete frame.
    public init(data: [UInt8], byteCount: Int? = nil, coders: ImageCoderRegistry = .shared) throws(CodecError) {
        let header = try ImageHeader(reading: data, coders: coders)
        // An APNG is described as the animation it holds, though its default image is what Osprey renders.
        var frames = try ImageHeader.frames(in: data)
        if let animation = ImageHeader.animatedPNGFrames(in: data) { frames = animation }
        guard frames.count > 0 else {
            throw CodecError.malformed(format: header.format, reason: "no complete frame in the file")
        }
        let profile = ColorProfile(embeddedIn: data)
        format = header.format.name
        contentType = header.format.mimeType
        bytes = byteCount ?? data.count
        (width, height) = (header.displaySize.width, header.displaySize.height)
        orientation = header.orientation.rawValue
        self.frames = frames.count
        durations = frames.durations.map { Int($0 / .milliseconds(1)) }
        loopCount = frames.loopCount
        alpha = header.hasAlpha
        bitDepth = header.bitDepth
        self.profile = profile.map { $0.name ?? "" }
        colorSpace = profile?.colorSpace.rawValue
        profileIgnored = profile == nil ? ColorProfile.reasonIgnored(embeddedIn: data) : nil
        exif = ImageMetadata(embeddedIn: data).camera
    }

    /// Adds `placeholders`' BlurHash (`blurComponents` on each axis, 4 × 3 by default), ThumbHash, average colour,
    /// `colors` dominant colours (5 by default) and perceptual hash.
    ///
    /// - Throws: `ImageProcessingError` for BlurHash components outside 1…9.
    public mutating func addPlaceholders(
        _ placeholders: ImagePlaceholders, blurComponents: (x: Int, y: Int) = (4, 3), colors: Int = 5
    ) throws {
        blurHash = try placeholders.blurHash(componentsX: blurComponents.x, componentsY: blurComponents.y)
        thumbHash = try placeholders.thumbHash()
        averageColor = placeholders.averageColor
        dominantColors = placeholders.dominantColors(count: colors).map {
            Swatch(color: $0.color, weight: ($0.weight * 10_000).rounded() / 10_000)
        }
        perceptualHash = placeholders.perceptualHash
    }

    /// The JSON object, keys sorted, fields without a value left out; the GPS position only when `includingGPS` (a
    /// photo's location is its author's to give, not a proxy's).
    public func json(includingGPS: Bool) -> [UInt8] {
        var shown = self
        if !includingGPS { shown.exif?.gps = nil }
        if shown.exif?.isEmpty == true { shown.exif = nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings, integers, finite numbers and arrays of them always encode.
        return (try? encoder.encode(shown)).map { Array($0) } ?? []
    }
}
