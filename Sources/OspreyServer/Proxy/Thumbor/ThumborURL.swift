internal import Crypto
import FoundationEssentials
import Osprey
import OspreyCodecs

/// A thumbor URL path, `/{hmac|unsafe}/[meta/][trim[:top-left|:bottom-right][:tolerance]/][AxB:CxD/]
/// [fit-in/|full-fit-in/|adaptive-fit-in/|adaptive-full-fit-in/][-]Wx[-]H/[halign/][valign/][smart/][filters:…/]
/// {source}`, parsed (as libthumbor's `Url` regex reads it) into the ``RenderParameters`` every URL style shares. The
/// signature is libthumbor's: base64url (padded) of HMAC-SHA1 under the security key, of everything after the
/// signature and its slash.
struct ThumborURL: Sendable {
    /// `unsafe`, or the signature as given.
    let signature: String
    /// What the signature covers: everything after `/{signature}/`.
    let signedPath: String
    var parameters: RenderParameters

    /// The longest path taken, and the most filters: past either the URL is refused before it is read.
    static let maximumLength = 16_384
    static let maximumFilters = 64

    /// Parses `path` (what follows the configured prefix, from its slash).
    ///
    /// - Throws: ``ProxyError/badRequest(_:)`` naming the part at fault.
    init(path: String, server: ServerConfiguration) throws(ProxyError) {
        guard path.utf8.count <= Self.maximumLength else {
            throw .badRequest("the thumbor URL is longer than \(Self.maximumLength) characters")
        }
        guard path.hasPrefix("/") else { throw .badRequest("a thumbor URL is /HMAC/…/SOURCE or /unsafe/…/SOURCE") }
        let rest = path.dropFirst()
        guard let slash = rest.firstIndex(of: "/"), slash != rest.startIndex else {
            throw .badRequest("a thumbor URL is /HMAC/…/SOURCE or /unsafe/…/SOURCE: the source is missing")
        }
        signature = String(rest[..<slash])
        signedPath = String(rest[rest.index(after: slash)...])
        var reader = Reader(signedPath)
        var parsed = Parsed()
        parsed.meta = reader.take("meta")
        if let trim = reader.take(matching: Self.isTrim) { parsed.trim = try Self.trim(trim) }
        if let crop = reader.take(matching: Self.isCrop) { parsed.crop = Self.crop(crop) }
        if let fit = reader.take(matching: {
            ["fit-in", "full-fit-in", "adaptive-fit-in", "adaptive-full-fit-in"].contains($0)
        }) {
            parsed.fitIn = fit
        }
        if let size = reader.take(matching: Self.isSize) { try parsed.readSize(size) }
        if let halign = reader.take(matching: { ["left", "right", "center"].contains($0) }) { parsed.halign = halign }
        if let valign = reader.take(matching: { ["top", "bottom", "middle"].contains($0) }) { parsed.valign = valign }
        parsed.smart = reader.take("smart")
        if reader.remaining.hasPrefix("filters:") {
            let filters = try Self.filterSegment(&reader)
            parsed.filters = try ThumborFilter.parse(filters)
        }
        let source = reader.remaining
        guard !source.isEmpty else { throw .badRequest("the thumbor URL has no source image") }
        parameters = try parsed.parameters(source: Self.sourceURL(source), server: server)
    }

    /// The filters segment (`filters:a(…):b(…)`) taken from `reader`: it ends at the first slash after a closing
    /// parenthesis that closes every one opened (a filter's argument may hold a URL, slashes and all).
    static func filterSegment(_ reader: inout Reader) throws(ProxyError) -> String {
        let text = reader.remaining.dropFirst("filters:".count)
        var depth = 0
        var end: String.Index?
        var index = text.startIndex
        while index < text.endIndex {
            switch text[index] {
            case "(": depth += 1
            case ")":
                depth -= 1
                guard depth >= 0 else { throw .badRequest("thumbor filters: a ')' closes nothing") }
            case "/" where depth == 0: end = index
            default: break
            }
            if end != nil { break }
            index = text.index(after: index)
        }
        guard let end else { throw .badRequest("thumbor filters: unbalanced parentheses, or no source after them") }
        let segment = String(text[..<end])
        reader.remaining = text[text.index(after: end)...]
        return segment
    }

