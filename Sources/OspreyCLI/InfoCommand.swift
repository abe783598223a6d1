import ArgumentParser
import Foundation
import OspreyCodecs

/// `osprey info FILE...`: each file's format and stored size, read from its header without decoding pixels.
struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Print the format and size of image files, read from their headers.",
        discussion: "Exits 0 when every file was read, 1 when any could not be."
    )

    @Argument(help: "Image files to inspect.")
    var files: [String]

    @Flag(help: "Print one JSON object per file: {\"file\",\"status\",\"format\",\"width\",\"height\",\"error\"}.")
    var json = false

    func run() throws {
        var failures = 0
        for file in files {
            let outcome = Self.inspect(file)
            if case .failure = outcome { failures += 1 }
            print(json ? Self.jsonLine(file, outcome) : Self.textLine(file, outcome))
        }
        if failures > 0 { throw ExitCode(1) }
    }

    private static func inspect(_ file: String) -> Result<ImageHeader, InfoError> {
        guard let data = FileManager.default.contents(atPath: file) else {
            return .failure(InfoError(message: "cannot read file"))
        }
        do {
            return .success(try ImageHeader(reading: data))
        } catch {
            return .failure(InfoError(message: error.description))
        }
    }

    private static func textLine(_ file: String, _ outcome: Result<ImageHeader, InfoError>) -> String {
        switch outcome {
        case .success(let header): "\(file): \(header.format) \(header.width)x\(header.height)"
        case .failure(let error): "\(file): error: \(error.message)"
        }
    }

    private static func jsonLine(_ file: String, _ outcome: Result<ImageHeader, InfoError>) -> String {
        let line: InfoLine
        switch outcome {
        case .success(let header):
            line = InfoLine(
                file: file, status: "ok", format: header.format.rawValue, width: header.width, height: header.height)
        case .failure(let error):
            line = InfoLine(file: file, status: "error", error: error.message)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a struct of strings and integers cannot fail.
        return String(decoding: (try? encoder.encode(line)) ?? Data(), as: UTF8.self)
    }
}

private struct InfoError: Error {
    let message: String
}

/// One line of `osprey info --json`; absent fields are omitted.
private struct InfoLine: Encodable {
    var file: String
    var status: String
    var format: String?
    var width: Int?
    var height: Int?
    var error: String?
}
