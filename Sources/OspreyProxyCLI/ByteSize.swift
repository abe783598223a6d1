import FoundationEssentials
import Osprey

/// A size in bytes as operators write it: `1073741824`, `512M`, `1G`, `1.5GiB`, `64KB` (every suffix counts in
/// 1024s, as memory is counted), or `60%` of the memory available to the process (its cgroup's limit, else the
/// machine's).
enum ByteSize {
    /// The bytes `text` names, or `nil` when it names none (or zero, or a percentage over 100).
    static func parse(_ text: String, available: () -> Int? = { SystemMemory.current()?.limit }) -> Int? {
        let trimmed = text.trimmingWhitespace()
        if trimmed.hasSuffix("%") {
            guard let percent = DecimalText.number(trimmed.dropLast()), percent > 0, percent <= 100,
                let total = available()
            else { return nil }
            return Int(Double(total) * percent / 100)
        }
        let digits = trimmed.prefix { $0.isNumber || $0 == "." }
        let unit = trimmed.dropFirst(digits.count).lowercased()
        let powers: [String: Int] = [
            "": 0, "b": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20, "g": 30, "gb": 30, "gib": 30,
            "t": 40, "tb": 40, "tib": 40,
        ]
        guard let value = DecimalText.number(digits), let power = powers[unit] else { return nil }
        let bytes = value * Double(1 << power)
        guard bytes >= 1, bytes < Double(Int.max) else { return nil }
        return Int(bytes)
    }
}
