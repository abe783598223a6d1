#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A temporary directory for one test, removed with everything in it when the test ends.
final class TemporaryDirectory {
    let path: String

    init() {
        var template = Array("/tmp/osprey-test-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    deinit {
        FileSystemProbe.removeTree(path)
    }

    /// The bytes of the file at `relativePath`, or `nil`.
    func contents(of relativePath: String) -> [UInt8]? {
        guard let file = fopen(path + "/" + relativePath, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count == 0 { break }
            bytes += buffer[0..<count]
        }
        return bytes
    }

    /// Writes `bytes` to `relativePath`.
    func write(_ bytes: [UInt8], to relativePath: String) {
        let file = fopen(path + "/" + relativePath, "wb")!
        _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
    }
}

/// Directory listing and removal for assertions.
enum FileSystemProbe {
    static func names(in directory: String) -> [String] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// Deletes `path` and everything under it.
    static func removeTree(_ path: String) {
        chmod(path, 0o755)
        for name in names(in: path) {
            removeTree(path + "/" + name)
        }
        if rmdir(path) != 0 { unlink(path) }
    }
}
