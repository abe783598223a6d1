/// An encoded image format, told from the first bytes of the data and never from a URL or file name.
///
/// The built-in formats are ``jpeg``, ``png``, ``gif`` and ``webp``, read and written, and ``avif``, read; a coder
/// registered with an ``ImageCoderRegistry`` brings its own format, made with ``init(name:mimeType:fileExtension:)``.
/// Two formats are the same when their names are.
///
/// ```swift
/// let format = ImageFormat(sniffing: data)   // .jpeg, .png, .gif, .webp, a registered format, or .unknown
/// let ppm = ImageFormat(name: "ppm", mimeType: "image/x-portable-pixmap", fileExtension: "ppm")
/// ```
public struct ImageFormat: Sendable, Hashable, CustomStringConvertible {
    /// The short lowercase name that identifies the format: `jpeg`, `png`, `gif`, `webp`, or a registered coder's.
    /// It is what the proxy's `format=` and the CLI's `--format` take.
    public let name: String
    /// The media type to send in `Content-Type`; `application/octet-stream` for ``unknown``.
    public let mimeType: String
    /// The usual file name extension, without the dot; `nil` for ``unknown``.
    public let fileExtension: String?

    /// Makes a format, for a coder of a format Osprey does not ship.
    public init(name: String, mimeType: String, fileExtension: String?) {
        self.name = name
        self.mimeType = mimeType
        self.fileExtension = fileExtension
    }

    /// JPEG (`image/jpeg`, `.jpg`).
    public static let jpeg = ImageFormat(name: "jpeg", mimeType: "image/jpeg", fileExtension: "jpg")
    /// PNG (`image/png`); an APNG reads as its default image.
    public static let png = ImageFormat(name: "png", mimeType: "image/png", fileExtension: "png")
    /// GIF (`image/gif`), still or animated.
    public static let gif = ImageFormat(name: "gif", mimeType: "image/gif", fileExtension: "gif")
    /// WebP (`image/webp`), lossy or lossless, still or animated.
    public static let webp = ImageFormat(name: "webp", mimeType: "image/webp", fileExtension: "webp")
    /// Anything no registered decoder recognises: another format, text, an empty or too-short body.
    public static let unknown = ImageFormat(name: "unknown", mimeType: "application/octet-stream", fileExtension: nil)

    /// The formats Osprey reads and writes itself, in the order they are tried.
    public static let builtIn: [ImageFormat] = [.jpeg, .png, .gif, .webp]

    /// The number of leading bytes detection looks at with the shared registry: the longest signature of its
    /// decoders (64 for the built-in ones: AVIF's `ftyp` box and its brands). Fewer is never enough to name a format.
    public static var signatureLength: Int { ImageCoderRegistry.shared.signatureLength }

    /// Detects the format from the first bytes of `data` with the decoders of ``ImageCoderRegistry/shared``.
    ///
    /// Only the first ``signatureLength`` bytes are read; data too short to hold a signature is ``unknown``. See
    /// `ImageCoderRegistry.format(of:)` for the built-in signatures.
    public init(sniffing data: some Sequence<UInt8>) {
        self = ImageCoderRegistry.shared.format(of: data)
    }

    /// Detects the format of the bytes in `bytes` with the decoders of ``ImageCoderRegistry/shared``.
    public init(sniffing bytes: UnsafeRawBufferPointer) {
        self = ImageCoderRegistry.shared.format(of: bytes)
    }

    /// Formats are equal when their names are.
    public static func == (lhs: ImageFormat, rhs: ImageFormat) -> Bool { lhs.name == rhs.name }

    /// Hashes the format's name.
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }

    /// The value as logs and messages print it.
    public var description: String { name }
}
