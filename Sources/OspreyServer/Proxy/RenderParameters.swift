import FoundationEssentials
import Osprey
import OspreyCodecs

/// What a request asks of a source, whichever URL style said it: `/img`'s query (``init(query:maxOutputPixels:coders:presets:presetsOnly:allowsLocalSources:hasWatermark:)``),
/// an imgproxy path (``ImgproxyURL``) or a thumbor path (``ThumborURL``). Each style's parser fills the same fields,
/// and ``processors(watermark:)`` and ``ImageProxy/output(_:accepted:configuration:)`` turn them into the
/// pipeline's operations: the same render asked in any style is one operation list, so one cache entry, one ETag.
struct RenderParameters: Sendable {
    /// What `format=` asks for: a format an encoder of the server's registry writes, or `auto` (WebP when the client
    /// accepts it, else the source's format or the common one that fits).
    enum OutputFormat: Sendable, Equatable {
        case auto
        /// The smallest of the formats the client accepts at one perceptual target.
        case best
        case encoded(ImageFormat)

        /// As it appears in the canonical form.
        var name: String {
            switch self {
            case .auto: "auto"
            case .best: "best"
            case .encoded(let format): format.name
            }
        }

        /// Whether the answer depends on the client's `Accept`.
        var variesByAccept: Bool { self == .auto || self == .best }
    }

    /// The region of the source kept before resizing.
    enum CropRegion: Sendable, Equatable {
        /// `/img`'s `crop=x:y:w:h` and thumbor's `AxB:CxD`: pixels of the upright source.
        case rect(x: Int, y: Int, width: Int, height: Int)
        /// imgproxy's `crop:w:h:gravity`: sides in pixels (1 or more) or fractions (less than 1; 0 the whole side),
        /// placed by a gravity with offsets.
        case gravity(width: Double, height: Double, anchor: Anchor, offsetX: Double, offsetY: Double)
        /// imgproxy's `crop:w:h:fp:x:y`: centred on a focus point.
        case focus(width: Double, height: Double, x: Double, y: Double)

        var region: ImageProcessors.Crop.Region {
            switch self {
            case .rect(let x, let y, let width, let height): .rect(x: x, y: y, width: width, height: height)
            case .gravity(let width, let height, let anchor, let offsetX, let offsetY):
                .gravity(width: width, height: height, anchor: anchor, offsetX: offsetX, offsetY: offsetY)
            case .focus(let width, let height, let x, let y): .focus(width: width, height: height, x: x, y: y)
            }
        }
    }

    /// Where an extended canvas puts the image: an anchor, moved by offsets (imgproxy's gravity offsets).
    struct Placement: Sendable, Equatable {
        var anchor = Anchor.center
        var offsetX = 0.0
        var offsetY = 0.0
    }

    var source: URL
    /// The path of a `local:///path` source (percent-decoded), read under the server's local root; `nil` for a URL.
    var localPath: String?

    // MARK: Geometry

