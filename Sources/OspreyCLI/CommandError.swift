import ArgumentParser
import FoundationEssentials
import Osprey
import OspreyCodecs
import OspreyCommandLine

/// A failure a command reports as one line on standard error.
struct CommandError: Error {
    let message: String
}

/// Writes `message` and a newline to standard error.
func printError(_ message: String) {
    StandardStream.error.write(message + "\n")
}

/// `--max-bytes`: how much the reading commands (`info`, `convert`) read of one file or URL.
struct ByteLimitOption: ParsableArguments {
    @Option(
        help: "The most bytes read of one file or URL (default: 67108864, 64 MiB); a larger one is an error.",
        transform: DecimalArgument.integer)
    var maxBytes: Int = InputFile.defaultByteLimit

    func validate() throws {
        guard maxBytes > 0 else { throw ValidationError("--max-bytes must be at least 1") }
    }
}

/// Reads what `info` and `convert` are given: files (and `-`, pipes, FIFOs), or http/https URLs loaded through the
/// image manager with the default settings (so they land in, or come from, the disk cache), at most `byteLimit`
/// bytes of each. The manager, and with it the cache, is made at the first URL and serves the rest of the run.
final class SourceReader {
    let byteLimit: Int
    /// The `--ca-file` given, if any.
    let certificateAuthorityFile: String?
    private var loaded: (manager: ImageManager, options: ImageRequest.Options)?

    init(byteLimit: Int = InputFile.defaultByteLimit, certificateAuthorityFile: String? = nil) {
        self.byteLimit = byteLimit
        self.certificateAuthorityFile = certificateAuthorityFile
    }

    /// The bytes of `source`.
    func bytes(of source: String) async throws(CommandError) -> [UInt8] {
        let lowercased = source.lowercased()
        guard lowercased.hasPrefix("http://") || lowercased.hasPrefix("https://") else {
            return try InputFile.read(source, limit: byteLimit)
        }
        do {
            let (manager, options) = try loader()
            let result = try await manager.image(for: try ImageRequest(string: source, options: options))
            if let data = result.data, data.count > byteLimit {
                throw InputFile.tooLarge(size: data.count, limit: byteLimit)
            }
            if let data = result.data { return data }
            return try ImageEncoder.encode(
                result.image, as: result.image.sourceFormat == .unknown ? .png : result.image.sourceFormat)
        } catch let error as ImageError {
            throw CommandError(message: error.description)
        } catch let error as CacheError {
            throw CommandError(message: error.description)
        } catch let error as CommandError {
            throw error
        } catch {
            throw CommandError(message: "\(error)")
        }
    }

    /// The first `count` bytes of `source` when it is a regular file larger than that (reading a header needs no
    /// more); `nil` for anything else, which ``bytes(of:)`` reads whole.
    ///
    /// - Throws: ``CommandError`` when the file is larger than the byte limit: refused from its size, unread.
    func prefixOfFile(_ source: String, count: Int) throws(CommandError) -> [UInt8]? {
        let lowercased = source.lowercased()
        guard source != "-", !lowercased.hasPrefix("http://"), !lowercased.hasPrefix("https://") else { return nil }
        if let size = InputFile.regularFileSize(source), size > byteLimit {
            throw InputFile.tooLarge(size: size, limit: byteLimit)
        }
        return (try? InputFile.readPrefix(source, count: count)) ?? nil
    }

    /// Ends the run's loads, when a URL was read: the manager's stores finish and the disk cache is closed, its
    /// log folded into the index, as `fetch` and `prefetch` leave it.
    func finish() async {
        await loaded?.manager.finishRun()
    }

    private func loader() throws -> (manager: ImageManager, options: ImageRequest.Options) {
        if let loaded { return loaded }
        // The defaults, with the environment's overrides.
        let loading = try LoadingOptions.parse(certificateAuthorityFile.map { ["--ca-file", $0] } ?? [])
        let made = (try loading.makeManager(maximumBodySize: byteLimit), loading.requestOptions)
        loaded = made
        return made
    }
}
