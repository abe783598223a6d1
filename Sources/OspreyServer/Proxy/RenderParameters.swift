import Foundation
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
        allowsLocalSources: Bool = false
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
            guard let sigma = Double(text), sigma.isFinite, (0.1...100).contains(sigma) else {
                throw .badRequest("'blur' must be a number from 0.1 to 100")
            }
            blur = sigma
        }
        frame = try Self.integer(values["frame"], name: "frame", in: 0...100_000)
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
        // Stripping, the default, adds nothing: keys made before metadata could be kept stay valid.
        switch metadata {
        case .strip: break
        case .copyright: parts.append("keep_copyright=1")
        case .all: parts.append("strip=0")
        }
        return parts.joined(separator: "&")
    }

    /// The processors the source goes through: a downsample (decoded scaled where the format allows) when a size is
    /// asked for, then the blur (a Gaussian of standard deviation `blur`, as CSS `blur()`).
    var processors: [any ImageProcessing] {
        var processors: [any ImageProcessing] = []
        if width != nil || height != nil {
            processors.append(ImageProcessors.Downsample(width: width, height: height, fit: fit))
        }
        if let blur { processors.append(ImageProcessors.Blur(radius: blur)) }
        return processors
    }

    private static func integer(_ text: String?, name: String, in range: ClosedRange<Int>) throws(ProxyError) -> Int? {
        guard let text else { return nil }
        guard text.allSatisfy(\.isASCII), let value = Int(text), range.contains(value) else {
            throw .badRequest("'\(name)' must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// Splits and percent-decodes a query; `+` is a space, as in HTML forms and most URL libraries.
    static func decode(_ query: String) throws(ProxyError) -> [(name: String, value: String)] {
        var pairs: [(name: String, value: String)] = []
        for item in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0]).replacingOccurrences(of: "+", with: " ")
            let value = parts.count > 1 ? String(parts[1]).replacingOccurrences(of: "+", with: " ") : ""
            guard let decodedName = name.removingPercentEncoding, let decodedValue = value.removingPercentEncoding
            else { throw .badRequest("the query is not validly percent-encoded") }
            pairs.append((decodedName, decodedValue))
        }
        return pairs
    }
}