    var width: Int?
    var height: Int?
    var fit: ImageProcessors.Resize.Fit = .inside
    /// `enlarge=1`: a source smaller than the box is enlarged to it.
    var enlarges = false
    /// `mw`, `mh`: the least size of the result (imgproxy's `min-width` and `min-height`).
    var minWidth: Int?
    var minHeight: Int?
    /// `zoom=x[:y]`: multiplies the scale the box gives.
    var zoomX = 1.0
    var zoomY = 1.0
    /// Where a `fit=cover` crop or an `extend` canvas places the image (`gravity=`); `nil` for the centre.
    var gravity: Anchor?
    /// `gravity=name:x:y`: the crop moved from the gravity's edge (imgproxy's offsets).
    var gravityOffsetX = 0.0
    var gravityOffsetY = 0.0
    /// `gravity=smart`: the `fit=cover` window goes where the picture's interest is (``ImageProcessors/SmartCover``).
    var smartGravity = false
    /// `fp=x:y`: the point of the source (0…1 each way) a `fit=cover` crop keeps as near its middle as it can.
    var focus: Anchor?
    /// thumbor's `focal(AxB:CxD)`: the rectangle of the source (pixels) the crop is centred on.
    var focalRect: (left: Int, top: Int, right: Int, bottom: Int)?
    /// thumbor's `adaptive-`: the box's sides swapped when the source's orientation is the other one.
    var adaptive = false
    /// thumbor's crop-and-resize (its URLs without `fit-in`), in place of the resize: thumbor's arithmetic.
    var thumborCrop: ThumborCrop?
    /// thumbor's `upscale()` after `fit-in`.
    var thumborUpscale: ThumborUpscale?
    /// `crop=`: the region of the source kept before resizing.
    var crop: CropRegion?
    /// `trim=`: the uniform border cut away first.
    var trim: ImageProcessors.Trim?
    /// thumbor's `proportion(p)`: the result scaled by `p` after resizing.
    var proportion: Double?
    /// `extend=1`: the resized image placed on a `w`×`h` canvas of `bg`, by `gravity` (or its own placement).
    var extends = false
    var extendPlacement: Placement?
    /// `exar=1`: the resized image placed on a canvas of `w`:`h`'s aspect ratio (imgproxy's `extend_aspect_ratio`).
    var extendsAspectRatio = false
    var extendAspectRatioPlacement = Placement()
    /// thumbor's `fill(color|auto|blur)`: the result centred on a `w`×`h` canvas of that fill.
    var letterbox: ImageProcessors.Letterbox.Fill?
    var letterboxFillsTransparency = false
    /// thumbor's `background_color(c)`: transparency flattened onto a colour, whatever the output format.
    var flattenColor: PixelColor?
    /// `pad=`: bands of `bg` around the result (top, right, bottom, left), in output pixels.
    var padding: (top: Int, right: Int, bottom: Int, left: Int)?
    /// Whether the URL gave a device pixel ratio (`dpr`): a client hint's then changes nothing.
    var givesPixelRatio = false
    /// `bg=`: the colour of padding and extended canvas, and what transparency is flattened onto in JPEG; transparent
    /// (white once flattened to JPEG) by default.
    var background: PixelColor?
    /// `rot=`: clockwise quarter turns of the result, 0…3.
    var quarterTurns = 0
    /// `flip=`: mirror the result left to right, top to bottom.
    var flipsHorizontally = false
    var flipsVertically = false

    // MARK: Filters

    /// `brightness=`, `contrast=`, `saturation=`, `gamma=` (and thumbor's filters of those names, in their order).
    var adjustments: [ImageProcessors.Adjust] = []
    /// `grayscale=1`.
    var grayscale = false
    var blur: Double?
    /// `sharpen=`: the unsharp mask's sigma.
    var sharpen: Double?
    /// How strongly it sharpens (thumbor's `sharpen(amount, …)`). 1 by default.
    var sharpenAmount = 1.0
    /// `pix=`: the pixelation's block size.
    var pixelate: Int?
    /// `round=`: rounded corners (thumbor's `round_corner`).
    var corners: ImageProcessors.RoundCorners?
    /// `circle=1`: the largest centred circle, transparent outside.
    var circle = false
    /// `wm=`: the server's watermark laid over the result.
    var watermark: WatermarkPlacement?
    /// thumbor's `watermark(url,…)`: a mark fetched from a URL, under the same source policy.
    var markSource: ThumborWatermark.Source?

    // MARK: Output

    var format: OutputFormat?
    var quality: Int?
    /// `q=auto` or `q=auto:T`: the lowest quality whose output scores T on SSIMULACRA 2 (in place of `quality`).
    var perceptualTarget: Double?
    /// `q` with `format=png` in Osprey's own URLs: below 100, the PNG quantised to a palette aiming at it (a PNG kept
    /// in its own format, and imgproxy's and thumbor's quality, leave PNG lossless, as theirs do).
    var pngPaletteQuality: Int?
    /// `effort=`: the WebP, AVIF and JPEG XL encoders' effort, 1 (fastest) to 9 (smallest), as
    /// `EncodingOptions.setEffort(_:)` spreads it; each format's own default when `nil`.
    var effort: Int?
    /// imgproxy's `format_quality`: a quality per format, over the server's defaults.
    var formatQualities: [ImageFormat: Int] = [:]
    /// `mb=`: the most bytes the result may take (imgproxy's `max_bytes`, thumbor's `max_bytes`).
    var maxBytes: Int?
    var frame: Int?
    /// What the output keeps of the source's EXIF and XMP.
    var metadata: ImageMetadata.Policy = .strip

    // MARK: Response

    /// `raw=1`: the source's bytes as fetched, after the checks (imgproxy's `raw`).
    var raw = false
    /// imgproxy's `skip_processing`: the source's bytes when its format is one of these and the output's is the same.
    var skipProcessing: Set<ImageFormat> = []
    /// `filename=`: the name in `Content-Disposition`.
    var filename: String?
    /// `attachment=1`: `Content-Disposition: attachment` (a download), else `inline`.
    var attachment = false
    /// thumbor's `meta/`: the operations as JSON instead of the image.
    var meta = false
    var signature: String?
    /// `exp`: the Unix time (seconds) from which the URL is refused.
    var expires: Int?
    /// Every parameter as given, decoded, in order: what the signature covers.
    var pairs: [(name: String, value: String)] = []

