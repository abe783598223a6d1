import FoundationEssentials
import Osprey

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A `local:///path` source: a file under ``ServerConfiguration/localRoot``, read by the library's pipeline like a
/// download. Its cache key names the file's inode, size and modification time, so an edited file is a new source.
struct LocalSource: ImageDataProvider {
    /// The file, resolved (symbolic links followed) and inside the root.
    let path: String
    let cacheKey: String
    let maximumSize: Int

    func data() async throws -> [UInt8] {
        try await LocalFileDataProvider(path: path, maximumSize: maximumSize).data()
    }

    /// The canonical form of `path` (every symbolic link and `.`/`..` resolved), or `nil` when it does not exist.
    static func resolved(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }

    /// The source for the request path `path` (a `local:` URL's path, percent-decoded) under `root` (resolved):
    /// 404 when it does not exist, is not a regular file, or resolves outside the root — the same answer for all
    /// three, so that nothing outside the root can be probed — and 413 when it is larger than `maximumSize`.
    static func resolve(_ path: String, in root: String, maximumSize: Int) -> Result<LocalSource, ProxyError> {
        guard !path.utf8.contains(0), let file = resolved(root + "/" + path) else { return .failure(.sourceNotFound) }
        guard file.hasPrefix(root == "/" ? "/" : root + "/") else { return .failure(.sourceNotFound) }
        var status = stat()
        guard stat(file, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return .failure(.sourceNotFound) }
        let size = Int(status.st_size)
        guard size <= maximumSize else { return .failure(.tooLarge("the source is larger than \(maximumSize) bytes")) }
        let inode = status.st_ino
        let modified = Double(status.st_mtim.tv_sec) + Double(status.st_mtim.tv_nsec) / 1e9
        let stamp = "\(inode):\(size):\(modified)"
        let relative = String(file.dropFirst(root == "/" ? 0 : root.count))
        return .success(LocalSource(path: file, cacheKey: "local:" + relative + "#" + stamp, maximumSize: maximumSize))
    }
}
