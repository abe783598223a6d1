/// Every error `OspreyCodecs` throws: what went wrong, with the format and the C library's own message where there is
/// one.
public enum CodecError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The data is not in a format Osprey can read (detection found `.unknown`).
    case unsupportedFormat
    /// A width or height is zero or negative, or their product overflows.
    case invalidDimensions(width: Int, height: Int)
    /// The image has more pixels than the caller's limit allows; nothing was allocated.
    case tooManyPixels(width: Int, height: Int, limit: Int)
    /// An animation has more frames than the caller's limit allows.
    case tooManyFrames(count: Int, limit: Int)
    /// Another decoding limit was hit (progressive scans, the decoder's working memory); `reason` says which.
    case limitExceeded(format: ImageFormat, reason: String)
    /// The data ends before the image does. ``DecodingOptions/allowsPartialImages`` accepts such data instead.
    case truncated(format: ImageFormat)
    /// The C library rejected the data; `reason` is its message.
    case malformed(format: ImageFormat, reason: String)
    /// The encoder refused the image; `reason` is the library's message.
    case encodingFailed(format: ImageFormat, reason: String)
    /// Allocating `byteCount` bytes of pixels failed.
    case outOfMemory(byteCount: Int)
    /// The C library that reads or writes `format` (libavif, libheif, libjxl: opened when first needed) cannot be
    /// loaded; `reason` says why (not installed, another version than Osprey was built with).
    case codecUnavailable(format: ImageFormat, reason: String)
    /// The decode's ``DecodingOptions/cancellation`` was cancelled; it stopped at its decoder's next checkpoint.
    case cancelled

    /// A label without associated values, for metrics and logs.
    public var shortDescription: String {
        switch self {
        case .unsupportedFormat: "unsupportedFormat"
        case .invalidDimensions: "invalidDimensions"
        case .tooManyPixels: "tooManyPixels"
        case .tooManyFrames: "tooManyFrames"
        case .limitExceeded: "limitExceeded"
        case .truncated: "truncated"
        case .malformed: "malformed"
        case .encodingFailed: "encodingFailed"
        case .outOfMemory: "outOfMemory"
        case .codecUnavailable: "codecUnavailable"
        case .cancelled: "cancelled"
        }
    }

    /// What went wrong, in a sentence for logs and error messages.
    public var description: String {
        switch self {
        case .unsupportedFormat:
            "unsupported image format"
        case .invalidDimensions(let width, let height):
            "invalid image dimensions \(width)×\(height)"
        case .tooManyPixels(let width, let height, let limit):
            "image of \(width)×\(height) pixels exceeds the limit of \(limit) pixels"
        case .tooManyFrames(let count, let limit):
            "animation of \(count) frames exceeds the limit of \(limit) frames"
        case .limitExceeded(let format, let reason):
            "\(format.name.uppercased()) decoding limit exceeded: \(reason)"
        case .truncated(let format):
            "truncated \(format.name.uppercased()) data: the image ends early"
        case .malformed(let format, let reason):
            "malformed \(format.name.uppercased()) data: \(reason)"
        case .encodingFailed(let format, let reason):
            "cannot encode \(format.name.uppercased()): \(reason)"
        case .outOfMemory(let byteCount):
            "could not allocate \(byteCount) bytes of pixels"
        case .codecUnavailable(let format, let reason):
            "\(format.name.uppercased()) is not available: \(reason)"
        case .cancelled: "the decode was cancelled"
        }
    }
}
