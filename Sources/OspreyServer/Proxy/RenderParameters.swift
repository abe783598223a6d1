import FoundationEssentials
import Osprey
import OspreyCodecs

/// The query of `GET /img`, validated: the source URL and what to make of it.
///
/// `url` (required, http or https), `w` and `h` (1–16384; the output never exceeds the source), `fit`
/// (`inside`, the default; `cover` and `fill` need both sides), `format` (`jpeg`, `png`, `webp`, `gif`, any format
/// a registered encoder writes, or `auto`; the source's by default), `q` (1–100, 80 by default, for JPEG and WebP), `blur` (a Gaussian sigma, 0.1–100),
/// `frame` (0-based: one frame of an animation, as a still), `strip` (`1`, the default: no EXIF or XMP in the
/// output; `0`: all of it, orientation reset), `keep_copyright` (`1`: EXIF Artist and Copyright, XMP `dc:creator`
/// and `dc:rights` survive stripping), `exp` (a Unix time after which the URL is refused with 410; covered by the
/// signature like every parameter), `p` (presets, comma-separated, applied in order before the request's own
/// parameters, which override them; a preset named `default` applies first to every request), `sig` (the signature).
/// Anything else is refused; with presets only, anything but `url`, `p`, `exp` and `sig`.
struct RenderParameters: Sendable {
    /// What `format=` asks for: a format an encoder of the server's registry writes, or `auto` (WebP when the client
    /// accepts it, else the source's format or the common one that fits).
    enum OutputFormat: Sendable, Equatable {
        case auto
        case encoded(ImageFormat)

        /// As it appears in the canonical form.
        var name: String {
            switch self {
            case .auto: "auto"
            case .encoded(let format): format.name
            }
        }
    }

    var source: URL
    /// Where a `fit=cover` crop or an `extend` canvas places the image (`gravity=`); `nil` for the centre.
    var gravity: Anchor?
    /// `gravity=smart`: the `fit=cover` window goes where the picture's interest is (``ImageProcessors/SmartCover``).
    var smartGravity = false
    /// `fp=x:y`: the point of the source (0…1 each way) a `fit=cover` crop keeps as near its middle as it can.
    var focus: Anchor?
    /// `crop=x:y:w:h`: the region of the source kept before resizing, in its upright pixels.
    var crop: (x: Int, y: Int, width: Int, height: Int)?
    /// `extend=1`: the resized image placed on a `w`×`h` canvas of `bg`, by `gravity`.
    var extends = false
    /// `pad=`: bands of `bg` around the result (top, right, bottom, left), in output pixels.
    var padding: (top: Int, right: Int, bottom: Int, left: Int)?
    /// `bg=`: the colour of padding and extended canvas, and what transparency is flattened onto in JPEG; transparent
    /// (white once flattened to JPEG) by default.
    var background: PixelColor?
    /// `rot=`: clockwise quarter turns of the result, 0…3.
    var quarterTurns = 0
    /// `flip=`: mirror the result left to right, top to bottom.
    var flipsHorizontally = false
    var flipsVertically = false
    /// `sharpen=`: the unsharp mask's sigma.
    var sharpen: Double?
    /// `wm=`: the server's watermark laid over the result.
    var watermark: WatermarkPlacement?
    /// The path of a `local:///path` source (percent-decoded), read under the server's local root; `nil` for a URL.
    var localPath: String?
    var width: Int?
    var height: Int?
    var fit: ImageProcessors.Resize.Fit = .inside
    var format: OutputFormat?
    var quality: Int?
    var blur: Double?
    var frame: Int?
    /// What the output keeps of the source's EXIF and XMP.
    var metadata: ImageMetadata.Policy = .strip
    var signature: String?
    /// `exp`: the Unix time (seconds) from which the URL is refused.
    var expires: Int?
    /// Every parameter as given, decoded, in order: what the signature covers.
    var pairs: [(name: String, value: String)] = []

    static let maximumSide = 16384
    static let defaultQuality = 80

