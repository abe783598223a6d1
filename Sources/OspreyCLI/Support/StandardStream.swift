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
        _ = text.withUTF8 { writeAll(UnsafeRawBufferPointer($0), to: self == .output ? STDOUT_FILENO : STDERR_FILENO) }
    }
}
