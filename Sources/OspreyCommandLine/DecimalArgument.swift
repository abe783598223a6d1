import ArgumentParser
import Osprey

/// The numeric flags' parsers: decimal digits only (`DecimalText`), so that `--quality 0x10`, `--timeout 1e2`,
/// `--timeout nan`, `--port +80` and `--port ' 80'` are usage errors, not numbers their author did not write.
package enum DecimalArgument {
    /// A whole number: `-?[0-9]+`.
    package static func integer(_ text: String) throws -> Int {
        guard let value = DecimalText.integer(text) else {
            throw ValidationError("'\(text)' is not a whole number (decimal digits only)")
        }
        return value
    }

    /// A number: `-?[0-9]+(.[0-9]*)?`.
    package static func number(_ text: String) throws -> Double {
        guard let value = DecimalText.number(text) else {
            throw ValidationError("'\(text)' is not a number (decimal digits and one '.' only)")
        }
        return value
    }
}
