/// Numbers as people write them in URLs, flags and configuration: ASCII digits, an optional leading `-`, and for
/// fractions one `.`. Swift's `Int(_:)` and `Double(_:)` read more than that (`+5`; and for `Double` hex floats such
/// as `0x10`, exponents, `inf`, `nan`), which a proxy parameter or a flag must refuse rather than read as something
/// its author did not write.
package enum DecimalText {
    /// The integer `text` spells (`-?[0-9]+`), or `nil` for anything else or one outside `Int`'s range.
    package static func integer(_ text: some StringProtocol) -> Int? {
        let utf8 = text.utf8
        let digits = utf8.first == UInt8(ascii: "-") ? utf8.dropFirst() : utf8[...]
        guard !digits.isEmpty, digits.allSatisfy(isDigit) else { return nil }
        return Int(String(text))
    }

    /// The number `text` spells (`-?[0-9]+(.[0-9]*)?` or `-?.[0-9]+`), or `nil` for anything else or one too large
    /// to be finite.
    package static func number(_ text: some StringProtocol) -> Double? {
        let utf8 = text.utf8
        let unsigned = utf8.first == UInt8(ascii: "-") ? utf8.dropFirst() : utf8[...]
        let point = unsigned.firstIndex(of: UInt8(ascii: "."))
        let whole = unsigned[..<(point ?? unsigned.endIndex)]
        let fraction = point.map { unsigned[unsigned.index(after: $0)...] } ?? unsigned[unsigned.endIndex...]
        guard whole.allSatisfy(isDigit), fraction.allSatisfy(isDigit), !whole.isEmpty || !fraction.isEmpty,
            let value = Double(String(text)), value.isFinite
        else { return nil }
        return value
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
}
