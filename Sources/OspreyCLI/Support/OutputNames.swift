import Foundation
import OspreyCodecs

/// Chooses the files `fetch` writes: a name from the URL's last path component with the extension of the format
/// written, made unique within the run and, unless `--force`, against the files already in the directory (`cat.jpg`,
/// then `cat-1.jpg`, `cat-2.jpg`, ...), so an unrelated file is never overwritten.
struct OutputNames {
    let directory: String
    let overwrites: Bool
    private var taken: Set<String> = []

    init(directory: String, overwrites: Bool) {
        self.directory = directory
        self.overwrites = overwrites
    }

    /// The path to write `url`'s image to, as `format`; reserved so no later call returns it.
    mutating func reserve(for url: URL, format: ImageFormat) -> String {
        let stem = Self.stem(of: url)
        let suffix = "." + Self.fileExtension(of: format)
        var candidate = stem + suffix
        var counter = 0
        while taken.contains(candidate)
            || (!overwrites && FileManager.default.fileExists(atPath: directory + "/" + candidate))
        {
            counter += 1
            candidate = "\(stem)-\(counter)\(suffix)"
        }
        taken.insert(candidate)
        return directory + "/" + candidate
    }

    /// The URL's last path component without its extension, reduced to characters safe in a file name; `image` when
    /// nothing is left.
    static func stem(of url: URL) -> String {
        let last = url.lastPathComponent.removingPercentEncoding ?? url.lastPathComponent
        var name = last == "/" ? "" : last
        if let dot = name.lastIndex(of: "."), dot != name.startIndex { name = String(name[..<dot]) }
        let safe = name.unicodeScalars.map { scalar -> Character in
            scalar == "/" || scalar == "\\" || scalar.value < 0x20 || scalar == ":" ? "_" : Character(scalar)
        }
        var stem = String(safe).trimmingCharacters(in: .whitespaces)
        while stem.hasPrefix(".") { stem.removeFirst() }
        return stem.isEmpty ? "image" : String(stem.prefix(120))
    }

    static func fileExtension(of format: ImageFormat) -> String {
        format.fileExtension ?? "bin"
    }
}
