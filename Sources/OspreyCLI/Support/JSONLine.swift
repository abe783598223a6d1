import FoundationEssentials

/// One JSON object on one line, with its keys in the order they were added (the order the documentation lists
/// them), absent values omitted: what every `--json` output prints.
struct JSONLine {
    private var fields: [String] = []

    mutating func add(_ key: String, _ value: String?) {
        guard let value else { return }
        fields.append(Self.quoted(key) + ":" + Self.quoted(value))
    }

    mutating func add(_ key: String, _ value: Int?) {
        guard let value else { return }
        fields.append(Self.quoted(key) + ":" + String(value))
    }

    mutating func add(_ key: String, _ value: Bool?) {
        guard let value else { return }
        fields.append(Self.quoted(key) + ":" + (value ? "true" : "false"))
    }

    var text: String { "{" + fields.joined(separator: ",") + "}" }

    /// `value` as a JSON string literal.
    static func quoted(_ value: String) -> String {
        var result = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
