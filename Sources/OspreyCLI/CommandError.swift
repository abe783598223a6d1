import Foundation

/// A failure a command reports as one line on standard error.
struct CommandError: Error {
    let message: String
}

/// Reads a whole file, or fails with a message naming the reason.
func readFile(_ path: String) throws(CommandError) -> Data {
    guard FileManager.default.fileExists(atPath: path) else { throw CommandError(message: "no such file") }
    guard let data = FileManager.default.contents(atPath: path) else { throw CommandError(message: "cannot read file") }
    return data
}

/// Writes `message` and a newline to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