    static let maximumSide = 16384
    static let defaultQuality = 80
    /// The latest `exp` accepted: the year 9999.
    static let latestExpiry = 253_402_300_799
    /// The largest side, offset or padding `crop` and `pad` take.
    static let maximumCropSide = 1_000_000
    static let maximumPadding = 4096
    /// The largest zoom and the most bytes `mb` takes.
    static let maximumZoom = 16.0
    static let maximumBytes = 1 << 30

    /// A render of `source` with every parameter at its default (the source as it is, in its own format).
    init(source: URL) {
        self.source = source
    }

    /// The format a render will most likely be written in, for a `Content-Disposition` remembered with its query.
    func likelyFormat(accepted: [ImageFormat]) -> ImageFormat {
        switch format {
        case .encoded(let format): format
        case .auto, .best: accepted.first ?? .jpeg
        case nil: ImageFormat.named(source.pathExtension, coders: .shared) ?? .jpeg
        }
    }

    /// The client's error for an `effort` above the server's `maxEffort`, if it is.
    func effortRefusal(maxEffort: Int) -> ProxyError? {
        guard let effort, effort > maxEffort else { return nil }
        return .badRequest("'effort' is at most \(maxEffort) on this server")
    }

    /// The client's error for a source URL the library refused: the reason in our words, never the URL itself.
    static func invalidSource(_ reason: ImageError.InvalidURLReason) -> ProxyError {
        switch reason {
        case .missingHost, .invalidHost, .invalidPort: .badRequest("'url' is not valid: \(reason)")
        case .empty, .malformed, .notAbsolute, .unsupportedScheme:
            .badRequest("'url' must be an absolute http or https URL")
        }
    }

    /// The source URL `text` names, checked as every load is.
    static func sourceURL(_ text: String) throws(ProxyError) -> URL {
        do throws(ImageError) {
            return try ImageRequest(string: text).url
        } catch {
            guard case .invalidURL(_, let reason) = error else { throw .badRequest("'url' cannot be loaded") }
            throw invalidSource(reason)
        }
    }

    /// `RRGGBB` or `RRGGBBAA` (a leading `#` allowed; imgproxy's and thumbor's three-digit `RGB` too) as a colour.
    static func color(hex text: some StringProtocol) -> PixelColor? {
        var digits = text.hasPrefix("#") ? Substring(text.dropFirst()) : Substring(text)
        if digits.count == 3 { digits = Substring(digits.map { "\($0)\($0)" }.joined()) }
        guard digits.count == 6 || digits.count == 8, digits.allSatisfy(\.isHexDigit),
            let value = UInt32(digits, radix: 16)
        else { return nil }
        let rgba = digits.count == 6 ? value << 8 | 0xFF : value
        return PixelColor(
            red: UInt8(truncatingIfNeeded: rgba >> 24), green: UInt8(truncatingIfNeeded: rgba >> 16),
            blue: UInt8(truncatingIfNeeded: rgba >> 8), alpha: UInt8(truncatingIfNeeded: rgba))
    }

    /// The response's `Content-Disposition`, when a filename or an attachment was asked for: the name given (its
    /// extension made the output's), else the source's last path component.
    func contentDisposition(format: ImageFormat) -> String? {
        guard filename != nil || attachment else { return nil }
        var name = filename ?? source.deletingPathExtension().lastPathComponent
        name = String(name.filter { $0.isASCII && $0 != "\"" && $0 != "\\" && !$0.isNewline }.prefix(200))
        if name.isEmpty || name == "/" { name = "image" }
        let base = name.split(separator: ".").dropLast().joined(separator: ".")
        name = (base.isEmpty ? name : base) + "." + (format.fileExtension ?? format.name)
        return (attachment ? "attachment" : "inline") + "; filename=\"\(name)\""
    }

    /// `disposition` with the file name's extension of `format`: a remembered query's was made before the format
    /// was known, which `format=auto` and `format=best` decide as they encode.
    static func disposition(_ disposition: String, naming format: ImageFormat) -> String {
        guard disposition.hasSuffix("\""), let dot = disposition.lastIndex(of: ".") else { return disposition }
        return disposition[..<dot] + "." + (format.fileExtension ?? format.name) + "\""
    }
}
