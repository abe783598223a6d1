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
/// On Linux the bytes go to an unnamed file in the target directory (`O_TMPFILE`), linked under its name once complete
/// (``Staged``): a killed run leaves nothing behind. Replacing an existing file (`--force`, `convert`'s output), and
/// filesystems without `O_TMPFILE`, go through a hidden temporary name, `.osprey-<pid>-<random>.tmp`, renamed into
/// place; one left by a killed run is removed by the next run that writes into the directory
/// (``removeLeftovers(in:)``).
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
        try Staged(bytes, in: directory(of: path), for: path).replace(at: path)
    }

    /// Bytes written in full to a file in a directory that no name shows yet, until ``place(at:)`` or
    /// ``replace(at:)`` names it; dropped (nothing left behind) when it is released unnamed.
    ///
    /// Naming the file once it is whole lets a name be chosen after the write: ``place(at:)`` fails with `false`
    /// when the name is taken, so another can be tried without writing the bytes again, and no check comes between
    /// a name found free and the file taking it.
    final class Staged {
        /// The unnamed file (`O_TMPFILE`), or the hidden temporary name the bytes were written under.
        private enum Storage {
            case unnamed(descriptor: Int32)
            case temporary(path: String)
        }
        private var storage: Storage?
        private let directory: String
        /// Kept (not copied) to write again under a temporary name should an unnamed file fail to link.
        private let bytes: [UInt8]

        /// Writes `bytes` into a new file in `directory`; `path`, where they are headed, names the file in errors.
        init(_ bytes: [UInt8], in directory: String, for path: String) throws(CommandError) {
            self.directory = directory
            self.bytes = bytes
            #if os(Linux)
            if let descriptor = OutputFile.openUnnamed(in: directory) {
                storage = .unnamed(descriptor: descriptor)
                try OutputFile.writeAll(bytes, to: descriptor, path: path)
                return
            }
            #endif
            try writeTemporary(for: path)
        }

        /// Writes the bytes under a new hidden temporary name.
        private func writeTemporary(for path: String) throws(CommandError) {
            let temporary = OutputFile.temporaryPath(in: directory)
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { throw OutputFile.failure("cannot write \(path)") }
            storage = .temporary(path: temporary)
            defer { close(descriptor) }
            try OutputFile.writeAll(bytes, to: descriptor, path: path)
        }

        deinit {
            switch storage {
            case .unnamed(let descriptor): close(descriptor)
            case .temporary(let path): unlink(path)
            case nil: break
            }
        }

        /// Names the file `path` unless a file has that name: `false`, changing nothing, when one has. Once named, the
        /// file is no longer staged: it is named once.
        func place(at path: String) throws(CommandError) -> Bool {
            switch storage {
            case .unnamed(let descriptor):
                if linkat(AT_FDCWD, Self.procPath(of: descriptor), AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0 {
                    close(descriptor)
                    storage = nil
                    return true
                }
                if errno == EEXIST { return false }
                // Linking through /proc refused (a filesystem or a security policy that does not allow it): the
                // bytes are written again under a temporary name, which is linked instead.
                close(descriptor)
                storage = nil
                try writeTemporary(for: path)
                return try place(at: path)
            case .temporary(let temporary):
                if link(temporary, path) == 0 {
                    unlink(temporary)
                    storage = nil
                    return true
                }
                switch errno {
                case EEXIST: return false
                case EPERM, ENOTSUP, EOPNOTSUPP, EMLINK:
                    // A filesystem without hard links (FAT, some FUSE ones): checked, then renamed.
                    if access(path, F_OK) == 0 { return false }
                    storage = nil
                    try OutputFile.moveIntoPlace(temporary, path)
                    return true
                default: throw OutputFile.failure("cannot write \(path)")
                }
            case nil: preconditionFailure("a staged file is named once")
            }
        }

        /// Names the file `path`, replacing a file that has that name.
        func replace(at path: String) throws(CommandError) {
            if try place(at: path) { return }
            // Taken: the file goes under a hidden temporary name, then is renamed over it (rename replaces atomically).
            if case .unnamed = storage {
                let temporary = OutputFile.temporaryPath(in: directory)
                guard try place(at: temporary) else { throw OutputFile.failure("cannot write \(path)") }
                storage = .temporary(path: temporary)
            }
            guard case .temporary(let temporary) = storage else { preconditionFailure("a staged file is named once") }
            storage = nil  // moved into place, or removed by the failed move
            try OutputFile.moveIntoPlace(temporary, path)
        }

        /// The path through which `/proc` shows the file open as `descriptor`: what `linkat` names an unnamed file by.
        private static func procPath(of descriptor: Int32) -> String { "/proc/self/fd/\(descriptor)" }
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

    fileprivate static func temporaryPath(in directory: String) -> String {
        var random = SystemRandomNumberGenerator()
        return directory + "/" + temporaryPrefix + "\(getpid())-" + String(random.next() as UInt64, radix: 16)
            + temporarySuffix
    }

    #if os(Linux)
    /// An unnamed regular file in `directory`, or `nil` where the filesystem does not offer them, or `/proc` is not
    /// mounted to link one through.
    fileprivate static func openUnnamed(in directory: String) -> Int32? {
        guard canLinkUnnamedFiles else { return nil }
        // O_TMPFILE is __O_TMPFILE | O_DIRECTORY, a macro Swift does not import; __O_TMPFILE is 020000000 on every
        // Linux architecture.
        let descriptor = open(directory, Int32(0o20000000) | O_DIRECTORY | O_WRONLY | O_CLOEXEC, 0o644)
        return descriptor >= 0 ? descriptor : nil
    }

    /// Whether `/proc/self/fd` is there, through which an unnamed file is linked under a name.
    private static let canLinkUnnamedFiles = access("/proc/self/fd", F_OK) == 0
    #endif

    fileprivate static func moveIntoPlace(_ temporary: String, _ path: String) throws(CommandError) {
        guard rename(temporary, path) == 0 else {
            let error = failure("cannot write \(path)")
            unlink(temporary)
            throw error
        }
    }

    fileprivate static func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(CommandError) {
        guard bytes.withUnsafeBytes({ OspreyCommandLine.writeAll($0, to: descriptor) }) else {
            throw failure("cannot write \(path)")
        }
    }

    fileprivate static func failure(_ what: String) -> CommandError {
        CommandError(message: "\(what): \(String(cString: strerror(errno)))")
    }
}