    /// The source as thumbor's HTTP loader takes it: percent-decoded, `http://` added when it has no scheme.
    static func sourceURL(_ text: Substring) throws(ProxyError) -> URL {
        guard var decoded = PercentEncoding.decoding(text) else {
            throw .badRequest("the thumbor source is not validly percent-encoded")
        }
        let lower = decoded.lowercased()
        if !lower.hasPrefix("http://"), !lower.hasPrefix("https://") { decoded = "http://" + decoded }
        return try RenderParameters.sourceURL(decoded)
    }

    /// Whether the signature is libthumbor's for ``signedPath`` under any of `keys`, in constant time.
    func isSigned(by keys: [[UInt8]]) -> Bool {
        let given = PercentEncoding.decoding(signature) ?? signature
        return keys.contains { key in
            ImgproxyURL.constantTimeEqual(Array(Self.signature(path: signedPath, key: key).utf8), Array(given.utf8))
        }
    }

    /// libthumbor's signature of `path` (everything after the signature's slash) under `key`.
    static func signature(path: String, key: [UInt8]) -> String {
        let code = HMAC<Insecure.SHA1>.authenticationCode(for: Array(path.utf8), using: SymmetricKey(data: key))
        return Data(code).base64EncodedString().replacing("+", with: "-").replacing("/", with: "_")
    }

    // MARK: Segments

    static func isTrim(_ segment: Substring) -> Bool {
        guard segment.hasPrefix("trim") else { return false }
        let rest = segment.dropFirst(4).split(separator: ":", omittingEmptySubsequences: false).dropFirst()
        guard segment == "trim" || segment.dropFirst(4).hasPrefix(":") else { return false }
        var parts = Array(rest)
        if let first = parts.first, first == "top-left" || first == "bottom-right" { parts.removeFirst() }
        return parts.count <= 1 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) }
    }

    static func trim(_ segment: Substring) throws(ProxyError) -> ImageProcessors.Trim {
        var parts = segment.split(separator: ":").dropFirst()
        var background = ImageProcessors.Trim.Background.topLeft
        if parts.first == "bottom-right" { background = .bottomRight }
        if parts.first == "top-left" || parts.first == "bottom-right" { parts.removeFirst() }
        let tolerance = parts.first.flatMap { DecimalText.integer($0) } ?? 0
        guard tolerance <= 442 else { throw .badRequest("thumbor trim: the tolerance is at most 442") }
        return ImageProcessors.Trim(background: background, threshold: Double(tolerance))
    }

    static func isCrop(_ segment: Substring) -> Bool {
        let corners = segment.split(separator: ":", omittingEmptySubsequences: false)
        return corners.count == 2
            && corners.allSatisfy { corner in
                let sides = corner.split(separator: "x", omittingEmptySubsequences: false)
                return sides.count == 2
                    && sides.allSatisfy { !$0.isEmpty && $0.count <= 9 && $0.allSatisfy(\.isASCIIDigit) }
            }
    }

    static func crop(_ segment: Substring) -> (left: Int, top: Int, right: Int, bottom: Int) {
        let numbers = segment.split(whereSeparator: { $0 == ":" || $0 == "x" }).map { Int($0) ?? 0 }
        return (numbers[0], numbers[1], numbers[2], numbers[3])
    }

    static func isSize(_ segment: Substring) -> Bool {
        let sides = segment.split(separator: "x", maxSplits: 1, omittingEmptySubsequences: false)
        guard sides.count == 2 else { return false }
        return sides.allSatisfy { side in
            let digits = side.hasPrefix("-") ? side.dropFirst() : side
            return digits.isEmpty || digits == "orig" || (digits.count <= 9 && digits.allSatisfy(\.isASCIIDigit))
        }
    }

    /// The path's segments read in thumbor's order, each optional.
    struct Reader {
        var remaining: Substring

        init(_ text: String) {
            remaining = Substring(text)
        }

        /// Takes the next segment when it is `word`.
        mutating func take(_ word: String) -> Bool {
            take(matching: { $0 == word }) != nil
        }

        /// Takes the next segment (up to a slash) when `matches` says so.
        mutating func take(matching matches: (Substring) -> Bool) -> Substring? {
            guard let slash = remaining.firstIndex(of: "/") else { return nil }
            let segment = remaining[..<slash]
            guard matches(segment) else { return nil }
            remaining = remaining[remaining.index(after: slash)...]
            return segment
        }
    }
}

extension Character {
    /// 0–9.
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
