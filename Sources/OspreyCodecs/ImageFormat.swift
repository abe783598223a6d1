/// An encoded image format, told from the first bytes of the data and never from a URL or file name (MISSION F1).
///
/// ```swift
/// let format = ImageFormat(sniffing: data)   // .jpeg, .png, .gif, .webp or .unknown
/// ```
public enum ImageFormat: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case jpeg
    case png
    case gif
    case webp
    /// Anything else: another format, text, an empty or too-short body.
    case unknown

    /// The number of leading bytes detection looks at; fewer is never enough to name a format.
    public static let signatureLength = 12

    /// Detects the format from the first bytes of `data`.
    ///
    /// - PNG: the 8-byte signature `89 50 4E 47 0D 0A 1A 0A`.
    /// - JPEG: `FF D8`, the start-of-image marker. MISSION F1 names `FF D8 FF` (SOI and the next marker's first
    ///   byte), which nearly every file has; but libjpeg skips junk between SOI and the next marker with a warning,
    ///   and real files (and the test corpus) have it, so requiring the third byte would turn decodable files away.
    /// - GIF: `GIF87a` or `GIF89a`.
    /// - WebP: `RIFF`, four bytes of length, `WEBP`.
    ///
    /// Data too short to hold a signature is `.unknown`; only the first ``signatureLength`` bytes are read.
    public init(sniffing data: some Sequence<UInt8>) {
        // Contiguous data (Array, Data, ByteBuffer views) is read in place: one call, no iteration through
        // protocol witnesses, which is what an unspecialised generic call from another module would otherwise do.
        if let format = data.withContiguousStorageIfAvailable({ Self.detect(UnsafeRawBufferPointer($0)) }) {
            self = format
            return
        }
        var head: [UInt8] = []
        head.reserveCapacity(Self.signatureLength)
        for byte in data.prefix(Self.signatureLength) {
            head.append(byte)
        }
        self = head.withUnsafeBytes { Self.detect($0) }
    }

    /// Detects the format of the bytes in `bytes`; see the generic `init(sniffing:)`.
    public init(sniffing bytes: UnsafeRawBufferPointer) {
        self = Self.detect(bytes)
    }

    private static func detect(_ b: UnsafeRawBufferPointer) -> ImageFormat {
        if b.count >= 8, b[0] == 0x89, b[1] == 0x50, b[2] == 0x4E, b[3] == 0x47,
            b[4] == 0x0D, b[5] == 0x0A, b[6] == 0x1A, b[7] == 0x0A
        {
            return .png
        }
        if b.count >= 2, b[0] == 0xFF, b[1] == 0xD8 {
            return .jpeg
        }
        // "GIF87a" / "GIF89a"
        if b.count >= 6, b[0] == 0x47, b[1] == 0x49, b[2] == 0x46, b[3] == 0x38,
            b[4] == 0x37 || b[4] == 0x39, b[5] == 0x61
        {
            return .gif
        }
        // "RIFF" .... "WEBP"
        if b.count >= 12, b[0] == 0x52, b[1] == 0x49, b[2] == 0x46, b[3] == 0x46,
            b[8] == 0x57, b[9] == 0x45, b[10] == 0x42, b[11] == 0x50
        {
            return .webp
        }
        return .unknown
    }

    /// The media type to send in `Content-Type`, `application/octet-stream` for `.unknown`.
    public var mimeType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .gif: "image/gif"
        case .webp: "image/webp"
        case .unknown: "application/octet-stream"
        }
    }

    /// The usual file name extension, without the dot; `nil` for `.unknown`.
    public var fileExtension: String? {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        case .gif: "gif"
        case .webp: "webp"
        case .unknown: nil
        }
    }

    public var description: String { rawValue }
}
