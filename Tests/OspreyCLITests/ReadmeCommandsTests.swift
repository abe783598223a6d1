import Foundation
import OspreyCodecs
import Testing

/// The README's shell examples that need no network, run as written.
@Suite struct ReadmeCommandsTests {
    static let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("README.md")

    /// The `osprey` lines of the ```sh block under `heading`, without their trailing `# comments`.
    static func commands(under heading: String) throws -> [[String]] {
        let text = try String(contentsOf: readme, encoding: .utf8)
        let section = try #require(text.components(separatedBy: heading + "\n").dropFirst().first)
        let block = section.components(separatedBy: "```sh\n")[1].components(separatedBy: "\n```")[0]
        return block.split(separator: "\n").filter { $0.hasPrefix("osprey ") }
            .map { line in
                let command = line.components(separatedBy: " #")[0]
                return command.split(separator: " ").dropFirst().map(String.init)
            }
    }

    @Test("the command-line examples on local files: info and convert")
    func commandLineExamples() async throws {
        let commands = try Self.commands(under: "## The command line")
        let local = commands.filter { ["info", "convert"].contains($0.first) }
        #expect(local.count == 3)
        try await withDirectory { directory in
            let pixels = try PixelBuffer(
                width: 640, height: 480, format: .rgb8, bytes: (0..<(640 * 480 * 3)).map { UInt8($0 % 253) })
            try Data(try ImageEncoder.encode(Image(pixels: pixels), as: .jpeg, quality: 90))
                .write(to: URL(fileURLWithPath: directory + "/photo.jpg"))
            for arguments in local {
                let run = try await OspreyBinary.run(
                    arguments.map { $0.hasSuffix(".jpg") || $0.hasSuffix(".webp") ? directory + "/" + $0 : $0 })
                #expect(run.status == 0, "osprey \(arguments.joined(separator: " ")): \(run.standardError)")
            }
            let thumbnail = try ImageDecoder.decode(
                Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/thumbnail.webp"))))
            #expect((thumbnail.width, thumbnail.height) == (256, 192))
        }
    }

    @Test("the proxy example's osprey sign prints the signed path curl asks for")
    func signExample() async throws {
        let text = try String(contentsOf: Self.readme, encoding: .utf8)
        let line = try #require(
            text.split(separator: "\n").first { $0.contains("$(osprey sign ") })
        let inner = try #require(
            line.components(separatedBy: "$(osprey ").dropFirst().first?.components(separatedBy: ")")
                .first)
        let run = try await OspreyBinary.run(
            inner.split(separator: " ").map(String.init), environment: ["OSPREY_SECRET": "s"])
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardOutput.hasPrefix("/img?url=https%3A%2F%2Fimg.example.com%2Fcat.jpg&"))
        #expect(run.standardOutput.contains("&sig="))
    }
}
