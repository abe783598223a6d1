import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading what a command is given on the command line: a regular file, `-` or `/dev/stdin`, a FIFO, a process
/// substitution (`<(cmd)`), a character device. Every read is bounded: a regular file larger than the limit is refused
/// from its size, before a byte is read; a stream is refused once it passes the limit.
enum InputFile {
    /// The default bound of the reading commands (`info`, `convert`): 64 MiB, the downloader's default body limit.
    static let defaultByteLimit = 64 << 20

    /// The bytes of `path` (`-` for standard input), at most `limit` of them.
    ///
    /// - Throws: ``CommandError`` naming the reason: no such file, a directory, unreadable, or larger than `limit`.
    static func read(_ path: String, limit: Int) throws(CommandError) -> [UInt8] {
        try withDescriptor(path) { descriptor, size throws(CommandError) in
            if let size, size > limit { throw tooLarge(size: size, limit: limit) }
            return try readToEnd(descriptor, limit: limit, expected: size)
        }
    }

    /// The first `count` bytes of `path` when it is a regular file longer than that: what reading a header needs,
    /// whatever the file's size. `nil`, with nothing read, for a shorter file or anything but a regular file (a pipe
    /// must not lose the bytes a second read would need).
    static func readPrefix(_ path: String, count: Int) throws(CommandError) -> [UInt8]? {
        // Checked before opening: opening a FIFO would wait for its writer, and closing it unread would break the pipe.
        guard let size = regularFileSize(path), size > count else { return nil }
        return try withDescriptor(path) { descriptor, size throws(CommandError) in
            guard let size, size > count else { return nil }
            var bytes = [UInt8](repeating: 0, count: count)
            var filled = 0
            while filled < count {
                let read = bytes.withUnsafeMutableBytes {
                    systemRead(descriptor, $0.baseAddress! + filled, count - filled)
                }
                if read == 0 { break }
                if read < 0 {
                    if errno == EINTR { continue }
                    throw CommandError(message: "cannot read: \(String(cString: strerror(errno)))")
                }
                filled += read
            }
            return Array(bytes.prefix(filled))
        }
    }

    /// The size of `path` when it is a regular file; `nil` otherwise (nothing is opened).
    static func regularFileSize(_ path: String) -> Int? {
        var status = stat()
        guard path != "-", stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int(status.st_size)
    }

    static func tooLarge(size: Int?, limit: Int) -> CommandError {
        let what = size.map { "\($0) bytes" } ?? "more than \(limit) bytes"
        return CommandError(message: "the file is \(what), over the limit of \(limit) (--max-bytes)")
    }

    /// Opens `path` for reading and runs `body` with the descriptor and, for a regular file, its size.
    private static func withDescriptor<Result>(
        _ path: String, _ body: (Int32, Int?) throws(CommandError) -> Result
    ) throws(CommandError) -> Result {
        let descriptor = path == "-" ? dup(STDIN_FILENO) : open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            switch errno {
            case ENOENT: throw CommandError(message: "no such file")
            case EACCES: throw CommandError(message: "permission denied")
            default: throw CommandError(message: "cannot open: \(String(cString: strerror(errno)))")
            }
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw CommandError(message: "cannot read: \(String(cString: strerror(errno)))")
        }
        let type = status.st_mode & S_IFMT
        if type == S_IFDIR { throw CommandError(message: "is a directory") }
        return try body(descriptor, type == S_IFREG ? Int(status.st_size) : nil)
    }

    /// Reads until the end, failing past `limit` bytes.
    private static func readToEnd(_ descriptor: Int32, limit: Int, expected: Int?) throws(CommandError) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(min(expected ?? 64 << 10, limit) + 1)
        let chunk = 64 << 10
        var buffer = [UInt8](repeating: 0, count: chunk)
        while true {
            let read = buffer.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress!, chunk) }
            if read == 0 { return bytes }
            if read < 0 {
                if errno == EINTR { continue }
                throw CommandError(message: "cannot read: \(String(cString: strerror(errno)))")
            }
            guard bytes.count + read <= limit else { throw tooLarge(size: expected, limit: limit) }
            bytes.append(contentsOf: buffer[..<read])
        }
    }
}

/// `read(2)`, under a name `InputFile.read` does not shadow.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
