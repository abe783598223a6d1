import FoundationEssentials
import Osprey
import OspreyCommandLine

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writing the files `fetch` and `convert` produce so that a run killed at any moment (`kill -9`, a full disk)
/// leaves nothing a user could mistake for a result: a file appears under its name whole, or not at all.
///
/// On Linux the bytes go to an unnamed file in the target directory (`O_TMPFILE`), linked under its name once complete:
/// a killed run leaves nothing behind. Replacing an existing file (`--force`, `convert`'s output), and filesystems
/// without `O_TMPFILE`, go through a hidden temporary name, `.osprey-<pid>-<random>.tmp`, renamed into place; one
/// left by a killed run is removed by the next run that writes into the directory (``removeLeftovers(in:)``).
enum OutputFile {
    static let temporaryPrefix = ".osprey-"
    static let temporarySuffix = ".tmp"

    /// The directory `path` is in: what precedes its last `/` (`/` itself for a file at the root), `.` when it has
    /// none.
    static func directory(of path: String) -> String {
        var path = Substring(path)
        while path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        guard let slash = path.lastIndex(of: "/") else { return "." }
        var directory = path[..<slash]
        while directory.hasSuffix("/") { directory = directory.dropLast() }
        return directory.isEmpty ? "/" : String(directory)
    }

    /// Creates `directory` and its missing parents (mode 0755); succeeds when it already exists.
    static func createDirectory(_ directory: String) throws(CommandError) {
        do throws(FileSystem.Error) {
            try FileSystem.createDirectory(directory)
        } catch {
            throw CommandError(message: "cannot create \(directory): \(String(cString: strerror(error.code)))")
        }
        var status = stat()
        guard stat(directory, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
            throw CommandError(message: "cannot create \(directory): a file is in the way")
        }
    }

    /// Writes `bytes` to `path`, replacing a file that is there.
    static func write(_ bytes: [UInt8], to path: String) throws(CommandError) {
        let parent = directory(of: path)
        #if os(Linux)
        if try writeUnnamed(bytes, to: path, in: parent) { return }
        #endif
        let temporary = temporaryPath(in: parent)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw failure("cannot write \(path)") }
        do {
            try writeAll(bytes, to: descriptor, path: path)
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
        close(descriptor)
        try moveIntoPlace(temporary, path)
    }

    /// Removes the hidden temporary files of runs that are no longer running from `directory`.
    static func removeLeftovers(in directory: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names where name.hasPrefix(temporaryPrefix) && name.hasSuffix(temporarySuffix) {
            let fields = name.dropFirst(temporaryPrefix.count).split(separator: "-")
            guard let pid = fields.first.flatMap({ pid_t($0) }), pid != getpid() else { continue }
            // Signal 0 checks that the process exists; ESRCH: it does not, so its file is a leftover.
            if kill(pid, 0) != 0 && errno == ESRCH {
                unlink(directory + "/" + name)
            }
        }
    }

    private static func temporaryPath(in directory: String) -> String {
        var random = SystemRandomNumberGenerator()
        return directory + "/" + temporaryPrefix + "\(getpid())-" + String(random.next() as UInt64, radix: 16)
            + temporarySuffix
    }

    #if os(Linux)
    /// Writes `bytes` to an unnamed file in `directory`, linked under `path` once whole (a name already taken is
    /// replaced by a rename); `false`, leaving nothing behind, where the filesystem offers no unnamed files or
    /// `/proc` is not mounted to link one through.
    private static func writeUnnamed(
        _ bytes: [UInt8], to path: String, in directory: String
    ) throws(CommandError) -> Bool {
        guard let descriptor = openUnnamed(in: directory) else { return false }
        defer { close(descriptor) }
        try writeAll(bytes, to: descriptor, path: path)
        let source = "/proc/self/fd/\(descriptor)"
        if linkat(AT_FDCWD, source, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0 { return true }
        guard errno == EEXIST else { return false }
        let temporary = temporaryPath(in: directory)
        guard linkat(AT_FDCWD, source, AT_FDCWD, temporary, AT_SYMLINK_FOLLOW) == 0 else {
            throw failure("cannot write \(path)")
        }
        try moveIntoPlace(temporary, path)
        return true
    }

    /// An unnamed regular file in `directory`, or `nil` where the filesystem does not offer them.
    private static func openUnnamed(in directory: String) -> Int32? {
        // O_TMPFILE is __O_TMPFILE | O_DIRECTORY, a macro Swift does not import; __O_TMPFILE is 020000000 on every
        // Linux architecture.
        let descriptor = open(directory, Int32(0o20000000) | O_DIRECTORY | O_WRONLY | O_CLOEXEC, 0o644)
        return descriptor >= 0 ? descriptor : nil
    }
    #endif

    private static func moveIntoPlace(_ temporary: String, _ path: String) throws(CommandError) {
        guard rename(temporary, path) == 0 else {
            let error = failure("cannot write \(path)")
            unlink(temporary)
            throw error
        }
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(CommandError) {
        guard bytes.withUnsafeBytes({ OspreyCommandLine.writeAll($0, to: descriptor) }) else {
            throw failure("cannot write \(path)")
        }
    }

    private static func failure(_ what: String) -> CommandError {
        CommandError(message: "\(what): \(String(cString: strerror(errno)))")
    }
}
