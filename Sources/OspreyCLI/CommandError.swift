import ArgumentParser
import Foundation
import Osprey
import OspreyCodecs

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

/// The bytes of `source`: an http or https URL, loaded through the image manager with the default settings (so it
/// lands in, or comes from, the disk cache), or a file path.
func readSource(_ source: String) async throws(CommandError) -> [UInt8] {
    let lowercased = source.lowercased()
    guard lowercased.hasPrefix("http://") || lowercased.hasPrefix("https://") else {
        return [UInt8](try readFile(source))
    }
    do {
        let loading = try LoadingOptions.parse([])  // the defaults, with the environment's overrides
        let manager = try loading.makeManager()
        let request = try ImageRequest(string: source, options: loading.requestOptions)
        let result = try await manager.image(for: request)
        if let data = result.data { return data }
        return try ImageEncoder.encode(
            result.image, as: result.image.sourceFormat == .unknown ? .png : result.image.sourceFormat)
    } catch let error as ImageError {
        throw CommandError(message: error.description)
    } catch let error as OspreyError {
        throw CommandError(message: error.description)
    } catch {
        throw CommandError(message: "\(error)")
    }
}
