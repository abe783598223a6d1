#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Standard output or standard error, written unbuffered with `write(2)`: a line reaches the terminal at once (before
/// the progress bars are drawn again, or before the process exits), where `print` would keep it in a buffer.
enum StandardStream {
    case output
    case error

    /// Writes all of `text`; what a closed pipe or terminal refuses is dropped, as there is nowhere left to say so.
    func write(_ text: String) {
        var text = text
        text.withUTF8 { buffer in
            guard var next = buffer.baseAddress else { return }
            var remaining = buffer.count
            while remaining > 0 {
                let written = systemWrite(
                    self == .output ? STDOUT_FILENO : STDERR_FILENO, UnsafeRawPointer(next), remaining)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                next += written
                remaining -= written
            }
        }
    }
}
