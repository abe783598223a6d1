internal import Crypto
import FoundationEssentials

/// Signs and checks the proxy's URLs: `sig` is the HMAC-SHA256, under the server's secret, of the path and the
/// canonical query, in unpadded base64url (docs/threat-model.md). Without a valid signature an open proxy would
/// resize anything for anyone.
///
/// The canonical query is every parameter but `sig`, sorted by name then value, each name and value
/// percent-encoded (everything but RFC 3986's unreserved characters), joined with `&`; so the signature does not
/// depend on the order the parameters were written in or on how they were escaped.
///
/// Several secrets rotate a key without breaking a URL already handed out: the first signs, every one verifies. Put
/// the new secret first on every instance, let the URLs signed with the old one age out, then drop it.
///
/// ```swift
/// let signer = URLSigner(secret: Array("s3cret".utf8))
/// let sig = signer.signature(path: "/img", parameters: [("url", "https://example.com/a.jpg"), ("w", "300")])
/// signer.isValid(sig, path: "/img", parameters: [("w", "300"), ("url", "https://example.com/a.jpg")])  // true
/// ```
public struct URLSigner: Sendable {
    /// The keys: the first signs, each verifies.
    private let keys: [SymmetricKey]

    /// A signer with `secret` (at least 16 bytes are advisable; any length works).
    public init(secret: [UInt8]) {
        keys = [SymmetricKey(data: secret)]
    }

    /// A signer that signs with the first of `secrets` and accepts a signature by any of them; `nil` when there are
    /// none.
    public init?(secrets: [[UInt8]]) {
        guard !secrets.isEmpty else { return nil }
        keys = secrets.map { SymmetricKey(data: $0) }
    }

    /// The `sig` value for `path` and `parameters` (any `sig` among them is left out), under the first secret.
    public func signature(path: String, parameters: [(name: String, value: String)]) -> String {
        let message = Self.canonical(path: path, parameters: parameters)
        let code = HMAC<SHA256>.authenticationCode(for: Array(message.utf8), using: keys[0])
        return Self.base64URL(Data(code))
    }

    /// Whether `signature` is the signature of `path` and `parameters` under any of the secrets, each compared in
    /// constant time.
    public func isValid(_ signature: String, path: String, parameters: [(name: String, value: String)]) -> Bool {
        guard let given = Self.decodeBase64URL(signature) else { return false }
        let message = Array(Self.canonical(path: path, parameters: parameters).utf8)
        return keys.contains { HMAC<SHA256>.isValidAuthenticationCode(given, authenticating: message, using: $0) }
    }

    /// `path` with `parameters` as a query, in their order and percent-encoded as the canonical form encodes them,
    /// followed by their `sig`: what a page links to (`osprey sign` prints it).
    public func signedPath(_ path: String, parameters: [(name: String, value: String)]) -> String {
        let query = parameters.filter { $0.name != "sig" }.map { Self.escape($0.name) + "=" + Self.escape($0.value) }
        let sig = signature(path: path, parameters: parameters)
        return path + "?" + (query + ["sig=" + sig]).joined(separator: "&")
    }

    /// The text that is signed: `path?name=value&...`, canonical (see the type's documentation).
    static func canonical(path: String, parameters: [(name: String, value: String)]) -> String {
        var pairs: [(name: String, value: String)] = []
        for parameter in parameters where parameter.name != "sig" {
            pairs.append((escape(parameter.name), escape(parameter.value)))
        }
        pairs.sort { left, right in left.name != right.name ? left.name < right.name : left.value < right.value }
        let query: [String] = pairs.map { pair in pair.name + "=" + pair.value }
        return path + "?" + query.joined(separator: "&")
    }

    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)

    /// Percent-encodes every byte outside RFC 3986's unreserved set, in upper-case hex.
    static func escape(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            if unreserved.contains(byte) {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return result
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "")
    }

    static func decodeBase64URL(_ text: String) -> Data? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            return nil
        }
        var base64 = text.replacing("-", with: "+").replacing("_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}

extension String {
    /// `self` with zeros in front up to `length` characters (hex bytes).
    func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
