public import OspreyCodecs

/// Responsive markup for one source: a `srcset` whose every candidate is an `/img` URL (signed, when there is a
/// signer) at the width its descriptor names, a `sizes` beside it, or a `<picture>` offering AVIF and WebP before the
/// JPEG every browser reads — what `osprey sign --srcset` prints.
///
/// ```swift
/// let markup = try ResponsiveImage(
///     source: "https://example.com/cat.jpg", parameters: [("q", "75")], widths: [320, 640, 1280],
///     sizes: "(max-width: 700px) 100vw, 700px", signer: signer, base: "https://img.example.com")
/// markup.srcset()        // "https://img.example.com/img?url=…&q=75&w=320&sig=… 320w, … 1280w"
/// markup.picture()       // <picture><source type="image/avif" srcset="…">…<img src="…" srcset="…" sizes="…"></picture>
/// ```
///
/// A candidate is as wide as its descriptor when the source is at least that wide (a smaller source is not
/// enlarged: list widths up to the source's).
public struct ResponsiveImage: Sendable {
    /// The source image's URL.
    public let source: String
    /// The `/img` parameters every candidate shares (not `w`, `h` or `dpr`, which the width sets).
    public let parameters: [(name: String, value: String)]
    /// The candidates' widths, ascending.
    public let widths: [Int]
    /// The `sizes` attribute: how wide the image is laid out, for the browser to pick a candidate.
    public let sizes: String?
    /// Signs each candidate; `nil` for a server that takes unsigned requests.
    public let signer: URLSigner?
    /// The proxy's address before `/img` (`https://img.example.com`); empty for paths alone.
    public let base: String

    /// The formats a `<picture>` offers before JPEG, best first.
    public static let pictureFormats: [ImageFormat] = [.avif, .webp]

    /// Checks the parameters as the server will (with each width), so that no candidate is printed that it refuses.
    ///
    /// - Throws: ``InvalidImageQuery`` for no width, a width out of range, a parameter the width sets, or a query the
    ///   server would refuse.
    public init(
        source: String, parameters: [(name: String, value: String)] = [], widths: [Int], sizes: String? = nil,
        signer: URLSigner?, base: String = "", presets: [ImagePreset] = []
    ) throws(InvalidImageQuery) {
        let widths = Array(Set(widths)).sorted()
        guard !widths.isEmpty else { throw InvalidImageQuery(message: "give at least one width") }
        for name in ["w", "h", "dpr", "url", "sig"] where parameters.contains(where: { $0.name == name }) {
            throw InvalidImageQuery(message: "'\(name)' cannot be given with a srcset: each candidate sets its width")
        }
        if let sizes, sizes.contains(where: { $0 == "\"" || $0.isNewline }) {
            throw InvalidImageQuery(message: "'sizes' cannot hold quotes or line breaks")
        }
        for width in widths {
            try ImageQuery.check(
                [("url", source)] + parameters + [("w", String(width))], presets: presets)
        }
        self.source = source
        self.parameters = parameters
        self.widths = widths
        self.sizes = sizes
        self.signer = signer
        self.base = base.hasSuffix("/") ? String(base.dropLast()) : base
    }

    /// The URL of the candidate `width` wide, in `format` (the parameters' own, else the source's, when `nil`).
    public func url(width: Int, format: ImageFormat? = nil) -> String {
        var pairs = [("url", source)] + parameters.filter { format == nil || $0.name != "format" }
        pairs.append(("w", String(width)))
        if let format { pairs.append(("format", format.name)) }
        if let signer { return base + signer.signedPath("/img", parameters: pairs) }
        return base + "/img?"
            + pairs.map { URLSigner.escape($0.0) + "=" + URLSigner.escape($0.1) }
            .joined(separator: "&")
    }

    /// The `srcset` value: `URL 320w, URL 640w, …`.
    public func srcset(format: ImageFormat? = nil) -> String {
        widths.map { url(width: $0, format: format) + " \($0)w" }.joined(separator: ", ")
    }

    /// `srcset="…"` and, when there is one, `sizes="…"`, HTML-escaped, for an `<img>`.
    public func attributes(format: ImageFormat? = nil) -> String {
        var text = "srcset=\"" + Self.escaped(srcset(format: format)) + "\""
        if let sizes { text += " sizes=\"" + Self.escaped(sizes) + "\"" }
        return text
    }

    /// A `<picture>`: a `<source>` for each of ``pictureFormats`` and an `<img>` in JPEG, whose `src` (for browsers
    /// without `srcset`) is the widest candidate up to 1024 pixels.
    public func picture(alt: String = "") -> String {
        var lines = ["<picture>"]
        for format in Self.pictureFormats {
            var source = "  <source type=\"\(format.mimeType)\" srcset=\"\(Self.escaped(srcset(format: format)))\""
            if let sizes { source += " sizes=\"\(Self.escaped(sizes))\"" }
            lines.append(source + ">")
        }
        let fallback = widths.last { $0 <= 1024 } ?? widths[0]
        lines.append(
            "  <img src=\"\(Self.escaped(url(width: fallback, format: .jpeg)))\" \(attributes(format: .jpeg)) "
                + "alt=\"\(Self.escaped(alt))\">")
        lines.append("</picture>")
        return lines.joined(separator: "\n")
    }

    /// `text` for an HTML attribute in double quotes.
    static func escaped(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "\"": result += "&quot;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            default: result.append(character)
            }
        }
        return result
    }
}
