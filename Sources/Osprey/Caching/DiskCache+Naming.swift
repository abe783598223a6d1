internal import COspreyDeflate
internal import Crypto

extension DiskCache {
    /// The file name of `key` (MISSION C3): the SHA-256 of the key in hex, plus the extension of the key's URL path
    /// when it is 1–5 letters or digits (so `https://x/a.JPG?w=1` → `<hash>.jpg`), which keeps the files
    /// recognisable to people and tools.
    public static func fileName(forKey key: String) -> String {
        let digest = SHA256.hash(data: Array(key.utf8))
        var name = ""
        name.reserveCapacity(70)
        for byte in digest {
            name += byte < 16 ? "0" + String(byte, radix: 16) : String(byte, radix: 16)
        }
        if let pathExtension = pathExtension(of: key) {
            name += "." + pathExtension
        }
        return name
    }

    /// The extension of the last path component of `key` read as a URL: before any `?` or `#`, after the last `.`
    /// of the last `/`-separated component, lowercased; `nil` unless it is 1–5 ASCII letters or digits.
    static func pathExtension(of key: String) -> String? {
        let path = key.prefix { $0 != "?" && $0 != "#" }
        let component = path.split(separator: "/", omittingEmptySubsequences: false).last ?? path[...]
        guard let dot = component.lastIndex(of: "."), dot != component.startIndex else { return nil }
        let candidate = component[component.index(after: dot)...]
        guard (1...5).contains(candidate.count),
            candidate.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
        else { return nil }
        return candidate.lowercased()
    }

    /// Whether `name` is one the cache gives its entries (64 hex digits, optionally an extension): anything else in
    /// the directory (the index, temporary files, strangers) is never treated as an entry.
    static func isEntryName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts[0].count == 64, parts[0].allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else { return false }
        return parts.count == 1 || pathExtension(of: name) == String(parts[1])
    }

    /// CRC-32 of `bytes` (libdeflate's, several GB/s), stored in the index and checked on every read.
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        UInt32(libdeflate_crc32(0, bytes.baseAddress, bytes.count))
    }
}
