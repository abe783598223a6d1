#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Standard output or standard error, written unbuffered with `write(2)`: a line reaches the terminal at once (before
/// the progress bars are drawn again, or before the process exits), where `print` would keep it in a buffer.
package enum StandardStream {
    case output
    case error

    /// Writes all of `text`; what a closed pipe or terminal refuses is dropped, as there is nowhere left to say so.
    package func write(_ text: String) {
        var text = text
        _ = text.withUTF8 { writeAll(UnsafeRawBufferPointer($0), to: self == .output ? STDOUT_FILENO : STDERR_FILENO) }
    }
}

/// Writes all of `buffer` to `descriptor`, retrying short and interrupted writes; `false` (with `errno` set) when a
/// write fails.
package func writeAll(_ buffer: UnsafeRawBufferPointer, to descriptor: Int32) -> Bool {
    var offset = 0
    while offset < buffer.count {
        let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else {
            if written == 0 { errno = EIO }
            return false
        }
        offset += written
    }
    return true
}