    /// Parses and validates a raw query string (`a=1&b=2`, percent-encoded, `+` for a space), with the server's
    /// `presets` by name (see ``presetTable(_:)``) and whether the request may give only them.
    ///
    /// - Throws: ``ProxyError/badRequest(_:)`` naming the parameter at fault.
    init(
        query: String?, maxOutputPixels: Int, coders: ImageCoderRegistry = .shared,
        presets: [String: [(name: String, value: String)]] = [:], presetsOnly: Bool = false,
        allowsLocalSources: Bool = false, hasWatermark: Bool = false
    ) throws(ProxyError) {
        let pairs = try Self.decode(query ?? "")
        var given: [String: String] = [:]
        for (name, value) in pairs {
            guard Self.known.contains(name) else { throw .badRequest("unknown parameter '\(name)'") }
            guard given[name] == nil else { throw .badRequest("parameter '\(name)' given twice") }
            if presetsOnly, !Self.notInPresets.contains(name) {
                throw .badRequest("this server takes presets only ('p'), not '\(name)'")
            }
            given[name] = value
        }
        // The default preset, then those the request names, then its own parameters: a later value wins.
        var values: [String: String] = [:]
        var named = presets["default"] != nil ? ["default"] : []
        if let list = given["p"] {
            named += list.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        for name in named {
            guard let preset = presets[name] else { throw .badRequest("unknown preset '\(name)'") }
            for (key, value) in preset { values[key] = value }
        }
        for (name, value) in given where name != "p" { values[name] = value }
        guard let urlText = values["url"], !urlText.isEmpty else { throw .badRequest("missing parameter 'url'") }
        if allowsLocalSources, urlText.hasPrefix("local:///"), let url = URL(string: urlText) {
            source = url
            localPath = url.path(percentEncoded: false)
        } else {
            do throws(ImageError) {
                source = try ImageRequest(string: urlText).url
            } catch {
                guard case .invalidURL(_, let reason) = error else { throw .badRequest("'url' cannot be loaded") }
                throw Self.invalidSource(reason)
            }
        }
        self.pairs = pairs
        width = try Self.integer(values["w"], name: "w", in: 1...Self.maximumSide)
        height = try Self.integer(values["h"], name: "h", in: 1...Self.maximumSide)
        if let text = values["fit"] {
            guard let fit = ImageProcessors.Resize.Fit(rawValue: text) else {
                throw .badRequest("'fit' must be inside, cover or fill")
            }
            self.fit = fit
        }
        if fit != .inside, width == nil || height == nil {
            throw .badRequest("fit=\(fit.rawValue) needs both 'w' and 'h'")
        }
        if let width, let height, width * height > maxOutputPixels {
            throw .badRequest("w×h is more than the output limit of \(maxOutputPixels) pixels")
        }
        if let text = values["format"] {
            if text == "auto" {
                format = .auto
            } else if let encodable = coders.encodableFormat(named: text) {
                format = .encoded(encodable)
            } else {
                let names = coders.encodableFormats.map(\.name) + ["auto"]
                throw .badRequest("'format' must be " + names.dropLast().joined(separator: ", ") + " or auto")
            }
        }
        quality = try Self.integer(values["q"], name: "q", in: 1...100)
        if let text = values["blur"] {
            guard let sigma = DecimalText.number(text), sigma.isFinite, (0.1...100).contains(sigma) else {
                throw .badRequest("'blur' must be a number from 0.1 to 100")
            }
            blur = sigma
        }
        frame = try Self.integer(values["frame"], name: "frame", in: 0...100_000)
        try parsePlacement(values, maxOutputPixels: maxOutputPixels)
        if let text = values["wm"] {
            guard hasWatermark else { throw .badRequest("'wm': this server has no watermark") }
            watermark = try WatermarkPlacement(parsing: text)
        }
        let strips = try Self.integer(values["strip"], name: "strip", in: 0...1) ?? 1
        let keepsCopyright = try Self.integer(values["keep_copyright"], name: "keep_copyright", in: 0...1) ?? 0
        // Keeping everything keeps the copyright fields too.
        metadata = strips == 0 ? .all : keepsCopyright == 1 ? .copyright : .strip
        signature = values["sig"]
        expires = try Self.integer(values["exp"], name: "exp", in: 0...Self.latestExpiry)
    }

    /// The latest `exp` accepted: the year 9999.
    static let latestExpiry = 253_402_300_799

    /// The client's error for a source URL the library refused: the reason in our words, never the URL itself.
    static func invalidSource(_ reason: OspreyError.InvalidURLReason) -> ProxyError {
        switch reason {
        case .missingHost, .invalidHost, .invalidPort: .badRequest("'url' is not valid: \(reason)")
        case .empty, .malformed, .notAbsolute, .unsupportedScheme:
            .badRequest("'url' must be an absolute http or https URL")
        }
    }

    private static let known: Set<String> = [
        "url", "w", "h", "fit", "format", "q", "blur", "frame", "strip", "keep_copyright", "exp", "p", "sig",
        "gravity", "fp", "crop", "extend", "pad", "bg", "rot", "flip", "sharpen", "dpr", "wm",
    ]

    /// What a preset cannot set, and all a request may give when the server takes presets only.
    static let notInPresets: Set<String> = ["url", "p", "exp", "sig"]

    /// `presets` by name, as ``init(query:maxOutputPixels:coders:presets:presetsOnly:)`` takes them.
    static func presetTable(_ presets: [ImagePreset]) -> [String: [(name: String, value: String)]] {
        var table: [String: [(name: String, value: String)]] = [:]
        for preset in presets { table[preset.name] = preset.parameters }
        return table
    }

    /// Every parameter that shapes the output, in a fixed order and spelling, so equal renders have equal keys (`exp`
    /// and `sig` shape nothing: URLs that differ only in them share the render).
    /// `format=auto` is resolved by the caller before it becomes part of a key.
    var canonical: String {
        var parts = ["fit=\(fit.rawValue)"]
        if let width { parts.append("w=\(width)") }
        if let height { parts.append("h=\(height)") }
        parts.append("format=\(format?.name ?? "source")")
        parts.append("q=\(quality ?? Self.defaultQuality)")
        if let blur { parts.append("blur=\(blur)") }
        if let frame { parts.append("frame=\(frame)") }
        if let gravity { parts.append("gravity=" + Self.gravityName(gravity)) }
        if smartGravity { parts.append("gravity=smart") }
        if let focus { parts.append("fp=\(focus.x):\(focus.y)") }
        if let crop { parts.append("crop=\(crop.x):\(crop.y):\(crop.width):\(crop.height)") }
        if extends { parts.append("extend=1") }
        if let padding { parts.append("pad=\(padding.top):\(padding.right):\(padding.bottom):\(padding.left)") }
        if let background { parts.append("bg=\(background)") }
        if quarterTurns != 0 { parts.append("rot=\(quarterTurns * 90)") }
        if flipsHorizontally || flipsVertically {
            parts.append("flip=" + (flipsHorizontally ? "h" : "") + (flipsVertically ? "v" : ""))
        }
        if let sharpen { parts.append("sharpen=\(sharpen)") }
        if let watermark { parts.append("wm=" + watermark.canonical) }
        // Stripping, the default, adds nothing: keys made before metadata could be kept stay valid.
        switch metadata {
        case .strip: break
        case .copyright: parts.append("keep_copyright=1")
        case .all: parts.append("strip=0")
        }
        return parts.joined(separator: "&")
    }

    /// The processors the source goes through, in order: the `crop` region; the resize to `w`×`h` (a downsample,
    /// decoded scaled where the format allows, unless a crop comes first; turned sides swapped, so that `w` and `h`
    /// are the result's), its `fit=cover` window placed by `gravity`, around `fp` or by the picture's interest
    /// (`gravity=smart`); the turn and the flip; the blur
    /// (a Gaussian of standard deviation `blur`, as CSS `blur()`) and the sharpening; then `extend` and `pad`.
    func processors(watermark mark: WatermarkImage? = nil) -> [any ImageProcessing] {
        var processors: [any ImageProcessing] = []
        if let crop {
            processors.append(
                ImageProcessors.Crop(.rect(x: crop.x, y: crop.y, width: crop.width, height: crop.height)))
        }
        if width != nil || height != nil {
            let turned = quarterTurns % 2 == 1
            let (resizeWidth, resizeHeight) = turned ? (height, width) : (width, height)
            if let focus, let resizeWidth, let resizeHeight {
                processors.append(FocalCover(width: resizeWidth, height: resizeHeight, focus: focus))
            } else if smartGravity, let resizeWidth, let resizeHeight {
                processors.append(ImageProcessors.SmartCover(width: resizeWidth, height: resizeHeight))
            } else {
                let anchor = Self.unturned(
                    gravity ?? .center, quarterTurns: quarterTurns,
                    flipsHorizontally: flipsHorizontally, flipsVertically: flipsVertically)
                if crop == nil {
                    processors.append(
                        ImageProcessors.Downsample(width: resizeWidth, height: resizeHeight, fit: fit, anchor: anchor))
                } else {
                    processors.append(
                        ImageProcessors.Resize(width: resizeWidth, height: resizeHeight, fit: fit, anchor: anchor))
                }
            }
        }
        if quarterTurns != 0 { processors.append(ImageProcessors.Rotate(quarterTurns: quarterTurns)) }
        if flipsHorizontally || flipsVertically {
            processors.append(ImageProcessors.Flip(horizontally: flipsHorizontally, vertically: flipsVertically))
        }
        if let blur { processors.append(ImageProcessors.Blur(radius: blur)) }
        if let sharpen { processors.append(ImageProcessors.Sharpen(sigma: sharpen)) }
        if extends, let width, let height {
            processors.append(
                ImageProcessors.Extend(
                    width: width, height: height, anchor: gravity ?? .center, color: background ?? .clear))
        }
        if let padding {
            processors.append(
                ImageProcessors.Pad(
                    top: padding.top, right: padding.right, bottom: padding.bottom, left: padding.left,
                    color: background ?? .clear))
        }
        if let watermark, let mark {
            processors.append(
                ImageProcessors.Watermark(
                    mark: mark.image, name: mark.name, opacity: watermark.opacity, anchor: watermark.anchor,
                    offsetX: watermark.x, offsetY: watermark.y, scale: watermark.scale))
        }
        return processors
    }

    /// The decode-size hint when it is not the first processor's: a full-size decode when a crop of the source comes
    /// first (`.some(nil)`), the cover's downsample when a focal point or the picture's interest places it; `nil`
    /// otherwise.
    var decodingHint: (any DecodingSizeHint)?? {
        if crop != nil { return .some(nil) }
        guard focus != nil || smartGravity, width != nil || height != nil else { return nil }
        let (resizeWidth, resizeHeight) = quarterTurns % 2 == 1 ? (height, width) : (width, height)
        return .some(ImageProcessors.Downsample(width: resizeWidth, height: resizeHeight, fit: .cover))
    }

    /// `anchor`, given for the result, in the frame of the image before it was turned `quarterTurns` clockwise and
    /// flipped: where the resize's window must sit for the result's to sit at `anchor`.
    static func unturned(
        _ anchor: Anchor, quarterTurns: Int, flipsHorizontally: Bool, flipsVertically: Bool
    ) -> Anchor {
        var (x, y) = anchor.clamped
        if flipsHorizontally { x = 1 - x }
        if flipsVertically { y = 1 - y }
        switch quarterTurns {
        case 1: (x, y) = (y, 1 - x)
        case 2: (x, y) = (1 - x, 1 - y)
        case 3: (x, y) = (1 - y, x)
        default: break
        }
        return Anchor(x: x, y: y)
    }

    static func integer(_ text: String?, name: String, in range: ClosedRange<Int>) throws(ProxyError) -> Int? {
        guard let text else { return nil }
        guard let value = DecimalText.integer(text), range.contains(value) else {
            throw .badRequest("'\(name)' must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// Splits and percent-decodes a query; `+` is a space, as in HTML forms and most URL libraries.
    static func decode(_ query: String) throws(ProxyError) -> [(name: String, value: String)] {
        var pairs: [(name: String, value: String)] = []
        for item in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = parts[0].replacing("+", with: " ")
            let value = parts.count > 1 ? parts[1].replacing("+", with: " ") : ""
            guard let decodedName = PercentEncoding.decoding(name), let decodedValue = PercentEncoding.decoding(value)
            else { throw .badRequest("the query is not validly percent-encoded") }
            pairs.append((decodedName, decodedValue))
        }
        return pairs
    }
}
