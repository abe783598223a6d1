import FoundationEssentials
import OspreyCodecs
import Synchronization

/// Chooses the files `fetch` writes, and writes them: a name from the URL's last path component with the extension of
/// the format written, made unique within the run and, unless `--force`, against the files already in the directory
/// (`cat.jpg`, then `cat-1.jpg`, `cat-2.jpg`, ...), so an unrelated file is never overwritten. Loads write their files
/// as they end, from any task.
///
/// A file is written whole before it is named (``OutputFile/Staged``), and a name is found free by the file taking it:
/// the link fails on a name that exists, and the next candidate is tried. So no existence check comes first, and no
/// other process can take the name between a check and the write.
final class OutputNames: Sendable {
    let directory: String
    let overwrites: Bool

    private struct Reserved {
        var taken: Set<String> = []
        /// For each name asked for, the counter its next candidate starts from: the ones before it are taken, so a
        /// run of many URLs ending in the same name tries each candidate once, not all of them again for every URL.
        var nextCounter: [String: Int] = [:]
    }
    private let reserved = Mutex(Reserved())

    init(directory: String, overwrites: Bool) {
        self.directory = directory
        self.overwrites = overwrites
    }

    /// Writes `bytes` under the first free name for `url`'s image as `format`, and returns its path.
    func write(_ bytes: [UInt8], for url: URL, format: ImageFormat) throws(CommandError) -> String {
        let stem = Self.stem(of: url)
        let suffix = "." + Self.fileExtension(of: format)
        let staged = try OutputFile.Staged(bytes, in: directory, for: directory + "/" + stem + suffix)
        while true {
            let path = directory + "/" + reserve(stem: stem, suffix: suffix)
            if overwrites {
                try staged.replace(at: path)
                return path
            }
            if try staged.place(at: path) { return path }
        }
    }

    /// The next name for `stem` and `suffix` that no earlier call of this run returned.
    private func reserve(stem: String, suffix: String) -> String {
        let first = stem + suffix
        return reserved.withLock { reserved in
            var counter = reserved.nextCounter[first] ?? 0
            var candidate = counter == 0 ? first : "\(stem)-\(counter)\(suffix)"
            while reserved.taken.contains(candidate) {
                counter += 1
                candidate = "\(stem)-\(counter)\(suffix)"
            }
            reserved.taken.insert(candidate)
            reserved.nextCounter[first] = counter + 1
            return candidate
        }
    }

    /// The URL's last path component without its extension, reduced to characters safe in a file name; `image` when
    /// nothing is left.
    static func stem(of url: URL) -> String {
        // Percent-decoded already by URL.
        let last = url.lastPathComponent
        var name = last == "/" ? "" : last
        if let dot = name.lastIndex(of: "."), dot != name.startIndex { name = String(name[..<dot]) }
        let safe = name.unicodeScalars.map { scalar -> Character in
            scalar == "/" || scalar == "\\" || scalar.value < 0x20 || scalar == ":" ? "_" : Character(scalar)
        }
        var stem = String(safe)
        // Trimmed here rather than with Osprey's helper: importing Osprey beside OspreyCodecs makes `Mutex` ambiguous
        // in the ThreadSanitizer build, where both declare one.
        while stem.first?.isWhitespace == true { stem.removeFirst() }
        while stem.last?.isWhitespace == true { stem.removeLast() }
        while stem.hasPrefix(".") { stem.removeFirst() }
        return stem.isEmpty ? "image" : String(stem.prefix(120))
    }

    static func fileExtension(of format: ImageFormat) -> String {
        format.fileExtension ?? "bin"
    }
}
