internal import Crypto
internal import OspreyCodecs

extension DiskCache {
    /// The file name of `key`: the SHA-256 of the key in hex, plus the extension of the key's URL path
    /// when it is 1–5 letters or digits (so `https://x/a.JPG?w=1` → `<hash>.jpg`), which keeps the files
    /// recognisable to people and tools.
    public static func fileName(forKey key: String) -> String {
        let digest = SHA256.hash(data: Array(key.utf8))
        let hexDigits = Array("0123456789abcdef".utf8)
        let pathExtension = pathExtension(of: key)
        let length = 64 + (pathExtension.map { $0.utf8.count + 1 } ?? 0)
        return String(unsafeUninitializedCapacity: length) { buffer in
            var index = 0
            for byte in digest {
                buffer[index] = hexDigits[Int(byte >> 4)]
                buffer[index + 1] = hexDigits[Int(byte & 0xF)]
                index += 2
            }
            if let pathExtension {
                buffer[index] = UInt8(ascii: ".")
                index += 1
                for byte in pathExtension.utf8 {
                    buffer[index] = byte
                    index += 1
                }
            }
            return index
        }
    }

    /// The extension of the last path component of `key` read as a URL: before any `?` or `#`, after the last `.`
    /// of the last `/`-separated component, lowercased; `nil` unless it is 1–5 ASCII letters or digits.
    static func pathExtension(of key: String) -> String? {
        var utf8 = Array(key.utf8)
        if let end = utf8.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            utf8.removeSubrange(end...)
        }
        let componentStart = (utf8.lastIndex(of: UInt8(ascii: "/")) ?? -1) + 1
        guard let dot = utf8[componentStart...].lastIndex(of: UInt8(ascii: ".")), dot > componentStart else {
            return nil
        }
        let candidate = utf8[(dot + 1)...]
        guard (1...5).contains(candidate.count),
            candidate.allSatisfy({
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
            })
        else { return nil }
        return String(decoding: candidate.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
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
        CRC32.checksum(bytes)
    }
}
