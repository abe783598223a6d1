import Crypto
import Foundation
import Testing

@testable import OspreyServer

/// URL signatures: an independent HMAC computed in the test, order- and escaping-independence, and refusals.
@Suite struct URLSignerTests {
    let signer = URLSigner(secret: Array("a secret of 24 bytes!!!!".utf8))
    let parameters: [(name: String, value: String)] = [
        ("url", "https://example.com/a b.jpg?x=1&y=2"), ("w", "300"), ("fit", "cover"),
    ]

    @Test("the signature is HMAC-SHA256 of the path and the sorted, escaped query, in unpadded base64url")
    func knownValue() {
        let canonical = "/img?fit=cover&url=https%3A%2F%2Fexample.com%2Fa%20b.jpg%3Fx%3D1%26y%3D2&w=300"
        #expect(URLSigner.canonical(path: "/img", parameters: parameters) == canonical)
        let expected = Data(
            HMAC<SHA256>.authenticationCode(
                for: Array(canonical.utf8), using: SymmetricKey(data: Array("a secret of 24 bytes!!!!".utf8)))
        ).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        let signature = signer.signature(path: "/img", parameters: parameters)
        #expect(signature == expected)
        #expect(signature.count == 43 && !signature.contains("="))
    }

    @Test("valid whatever the parameters' order and whether sig is among them; invalid after any change")
    func validation() {
        let signature = signer.signature(path: "/img", parameters: parameters)
        #expect(signer.isValid(signature, path: "/img", parameters: parameters.reversed()))
        #expect(signer.isValid(signature, path: "/img", parameters: parameters + [("sig", signature)]))
        #expect(!signer.isValid(signature, path: "/img", parameters: [("w", "301")] + parameters.dropFirst(2)))
        #expect(!signer.isValid(signature, path: "/img", parameters: parameters + [("blur", "2")]))
        #expect(!signer.isValid(signature, path: "/other", parameters: parameters))
        #expect(
            !URLSigner(secret: Array("another secret".utf8)).isValid(signature, path: "/img", parameters: parameters))
        #expect(!signer.isValid(String(signature.dropLast()), path: "/img", parameters: parameters))
        #expect(!signer.isValid("not base64!", path: "/img", parameters: parameters))
        #expect(!signer.isValid("", path: "/img", parameters: parameters))
    }

    @Test("escaping leaves only the unreserved characters as they are")
    func escaping() {
        #expect(URLSigner.escape("aZ09-._~") == "aZ09-._~")
        #expect(URLSigner.escape("a b/é&=+") == "a%20b%2F%C3%A9%26%3D%2B")
    }
}
