#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The POSIX file operations the disk cache needs, with `errno` kept in the error. They block: callers run them on
/// a thread pool, never on Swift's cooperative pool. The command line creates its output directories with them too.
package enum FileSystem {
    /// A failed system call: what was attempted, on which path, and `errno`.
    package struct Error: Swift.Error, CustomStringConvertible, Equatable {
        var operation: String
        var path: String
        package var code: Int32

        package var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
        var isMissing: Bool { code == ENOENT }

        /// The index refused a write for the cache in `directory` (reported as ENOSPC when its disk is full).
        static func indexWriteFailed(_ directory: String, isDiskFull: Bool) -> Error {
            Error(operation: "index write", path: directory, code: isDiskFull ? ENOSPC : EIO)
        }
        var isDiskFull: Bool { code == ENOSPC || code == EDQUOT }
    }

    /// Creates `path` and its missing parents (mode 0755); succeeds when it already exists.
    package static func createDirectory(_ path: String) throws(Error) {
        if mkdir(path, 0o755) == 0 || errno == EEXIST { return }
        guard errno == ENOENT, let slash = path.lastIndex(of: "/"), slash != path.startIndex else {
            throw Error(operation: "mkdir", path: path, code: errno)
        }
        try createDirectory(String(path[..<slash]))
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
            throw Error(operation: "mkdir", path: path, code: errno)
        }
    }

    /// Whether a directory at `path` exists and this process may create files in it.
    static func isWritableDirectory(_ path: String) -> Bool {
        access(path, W_OK | X_OK) == 0
    }

    /// What identifies one version of a file: replacing it (rename) changes the inode, writing into it changes the
    /// modification time, truncating or extending it changes the size.
    package struct Stamp: Equatable, Sendable {
        var size: Int
        var inode: UInt64
        var modified: Int64

        init(_ status: stat) {
            #if canImport(Darwin)
            let time = status.st_mtimespec
            #else
            let time = status.st_mtim
            #endif
            size = Int(status.st_size)
            inode = UInt64(status.st_ino)
            modified = Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
        }
    }

    /// The stamp of the file at `path` now, or `nil` when there is none.
    package static func stamp(of path: String) -> Stamp? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return Stamp(status)
    }

    /// The whole file at `path`, or `nil` when it does not exist. `expectedSize` (when given) must be the file's
    /// size, so a truncated or grown file is reported without reading it; a file larger than `maximumSize` (when
    /// given) is not read either, and fails with `EFBIG`.
    static func read(_ path: String, expectedSize: Int? = nil, maximumSize: Int? = nil) throws(Error) -> [UInt8]? {
        try readStamped(path, expectedSize: expectedSize, maximumSize: maximumSize)?.bytes
    }

    /// ``read(_:expectedSize:maximumSize:)`` with the stamp of the file that was read (from the same descriptor).
    static func readStamped(
        _ path: String, expectedSize: Int? = nil, maximumSize: Int? = nil
    ) throws(Error) -> (bytes: [UInt8], stamp: Stamp)? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw Error(operation: "open", path: path, code: errno)
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw Error(operation: "fstat", path: path, code: errno) }
        let size = Int(status.st_size)
        if let expectedSize, expectedSize != size {
            throw Error(operation: "size check", path: path, code: EIO)
        }
        if let maximumSize, size > maximumSize {
            throw Error(operation: "size limit", path: path, code: EFBIG)
        }
        var failure: Int32 = 0
        // EIO when the file is shorter than fstat said: it changed underneath us.
        let bytes = read(descriptor, at: 0, count: size, failure: &failure)
        guard failure == 0 else { throw Error(operation: "read", path: path, code: failure) }
        return (bytes, Stamp(status))
    }

    /// Writes `bytes` to a new temporary file in `directory` and returns its path; the caller renames it into
    /// place, so no reader ever sees a partial entry. On failure the temporary file is gone. A file of at least
    /// ``directWriteMinimum`` bytes is written around the page cache when `direct` and the file system allow it
    /// (FileSystem+DirectWrite.swift says why).
    static func writeTemporary(
        _ bytes: some Collection<UInt8>, in directory: String, direct: Bool = false
    ) throws(Error) -> String {
        var random = SystemRandomNumberGenerator()
        let path = directory + "/.tmp-" + String(random.next() as UInt64, radix: 16)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Error(operation: "create", path: path, code: errno) }
        var failure: Int32 = 0
        let written: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            let bytes = UnsafeRawBufferPointer(buffer)
            if direct, bytes.count >= directWriteMinimum, let outcome = writeDirect(descriptor, bytes) {
                failure = outcome
            } else {
                failure = writeAll(descriptor, bytes)
            }
        }
        if written == nil {
            failure = Array(bytes).withUnsafeBytes { writeAll(descriptor, $0) }
        }
        if close(descriptor) != 0 && failure == 0 { failure = errno }
        guard failure == 0 else {
            unlink(path)
            throw Error(operation: "write", path: path, code: failure)
        }
        return path
    }

    /// Writes `bytes` into the file at `path` (created when missing) at `offset`, leaving the rest of it as it was.
    static func writeBytes(_ bytes: [UInt8], to path: String, at offset: Int) throws(Error) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Error(operation: "open", path: path, code: errno) }
        var failure = bytes.withUnsafeBytes { writeAll(descriptor, $0, at: offset) }
        if close(descriptor) != 0 && failure == 0 { failure = errno }
        guard failure == 0 else { throw Error(operation: "write", path: path, code: failure) }
    }

    /// `count` bytes of the file at `path` from `offset`; `nil` when there is no such file. A file that ends before
    /// them is an error (EIO).
    static func read(_ path: String, at offset: Int, count: Int) throws(Error) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw Error(operation: "open", path: path, code: errno)
        }
        defer { close(descriptor) }
        var failure: Int32 = 0
        let bytes = read(descriptor, at: offset, count: count, failure: &failure)
        guard failure == 0 else { throw Error(operation: "read", path: path, code: failure) }
        return bytes
    }

    /// `count` bytes of the open file `descriptor` from `offset`. When a read fails, `failure` is its `errno` (EIO
    /// when the file ends before them) and the bytes are incomplete.
    static func read(_ descriptor: Int32, at offset: Int, count: Int, failure: inout Int32) -> [UInt8] {
        var code: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            while initialized < count {
                let read = pread(
                    descriptor, buffer.baseAddress! + initialized, count - initialized, off_t(offset + initialized))
                if read > 0 {
                    initialized += read
                } else if read < 0 && errno == EINTR {
                    continue
                } else {
                    code = read < 0 ? errno : EIO
                    return
                }
            }
        }
        failure = code
        return bytes
    }

    /// Writes all of `buffer` to `descriptor` from `offset`; returns 0, or the `errno` of the write that failed.
    private static func writeAll(_ descriptor: Int32, _ buffer: UnsafeRawBufferPointer, at offset: Int = 0) -> Int32 {
        var done = 0
        while done < buffer.count {
            let count = pwrite(descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if count > 0 {
                done += count
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return count < 0 ? errno : EIO
            }
        }
        return 0
    }

    /// Atomically replaces `destination` with `source`.
    static func rename(_ source: String, to destination: String) throws(Error) {
        guard posixRename(source, destination) == 0 else {
            let code = errno
            unlink(source)
            throw Error(operation: "rename", path: destination, code: code)
        }
    }

    /// Deletes the file at `path`; a file already gone is not an error.
    static func remove(_ path: String) {
        unlink(path)
    }

    /// Which file a path names: its device and inode.
    struct Identity: Equatable, Sendable {
        var device: UInt64
        var inode: UInt64
    }

    /// The identity of the file at `path`, or `nil` when there is none.
    static func identity(of path: String) -> Identity? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return Identity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }

    /// Whether anything exists at `path`.
    static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// The names in `directory` with their size and modification time (seconds since 1970), regular files only.
    static func entries(of directory: String) -> [(name: String, size: Int, modified: Double)] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var result: [(String, Int, Double)] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            var status = stat()
            guard name != ".", name != "..", stat(directory + "/" + name, &status) == 0,
                (status.st_mode & S_IFMT) == S_IFREG
            else { continue }
            #if canImport(Darwin)
            let time = status.st_mtimespec
            #else
            let time = status.st_mtim
            #endif
            let modified = Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
            result.append((name, Int(status.st_size), modified))
        }
        return result
    }
}

/// rename(2), under a name ``FileSystem/rename(_:to:)`` does not shadow.
private func posixRename(_ source: String, _ destination: String) -> Int32 {
    rename(source, destination)
}
