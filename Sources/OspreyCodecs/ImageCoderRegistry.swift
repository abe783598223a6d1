import Synchronization

/// The coders Osprey decodes and encodes with, one place for every part to ask: format detection, headers, memory
/// estimates, ``ImageDecoder``, ``ImageEncoder``, and through them the manager, the caches, the command line and the
/// proxy (its `format=` names any registered encoder).
///
/// ``shared`` holds the built-in coders (JPEG, PNG, GIF, WebP). A decoder or encoder registered later is consulted
/// first, so a registration can also replace a built-in coder. A registry of one's own (``init()``, then
/// ``register(_:)-(ImageDecoding)``) is used where ``DecodingOptions/coders`` and ``EncodingOptions/coders`` name
/// it, so that a test or a server can extend its own without touching the process-wide one.
///
/// ```swift
/// ImageCoderRegistry.shared.register(PPMCoder() as any ImageDecoding)
/// ImageCoderRegistry.shared.register(PPMCoder() as any ImageEncoding)
/// let image = try ImageDecoder.decode(ppmBytes)                  // sniffed as .ppm, decoded by PPMCoder
/// let bytes = try ImageEncoder.encode(image, as: .ppm)
/// ```
///
/// Registering is safe from any thread at any time; a decode already under way keeps the coder it chose.
public final class ImageCoderRegistry: Sendable, Hashable {
    /// The process-wide registry, with the built-in coders: what options use unless they name another.
    public static let shared = ImageCoderRegistry()

    private struct Coders {
        /// Most recently registered first (the built-in ones last, JPEG first among them): the order format
        /// detection tries them in.
        var decoders: [any ImageDecoding] = []
        var encoders: [any ImageEncoding] = []
        var signatureLength = 0
    }

    private let coders: Mutex<Coders>

    /// Makes a registry with the built-in coders, to which more can be registered.
    public convenience init() {
        self.init(builtIn: true)
    }

    /// Makes a registry with the built-in coders when `builtIn`, else an empty one.
    public init(builtIn: Bool) {
        var coders = Coders()
        if builtIn {
            coders.decoders = BuiltInCoders.decoders
            coders.encoders = BuiltInCoders.encoders
            coders.signatureLength = coders.decoders.map(\.signatureLength).max() ?? 0
        }
        self.coders = Mutex(coders)
    }

    /// Adds `decoder`, to be tried before every decoder registered earlier.
    public func register(_ decoder: any ImageDecoding) {
        coders.withLock { coders in
            coders.decoders.insert(decoder, at: 0)
            coders.signatureLength = max(coders.signatureLength, decoder.signatureLength)
        }
    }

    /// Adds `encoder`, to be used for its format instead of any encoder registered earlier for it.
    public func register(_ encoder: any ImageEncoding) {
        coders.withLock { $0.encoders.insert(encoder, at: 0) }
    }

    /// The decoders, most recently registered first.
    public var decoders: [any ImageDecoding] { coders.withLock { $0.decoders } }

    /// The encoders, most recently registered first.
    public var encoders: [any ImageEncoding] { coders.withLock { $0.encoders } }

    /// The most leading bytes any decoder's detection needs: how many `format(of:)` reads.
    public var signatureLength: Int { coders.withLock { $0.signatureLength } }

    /// The decoder that recognises the first bytes of `bytes`, or `nil`.
    public func decoder(recognizing bytes: UnsafeRawBufferPointer) -> (any ImageDecoding)? {
        let (decoders, length) = coders.withLock { ($0.decoders, $0.signatureLength) }
        let prefix = UnsafeRawBufferPointer(rebasing: bytes.prefix(length))
        return decoders.first { $0.recognizes(prefix) }
    }

    /// The decoder for `format`, or `nil` when none is registered.
    public func decoder(for format: ImageFormat) -> (any ImageDecoding)? {
        coders.withLock { $0.decoders.first { $0.format == format } }
    }

    /// The encoder for `format`, or `nil` when none is registered.
    public func encoder(for format: ImageFormat) -> (any ImageEncoding)? {
        coders.withLock { $0.encoders.first { $0.format == format } }
    }

    /// The format of a registered encoder whose name (or file extension) is `name`, case-insensitively: what
    /// `--format` and `format=` take. `jpg` names JPEG.
    public func encodableFormat(named name: String) -> ImageFormat? {
        let name = name.lowercased()
        return coders.withLock { coders in
            coders.encoders.first { $0.format.name == name || $0.format.fileExtension == name }?.format
        }
    }

    /// The formats registered encoders write, each once: the built-in ones, then the others in the order registered.
    public var encodableFormats: [ImageFormat] {
        let formats = encoders.map(\.format)
        // The shipped encoders' formats in their own order, then the others in the order they were registered.
        let shipped = BuiltInCoders.encoders.map(\.format)
        var seen: Set<ImageFormat> = []
        let others = formats.reversed().filter { !shipped.contains($0) && seen.insert($0).inserted }
        return shipped.filter(formats.contains) + others
    }

    /// Detects the format of `bytes` from their first bytes: the first decoder (most recently registered first) that
    /// recognises them, or ``ImageFormat/unknown``.
    ///
    /// The built-in signatures: PNG `89 50 4E 47 0D 0A 1A 0A`; JPEG `FF D8` (the start-of-image marker: nearly every
    /// file goes on with `FF`, but libjpeg skips junk between SOI and the next marker with a warning, and real files
    /// have it, so requiring the third byte would turn decodable files away); GIF `GIF87a` or `GIF89a`; WebP `RIFF`,
    /// four bytes of length, `WEBP`.
    public func format(of bytes: UnsafeRawBufferPointer) -> ImageFormat {
        decoder(recognizing: bytes)?.format ?? .unknown
    }

    /// Detects the format of `data`, reading at most ``signatureLength`` bytes of it (an endless sequence is fine).
    public func format(of data: some Sequence<UInt8>) -> ImageFormat {
        // Contiguous data (Array, Data, ByteBuffer views) is read in place: one call, no iteration through protocol
        // witnesses, which is what an unspecialised generic call from another module would otherwise do.
        if let format = data.withContiguousStorageIfAvailable({ format(of: UnsafeRawBufferPointer($0)) }) {
            return format
        }
        let head = Array(data.prefix(signatureLength))
        return head.withUnsafeBytes { format(of: $0) }
    }

    /// Registries are equal when they are the same object.
    public static func == (lhs: ImageCoderRegistry, rhs: ImageCoderRegistry) -> Bool { lhs === rhs }

    /// Hashes the registry's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
