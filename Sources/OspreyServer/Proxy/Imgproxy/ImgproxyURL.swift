internal import Crypto
import FoundationEssentials
import Osprey
import OspreyCodecs

/// An imgproxy URL path (`/{signature}/{options…}/plain/{source}[@{ext}]` or `/{signature}/{options…}/{base64url
/// source}[.{ext}]`), parsed into the same ``RenderParameters`` as `/img`, and its signature checked as imgproxy's
/// documentation defines it: unpadded base64url of HMAC-SHA256(key, salt + path), where the path is everything from
/// the slash after the signature.
struct ImgproxyURL: Sendable {
    /// The signature segment as given (`insecure`, `_`, anything, when no key is configured).
    let signature: String
    /// What the signature covers: `/` and everything after the signature.
    let signedPath: String
    /// The render asked for.
    var parameters: RenderParameters

    /// The most option segments one URL may carry, and the longest segment: beyond either the URL is refused before
    /// any option is read.
    static let maximumOptions = 100
    static let maximumSegmentLength = 4096

    /// Parses `path` (what follows the configured prefix, from its slash), with the server's presets and limits.
    ///
    /// - Throws: ``ProxyError/badRequest(_:)`` naming the part at fault.
    init(path: String, configuration: ImgproxyConfiguration, server: ServerConfiguration) throws(ProxyError) {
        guard path.hasPrefix("/") else { throw .badRequest("an imgproxy URL is /SIGNATURE/OPTIONS/SOURCE") }
        let rest = path.dropFirst()
        guard let slash = rest.firstIndex(of: "/"), slash != rest.startIndex else {
            throw .badRequest("an imgproxy URL is /SIGNATURE/OPTIONS/SOURCE: the signature or the source is missing")
        }
        signature = String(rest[..<slash])
        signedPath = String(rest[slash...])
        var segments = signedPath.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        if let long = segments.first(where: { $0.count > Self.maximumSegmentLength }) {
            throw .badRequest("an imgproxy path segment is \(long.count) characters, over \(Self.maximumSegmentLength)")
        }
        var options = ImgproxyOptions()
        for option in configuration.presets["default"] ?? [] {
            try options.apply(option, presets: configuration.presets, server: server, depth: 1)
        }
        var applied = 0
        var source: (text: String, extension: String?)?
        while let segment = segments.first {
            if segment == "plain" {
                source = try Self.plainSource(segments.dropFirst().joined(separator: "/"))
                break
            }
            if segment == "enc" {
                throw .badRequest("imgproxy's encrypted sources (enc/) are not supported: give plain/ or base64")
            }
            guard segment.contains(":") else {
                source = try Self.base64Source(segments.joined())
                break
            }
            applied += 1
            guard applied <= Self.maximumOptions else {
                throw .badRequest("an imgproxy URL may carry at most \(Self.maximumOptions) options")
            }
            try options.apply(String(segment), presets: configuration.presets, server: server, depth: 0)
            segments.removeFirst()
        }
        guard let source, !source.text.isEmpty else { throw .badRequest("the imgproxy URL has no source") }
        if let ext = source.extension, !ext.isEmpty {
            try options.apply("format:" + ext, presets: [:], server: server, depth: 0)
        }
        parameters = try options.parameters(source: source.text, server: server)
    }

    /// `plain/` source: percent-encoded, an `@ext` after it.
    static func plainSource(_ text: String) throws(ProxyError) -> (text: String, extension: String?) {
        var body = Substring(text)
        var ext: String?
        if let at = body.lastIndex(of: "@") {
            ext = String(body[body.index(after: at)...])
            body = body[..<at]
        }
        guard let decoded = PercentEncoding.decoding(body) else {
            throw .badRequest("the imgproxy plain source is not validly percent-encoded")
        }
        return (decoded, ext)
    }

    /// A base64url source (split by slashes as the client liked), a `.ext` after it.
    static func base64Source(_ text: String) throws(ProxyError) -> (text: String, extension: String?) {
        var body = Substring(text)
        var ext: String?
        if let dot = body.lastIndex(of: ".") {
            ext = String(body[body.index(after: dot)...])
            body = body[..<dot]
        }
        guard let bytes = Base64URL.decode(body), let decoded = String(bytes: bytes, encoding: .utf8) else {
            throw .badRequest("the imgproxy source is not valid base64url (give plain/ for a percent-encoded one)")
        }
        return (decoded, ext)
    }

    /// Whether the signature is imgproxy's for `signedPath` under any of `configuration`'s key and salt pairs (the
    /// first `signatureSize` bytes of the HMAC), compared in constant time.
    func isSigned(by configuration: ImgproxyConfiguration) -> Bool {
        guard let given = Base64URL.decode(signature), given.count == configuration.signatureSize else { return false }
        let message = Array(signedPath.utf8)
        return configuration.keys.contains { pair in
            let code = Array(
                HMAC<SHA256>.authenticationCode(for: pair.salt + message, using: SymmetricKey(data: pair.key)))
            return Self.constantTimeEqual(Array(code.prefix(configuration.signatureSize)), given)
        }
    }

    /// The signature imgproxy's signers make for `path` (from the slash after the signature) under `key` and `salt`.
    static func signature(path: String, key: [UInt8], salt: [UInt8], size: Int = 32) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: salt + Array(path.utf8), using: SymmetricKey(data: key))
        return Base64URL.encode(Array(Array(code).prefix(size)))
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}

/// Unpadded (or padded) base64url, as imgproxy and thumbor write signatures and sources.
enum Base64URL {
    /// `bytes` in base64url without padding.
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacing("+", with: "-").replacing("/", with: "_")
            .replacing("=", with: "")
    }

    /// The bytes of base64url `text` (padding optional), or `nil` when it is not base64url.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var standard = ""
        standard.reserveCapacity(text.utf8.count + 3)
        for character in text.unicodeScalars {
            switch character {
            case "-": standard.append("+")
            case "_": standard.append("/")
            case "+", "/": return nil
            default: standard.unicodeScalars.append(character)
            }
        }
        let unpadded = standard.hasSuffix("=") ? standard.prefix { $0 != "=" } : Substring(standard)
        guard standard.dropFirst(unpadded.count).allSatisfy({ $0 == "=" }) else { return nil }
        var padded = String(unpadded)
        guard padded.count % 4 != 1 else { return nil }
        while padded.count % 4 != 0 { padded.append("=") }
        return Data(base64Encoded: padded).map(Array.init)
    }
}
