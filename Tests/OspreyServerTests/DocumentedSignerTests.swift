import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// The signers docs/serve.md shows (Python, JavaScript, Go), taken from the page itself and run: the URL each prints
/// is served by a proxy with the same secret, and refused by one with another. A language whose tool is not
/// installed is skipped, saying so, unless `OSPREY_REQUIRE_SIGNERS=1` (as CI sets, installing them) demands it.
@Suite struct DocumentedSignerTests {
    /// A signer of the page: the fenced block's language, the file it is written to, and the tool and arguments that
    /// run that file (given after them, by its absolute path).
    struct Signer: Sendable, CustomStringConvertible {
        let language: String
        let file: String
        let tool: String
        let arguments: [String]

        var description: String { language }
    }

    static let python = Signer(language: "python", file: "signer.py", tool: "python3", arguments: [])
    static let javascript = Signer(language: "javascript", file: "signer.js", tool: "node", arguments: [])
    static let go = Signer(language: "go", file: "signer.go", tool: "go", arguments: ["run"])

    static var isRequired: Bool { ProcessInfo.processInfo.environment["OSPREY_REQUIRE_SIGNERS"] == "1" }

    /// The executable `name` on the `PATH`, if any.
    static func installed(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// The fenced code block of `language` in the "Signing" section of docs/serve.md.
    static func block(_ language: String) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let page = try String(contentsOf: root.appendingPathComponent("docs/serve.md"), encoding: .utf8)
        let section = try #require(page.range(of: "### Signing")).upperBound
        let opening = try #require(page.range(of: "```" + language + "\n", range: section..<page.endIndex))
        let closing = try #require(page.range(of: "\n```\n", range: opening.upperBound..<page.endIndex))
        return String(page[opening.upperBound..<closing.lowerBound]) + "\n"
    }

    static let secret = "a secret the test gives"

    @Test(.enabled(if: installed("python3") != nil || isRequired, "python3 is not installed"))
    func python() async throws { try await check(Self.python) }

    @Test(.enabled(if: installed("node") != nil || isRequired, "node is not installed"))
    func javascript() async throws { try await check(Self.javascript) }

    @Test(.enabled(if: installed("go") != nil || isRequired, "go is not installed"))
    func go() async throws { try await check(Self.go) }

    /// Runs `signer`'s block, with the page's secret and source replaced by the test's, and requests what it prints.
    func check(_ signer: Signer) async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/cat.jpg", .ok(try Fixtures.jpeg()))
            let code = try Self.block(signer.language)
                .replacingOccurrences(of: "\"my secret\"", with: "\"\(Self.secret)\"")
                .replacingOccurrences(of: "https://example.com/cat.jpg", with: origin.url("/cat.jpg"))
            let printed = try run(signer, code: code)
            let base = "http://127.0.0.1:8080"
            let path = try #require(printed.hasPrefix(base) ? String(printed.dropFirst(base.count)) : nil, "\(printed)")
            try await withProxy({
                $0.secret = Array(Self.secret.utf8)
                $0.allowsUnsigned = false
            }) { client in
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .ok, "\(signer): \(path)")
                #expect(try Fixtures.decode(response.body).width == 300)
            }
            try await withProxy({
                $0.secret = Array("another secret".utf8)
                $0.allowsUnsigned = false
            }) { client in
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .forbidden)
            }
        }
    }

    /// Writes `code` to the signer's file in a directory of its own and runs it; returns what it printed.
    func run(_ signer: Signer, code: String) throws -> String {
        let directory = NSTemporaryDirectory() + "osprey-signer-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/" + signer.file
        try code.write(toFile: file, atomically: true, encoding: .utf8)
        let tool = try #require(Self.installed(signer.tool), "\(signer.tool) is required")
        var environment = ProcessInfo.processInfo.environment
        // Go keeps its build cache under the home directory, which a CI runner may not have.
        environment["GOCACHE"] = environment["GOCACHE"] ?? NSTemporaryDirectory() + "osprey-go-cache"
        // The file by its absolute path: the child needs no working directory of its own.
        let outcome = try ChildProcess.run(
            tool, signer.arguments + [file], environment: environment, output: .file(directory + "/output"),
            error: .descriptor(1))
        let data = FileManager.default.contents(atPath: directory + "/output") ?? Data()
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(outcome.status == 0, "\(signer): \(text)")
        return text
    }
}
