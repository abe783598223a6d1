import ArgumentParser
import FoundationEssentials
import OspreyCodecs

/// The formats `fetch` writes: one of the encoders', or the bytes as downloaded.
enum FetchFormat: ExpressibleByArgument, Equatable {
    case original
    case encoded(OutputFormat)

    init?(argument: String) {
        if argument == "original" {
            self = .original
        } else if let format = OutputFormat(argument: argument) {
            self = .encoded(format)
        } else {
            return nil
        }
    }

    var imageFormat: ImageFormat? {
        switch self {
        case .original: nil
        case .encoded(let format): format.imageFormat
        }
    }

    /// Whether ``EncodingOptions/quality`` means anything to the format written.
    var takesQuality: Bool {
        guard let format = imageFormat else { return false }
        // A registered format's encoder decides what quality means to it.
        return [.jpeg, .webp, .avif, .jxl].contains(format) || !ImageFormat.builtIn.contains(format)
    }

    static var allValueStrings: [String] { OutputFormat.allValueStrings + ["original"] }
}

/// What `fetch` prints for one URL.
struct FetchLine {
    let url: String
    let ms: Double
    var source: String?
    var file: String?
    var format: String?
    var width: Int?
    var height: Int?
    var frames: Int?
    var bytes: Int?
    var cached: Bool?
    var cacheError: String?
    var error: String?

    init(url: String, ms: Double) {
        self.url = url
        self.ms = ms
    }

    var json: String {
        var line = JSONLine()
        line.add("url", url)
        line.add("status", error == nil ? "ok" : "error")
        line.add("source", source)
        line.add("file", file)
        line.add("format", format)
        line.add("width", width)
        line.add("height", height)
        line.add("frames", frames)
        line.add("bytes", bytes)
        line.add("cached", cached)
        line.add("cacheError", cacheError)
        line.add("ms", Int(ms.rounded()))
        line.add("error", error)
        return line.text
    }

    var text: String {
        if let error { return "error  \(url): \(error)" }
        let frames = (self.frames ?? 1) > 1 ? ", \(self.frames ?? 1) frames" : ""
        let notCached = cacheError.map { "  (not cached: \($0))" } ?? ""
        return "ok     \(url) → \(file ?? "")  \(source ?? "")  \(width ?? 0)x\(height ?? 0) \(format ?? "")\(frames), "
            + "\(bytes ?? 0) bytes, \(Int(ms.rounded())) ms" + notCached
    }
}
