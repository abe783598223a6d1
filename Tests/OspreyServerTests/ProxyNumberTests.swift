import Foundation
import HTTPTypes
import HummingbirdTesting
import Osprey
import Testing

@testable import OspreyServer

/// Every numeric parameter of `/img` takes plain decimal only: Swift's `Int(_:)` and `Double(_:)` would read `+5`, and
/// `Double` hex floats (`0x10` as 16), exponents, `inf` and `nan`, none of which a URL's author means as a number.
@Suite struct ProxyNumberTests {
    /// What is not a decimal number, in every form the parsers of the standard library would take or trip on.
    static let notDecimal = ["0x10", "1e2", "inf", "nan", "+5", " 5", "5 ", "\u{665}", "5.5.5", "-", ".", ""]

    /// Each numeric parameter with a value it accepts, and how a bad number is put in its place.
    static let parameters: [(name: String, valid: String, spliced: @Sendable (String) -> String)] = [
        ("w", "16", { $0 }), ("h", "16", { $0 }), ("q", "16", { $0 }), ("blur", "16", { $0 }),
        ("sharpen", "1", { $0 }), ("dpr", "2", { $0 }), ("frame", "0", { $0 }), ("rot", "90", { $0 }),
        ("exp", "4102444800", { $0 }), ("fp", "0.5:0.5", { "0.5:\($0)" }), ("crop", "0:0:8:8", { "0:\($0):8:8" }),
        ("pad", "4", { $0 }), ("strip", "1", { $0 }), ("extend", "0", { $0 }),
    ]

    @Test("each numeric parameter refuses every non-decimal spelling with a 400 naming it, and takes its decimal one")
    func onlyDecimal() async throws {
        try await withProxy { client in
            for (name, valid, spliced) in Self.parameters {
                // A source nobody serves: a parameter's refusal comes before any fetch, its acceptance fails later.
                var base = [("url", "http://127.0.0.1:9/x.jpg")]
                if ["fp", "crop"].contains(name) { base += [("w", "8"), ("h", "8"), ("fit", "cover")] }
                let accepted = try await client.execute(uri: imageURI(base + [(name, valid)]), method: .get)
                #expect(accepted.status != .badRequest, "\(name)=\(valid)")
                for text in Self.notDecimal {
                    let response = try await client.execute(uri: imageURI(base + [(name, spliced(text))]), method: .get)
                    #expect(response.status == .badRequest, "\(name)=\(spliced(text))")
                    let message = try response.json()["error"] as? String ?? ""
                    #expect(message.contains("'\(name)'"), "\(name)=\(spliced(text)): \(message)")
                }
            }
        }
    }

    @Test("the parsers: decimal digits, one leading minus, one point for fractions; nothing else")
    func decimalText() {
        #expect(DecimalText.integer("16") == 16)
        #expect(DecimalText.integer("-3") == -3)
        #expect(DecimalText.integer("007") == 7)
        #expect(DecimalText.number("0.25") == 0.25)
        #expect(DecimalText.number(".5") == 0.5)
        #expect(DecimalText.number("5.") == 5)
        #expect(DecimalText.number("-1.5") == -1.5)
        for text in Self.notDecimal + ["1.5", "99999999999999999999"] {
            #expect(DecimalText.integer(text) == nil, "\(text)")
        }
        for text in Self.notDecimal + [String(repeating: "9", count: 400)] {
            #expect(DecimalText.number(text) == nil, "\(text)")
        }
    }
}
