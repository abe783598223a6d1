import FoundationEssentials

/// Serving imgproxy's URLs (`/{signature}/{options}/plain/{source}@{ext}`) under a path prefix: their signatures
/// checked with imgproxy's key and salt pairs, their options read as imgproxy reads them (docs/migrating.md).
///
/// ```swift
/// var imgproxy = ImgproxyConfiguration(path: "/")
/// imgproxy.keys = [try .init(keyHex: "943b421c9eb07c83…", saltHex: "520f986b998545b4…")]
/// configuration.imgproxy = imgproxy
/// ```
public struct ImgproxyConfiguration: Sendable {
    /// A key and salt pair (imgproxy's `IMGPROXY_KEY` and `IMGPROXY_SALT`, decoded from hex).
    public struct KeyPair: Sendable {
        /// The HMAC key.
        public var key: [UInt8]
        /// What is signed before the path.
        public var salt: [UInt8]

        /// A pair of bytes.
        public init(key: [UInt8], salt: [UInt8]) {
            self.key = key
            self.salt = salt
        }

        /// A pair from hexadecimal text, as imgproxy's configuration gives it.
        ///
        /// - Throws: ``InvalidImageQuery`` naming which is not hexadecimal (or is empty).
        public init(keyHex: String, saltHex: String) throws(InvalidImageQuery) {
            guard let key = Self.bytes(hex: keyHex) else {
                throw InvalidImageQuery(message: "the imgproxy key is not hexadecimal (an even number of 0-9a-f)")
            }
            guard let salt = Self.bytes(hex: saltHex) else {
                throw InvalidImageQuery(message: "the imgproxy salt is not hexadecimal (an even number of 0-9a-f)")
            }
            self.init(key: key, salt: salt)
        }

        /// The bytes of `text` in hexadecimal, or `nil` when it is empty, of odd length, or not hexadecimal.
        static func bytes(hex text: String) -> [UInt8]? {
            let digits = Array(text.utf8)
            guard !digits.isEmpty, digits.count % 2 == 0 else { return nil }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(digits.count / 2)
            for index in stride(from: 0, to: digits.count, by: 2) {
                guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else {
                    return nil
                }
                bytes.append(byte)
            }
            return bytes
        }
    }

    /// Where the URLs are served: `/` (imgproxy's own layout) or a prefix such as `/imgproxy`.
    public var path: String
    /// The pairs signatures are checked against: any one of them verifies (imgproxy's key rotation). Empty: every
    /// request must be allowed unsigned (``ServerConfiguration/allowsUnsigned``).
    public var keys: [KeyPair] = []
    /// How many bytes of the HMAC a signature carries (imgproxy's `IMGPROXY_SIGNATURE_SIZE`). 32 (all) by default.
    public var signatureSize = 32
    /// Presets by name, each a list of option segments (`resizing_type:fill`, `enlarge:1`): imgproxy's
    /// `IMGPROXY_PRESETS`. A preset named `default` applies to every URL first. None by default.
    public var presets: [String: [String]] = [:]

    /// Serves imgproxy URLs under `path`.
    public init(path: String) {
        self.path = path
    }

    /// A preset from imgproxy's form `name=option/option/…` (`sharp=sharpen:0.7/q:90`).
    ///
    /// - Throws: ``InvalidImageQuery`` when it is not of that form.
    public static func preset(parsing text: String) throws(InvalidImageQuery) -> (name: String, options: [String]) {
        guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
            throw InvalidImageQuery(message: "imgproxy preset '\(text)' is not NAME=option/option")
        }
        let options = text[text.index(after: equals)...].split(separator: "/").map(String.init)
        guard !options.isEmpty, options.allSatisfy({ $0.contains(":") }) else {
            throw InvalidImageQuery(message: "imgproxy preset '\(text)' is not NAME=option:args/option:args")
        }
        return (String(text[..<equals]), options)
    }
}

/// Serving thumbor's URLs (`/{hmac}/[meta/][trim/][AxB:CxD/][fit-in/][-]Wx[-]H/[halign/][valign/][smart/]
/// [filters:…/]{source}`) under a path prefix, signed as libthumbor signs them (docs/migrating.md).
public struct ThumborConfiguration: Sendable {
    /// Where the URLs are served: `/` (thumbor's own layout) or a prefix such as `/thumbor`.
    public var path: String
    /// thumbor's `SECURITY_KEY`s: a URL signed with any of them verifies. Empty: only `unsafe/` URLs, and only when
    /// unsigned requests are allowed.
    public var keys: [[UInt8]] = []

    /// Serves thumbor URLs under `path`.
    public init(path: String) {
        self.path = path
    }
}
