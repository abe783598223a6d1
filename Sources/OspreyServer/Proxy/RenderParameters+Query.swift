import FoundationEssentials
import Osprey
import OspreyCodecs

/// The query of `GET /img`, validated: the source URL and what to make of it.
///
/// `url` (required, http or https), `w` and `h` (1–16384), `fit` (`inside`, the default; `cover`, `clip`, `fill`,
/// `outside` and `auto`, which need both sides), `enlarge`, `mw`, `mh`, `zoom`, `format` (`jpeg`, `png`, `webp`,
/// `gif`, any format a registered encoder writes, or `auto`; the source's by default), `q` (1–100), `effort` (1–9),
/// `mb` (most bytes), `blur`, `sharpen`, `pix`, `brightness`, `contrast`, `saturation`, `gamma`, `grayscale`, `round`,
/// `circle`, `trim`, `frame`, `strip`, `keep_copyright`, `raw`, `filename`, `attachment`, `exp`, `p` (presets), `sig`,
/// and the placement parameters (``parsePlacement(_:maxOutputPixels:)``). Anything else is refused; with presets only,
/// anything but `url`, `p`, `exp` and `sig`.
extension RenderParameters {
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
            self.init(source: url)
            localPath = url.path(percentEncoded: false)
        } else {
            self.init(source: try Self.sourceURL(urlText))
        }
        self.pairs = pairs
        try parseSize(values, maxOutputPixels: maxOutputPixels)
        try parseOutput(values, coders: coders)
        try parseFilters(values)
        try parsePlacement(values, maxOutputPixels: maxOutputPixels)
        if let text = values["wm"] {
            guard hasWatermark else { throw .badRequest("'wm': this server has no watermark") }
            watermark = try WatermarkPlacement(parsing: text)
        }
        signature = values["sig"]
        expires = try Self.integer(values["exp"], name: "exp", in: 0...Self.latestExpiry)
    }

    /// `w`, `h`, `fit`, `enlarge`, `mw`, `mh`, `zoom`.
    private mutating func parseSize(_ values: [String: String], maxOutputPixels: Int) throws(ProxyError) {
        width = try Self.integer(values["w"], name: "w", in: 1...Self.maximumSide)
        height = try Self.integer(values["h"], name: "h", in: 1...Self.maximumSide)
        if let text = values["fit"] {
            guard let fit = ImageProcessors.Resize.Fit(rawValue: text) else {
                throw .badRequest("'fit' must be inside, cover, clip, fill, outside or auto")
            }
            self.fit = fit
        }
        if fit != .inside, width == nil || height == nil {
            throw .badRequest("fit=\(fit.rawValue) needs both 'w' and 'h'")
        }
        if let width, let height, width * height > maxOutputPixels {
            throw .badRequest("w×h is more than the output limit of \(maxOutputPixels) pixels")
        }
        enlarges = try Self.flag(values["enlarge"], name: "enlarge")
        minWidth = try Self.integer(values["mw"], name: "mw", in: 1...Self.maximumSide)
        minHeight = try Self.integer(values["mh"], name: "mh", in: 1...Self.maximumSide)
        if let text = values["zoom"] {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false).map { DecimalText.number($0) }
            let range = 0.01...Self.maximumZoom
            guard (1...2).contains(parts.count), parts.allSatisfy({ $0.map(range.contains) ?? false }) else {
                throw .badRequest("'zoom' must be X or X:Y, each from 0.01 to \(Int(Self.maximumZoom))")
            }
            zoomX = parts[0]!
            zoomY = parts.count == 2 ? parts[1]! : parts[0]!
        }
    }

    /// `format`, `q`, `mb`, `frame`, `strip`, `keep_copyright`, `raw`, `filename`, `attachment`.
    private mutating func parseOutput(_ values: [String: String], coders: ImageCoderRegistry) throws(ProxyError) {
        if let text = values["format"] {
            format = try Self.outputFormat(text, coders: coders, name: "format")
        }
        if let text = values["q"], text == "auto" || text.hasPrefix("auto:") {
            // The lowest quality whose output scores the target on SSIMULACRA 2.
            perceptualTarget =
                text == "auto"
                ? ImageOutput.Quality.defaultTarget
                : try Self.number(String(text.dropFirst(5)), name: "q=auto:", in: 1...100)
        } else {
            quality = try Self.integer(values["q"], name: "q", in: 1...100)
            // With format=png only: a PNG answered in its own format (no `format`) stays lossless.
            if format == .encoded(.png) { pngPaletteQuality = quality }
        }
        effort = try Self.integer(values["effort"], name: "effort", in: 1...9)
        maxBytes = try Self.integer(values["mb"], name: "mb", in: 1...Self.maximumBytes)
        frame = try Self.integer(values["frame"], name: "frame", in: 0...100_000)
        let strips = try Self.integer(values["strip"], name: "strip", in: 0...1) ?? 1
        let keepsCopyright = try Self.flag(values["keep_copyright"], name: "keep_copyright")
        // Keeping everything keeps the copyright fields too.
        metadata = strips == 0 ? .all : keepsCopyright ? .copyright : .strip
        raw = try Self.flag(values["raw"], name: "raw")
        if let name = values["filename"] {
            guard (1...200).contains(name.count), !name.contains(where: { $0.isNewline || $0 == "\"" }) else {
                throw .badRequest("'filename' must be 1 to 200 characters, without quotes or line breaks")
            }
            filename = name
        }
        attachment = try Self.flag(values["attachment"], name: "attachment")
    }

    /// `blur`, `pix`, `brightness`, `contrast`, `saturation`, `gamma`, `grayscale`, `round`, `circle`, `trim`.
    private mutating func parseFilters(_ values: [String: String]) throws(ProxyError) {
        blur = try Self.number(values["blur"], name: "blur", in: 0.1...100)
        pixelate = try Self.integer(values["pix"], name: "pix", in: 2...1024)
        let brightness = try Self.number(values["brightness"], name: "brightness", in: -255...255) ?? 0
        let contrast = try Self.number(values["contrast"], name: "contrast", in: 0...10) ?? 1
        let saturation = try Self.number(values["saturation"], name: "saturation", in: 0...10) ?? 1
        let gamma = try Self.number(values["gamma"], name: "gamma", in: 0.1...10) ?? 1
        let adjust = ImageProcessors.Adjust(
            brightness: brightness, contrast: contrast, saturation: saturation, gamma: gamma)
        if !adjust.isIdentity { adjustments = [adjust] }
        grayscale = try Self.flag(values["grayscale"], name: "grayscale")
        if let text = values["round"] {
            // RADIUS[:VERTICAL[:COLOUR]]: the corners' radii in output pixels, and what fills them (transparent).
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            let range = 1...Self.maximumPadding
            let form = "'round' must be RADIUS[:VERTICAL[:RRGGBB]], radii from 1 to \(Self.maximumPadding)"
            guard (1...3).contains(parts.count), let radius = DecimalText.integer(parts[0]), range.contains(radius)
            else { throw .badRequest(form) }
            var vertical: Int?
            if parts.count >= 2, !parts[1].isEmpty {
                guard let value = DecimalText.integer(parts[1]), range.contains(value) else { throw .badRequest(form) }
                vertical = value
            }
            var color: PixelColor?
            if parts.count == 3, !parts[2].isEmpty {
                guard let parsed = Self.color(hex: parts[2]) else { throw .badRequest(form) }
                color = parsed
            }
            corners = ImageProcessors.RoundCorners(radius: radius, verticalRadius: vertical, color: color)
        }
        circle = try Self.flag(values["circle"], name: "circle")
        if let text = values["trim"] {
            trim = try Self.trim(parsing: text, name: "trim")
        }
    }

    /// `THRESHOLD[:COLOUR[:h|v|hv]]` as a trim: imgproxy's `trim` arguments with the sides' flags in one.
    static func trim(parsing text: String, name: String) throws(ProxyError) -> ImageProcessors.Trim {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        let form = "'\(name)' must be THRESHOLD[:RRGGBB[:h|v|hv]], the threshold from 0 to 442"
        guard (1...3).contains(parts.count), let threshold = DecimalText.number(parts[0]),
            (0...442).contains(threshold)
        else { throw .badRequest(form) }
        var background = ImageProcessors.Trim.Background.topLeft
        if parts.count >= 2, !parts[1].isEmpty {
            guard let color = color(hex: parts[1]) else { throw .badRequest(form) }
            background = .color(color)
        }
        let sides = parts.count == 3 ? String(parts[2]) : ""
        guard ["", "h", "v", "hv", "vh"].contains(sides) else { throw .badRequest(form) }
        return ImageProcessors.Trim(
            background: background, threshold: threshold, equalHorizontal: sides.contains("h"),
            equalVertical: sides.contains("v"))
    }

    /// The output format `text` names (`auto`, or a format an encoder of `coders` writes).
    static func outputFormat(
        _ text: String, coders: ImageCoderRegistry, name: String
    ) throws(ProxyError) -> OutputFormat {
        if text == "auto" { return .auto }
        if text == "best" { return .best }
        if let encodable = coders.encodableFormat(named: text) { return .encoded(encodable) }
        let names = coders.encodableFormats.map(\.name).joined(separator: ", ")
        throw .badRequest("'\(name)' must be \(names), auto or best")
    }

    static let known: Set<String> = [
        "url", "w", "h", "fit", "format", "q", "blur", "frame", "strip", "keep_copyright", "exp", "p", "sig",
        "gravity", "fp", "crop", "extend", "pad", "bg", "rot", "flip", "sharpen", "dpr", "wm", "enlarge", "mw", "mh",
        "zoom", "mb", "pix", "brightness", "contrast", "saturation", "gamma", "grayscale", "round", "circle", "trim",
        "raw", "filename", "attachment", "exar", "effort",
    ]

    /// What a preset cannot set, and all a request may give when the server takes presets only.
    static let notInPresets: Set<String> = ["url", "p", "exp", "sig"]

    /// `presets` by name, as ``init(query:maxOutputPixels:coders:presets:presetsOnly:allowsLocalSources:hasWatermark:)``
    /// takes them.
    static func presetTable(_ presets: [ImagePreset]) -> [String: [(name: String, value: String)]] {
        var table: [String: [(name: String, value: String)]] = [:]
        for preset in presets { table[preset.name] = preset.parameters }
        return table
    }

    static func integer(_ text: String?, name: String, in range: ClosedRange<Int>) throws(ProxyError) -> Int? {
        guard let text else { return nil }
        guard let value = DecimalText.integer(text), range.contains(value) else {
            throw .badRequest("'\(name)' must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    static func number(_ text: String?, name: String, in range: ClosedRange<Double>) throws(ProxyError) -> Double? {
        guard let text else { return nil }
        guard let value = DecimalText.number(text), range.contains(value) else {
            throw .badRequest(
                "'\(name)' must be a number from \(range.lowerBound.shortText) to \(range.upperBound.shortText)")
        }
        return value
    }

    /// `0` or `1`.
    static func flag(_ text: String?, name: String) throws(ProxyError) -> Bool {
        try integer(text, name: name, in: 0...1) == 1
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

extension Double {
    /// The number without a fraction when it has none (`100`, `0.1`), for messages.
    var shortText: String {
        self == rounded() && abs(self) < 1e15 ? String(Int(self)) : "\(self)"
    }
}
