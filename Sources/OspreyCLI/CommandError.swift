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

/// Reads what `info` and `convert` are given: files, or http/https URLs loaded through the image manager with the
/// default settings (so they land in, or come from, the disk cache). The manager, and with it the cache, is made at
/// the first URL and serves the rest of the run.
final class SourceReader {
    private var loaded: (manager: ImageManager, options: ImageRequest.Options)?

    /// The bytes of `source`.
    func bytes(of source: String) async throws(CommandError) -> [UInt8] {
        let lowercased = source.lowercased()
        guard lowercased.hasPrefix("http://") || lowercased.hasPrefix("https://") else {
            return [UInt8](try readFile(source))
        }
        do {
            let (manager, options) = try loader()
            let result = try await manager.image(for: try ImageRequest(string: source, options: options))
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

    private func loader() throws -> (manager: ImageManager, options: ImageRequest.Options) {
        if let loaded { return loaded }
        let loading = try LoadingOptions.parse([])  // the defaults, with the environment's overrides
        let made = (try loading.makeManager(), loading.requestOptions)
        loaded = made
        return made
    }
}
