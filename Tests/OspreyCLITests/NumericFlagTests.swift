import Foundation
import Testing

/// Every numeric flag takes plain decimal only: a usage error (status 2, one line naming the flag's value) for the
/// spellings Swift's `Int(_:)` and `Double(_:)` would read (`+5`, and for `Double` `0x10` as 16, `1e2`, `inf`, `nan`).
@Suite struct NumericFlagTests {
    static let notDecimal = ["0x10", "1e2", "inf", "nan", "+5", " 5", "5 ", "\u{665}"]

    /// A command with one numeric flag in it, `{}` marking the value, and that the command line is otherwise sound.
    static let commands: [[String]] = [
        ["fetch", "--format", "jpeg", "--quality", "{}", "http://127.0.0.1:9/a.png"],
        ["fetch", "--max-concurrent", "{}", "http://127.0.0.1:9/a.png"],
        ["fetch", "--timeout", "{}", "http://127.0.0.1:9/a.png"],
        ["fetch", "--resize", "{}x10", "http://127.0.0.1:9/a.png"],
        ["prefetch", "--max-concurrent", "{}", "-i", "/dev/null"],
        ["convert", "--quality", "{}", "in.png", "out.jpg"],
        ["info", "--max-bytes", "{}", "in.png"],
        ["cache", "info", "--size-limit", "{}"],
        ["serve", "--allow-unsigned", "--port", "{}"],
        ["sign", "--secret", "s", "--expires-in", "{}", "https://example.com/a.jpg"],
    ]

    @Test("each numeric flag refuses every non-decimal spelling as a usage error", arguments: commands)
    func onlyDecimal(command: [String]) async throws {
        try await withDirectory { directory in
            for text in Self.notDecimal {
                let arguments = command.map { $0.replacingOccurrences(of: "{}", with: text) }
                let run = try await OspreyBinary.run(arguments, environment: ["OSPREY_CACHE_DIR": directory])
                #expect(run.status == 2, "osprey \(arguments): \(run.standardError)")
                #expect(run.standardError.contains(text.trimmingCharacters(in: .whitespaces)), "\(run.standardError)")
            }
        }
    }

    @Test("numbers from the environment are decimal too")
    func environment() async throws {
        for (name, text) in [("OSPREY_TIMEOUT", "0x10"), ("OSPREY_MAX_CONCURRENT", "+5"), ("OSPREY_TIMEOUT", "inf")] {
            let run = try await OspreyBinary.run(["fetch", "http://127.0.0.1:9/a.png"], environment: [name: text])
            #expect(run.status == 2, "\(name)=\(text)")
            #expect(run.standardError.contains("\(name)='\(text)' is not valid"), "\(run.standardError)")
        }
        let port = try await OspreyBinary.run(["serve", "--allow-unsigned"], environment: ["OSPREY_PORT": "0x50"])
        #expect(
            port.status == 2 && port.standardError.contains("OSPREY_PORT must be an integer"), "\(port.standardError)")
    }
}
