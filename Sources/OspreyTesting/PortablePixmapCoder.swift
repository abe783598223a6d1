public import OspreyCodecs

/// A coder for a format Osprey does not ship: binary PPM (`P6`, RGB) and PGM (`P5`, gray), 8 bits a sample. Tests
/// register it to check that a coder plugged into an ``OspreyCodecs/ImageCoderRegistry`` is reached by every part:
/// sniffing, headers, the decoder and encoder, the manager, and the proxy's `format=`.
///
/// It is also a worked example of ``OspreyCodecs/ImageDecoding`` and ``OspreyCodecs/ImageEncoding``: it reads the
/// header before allocating, refuses what it cannot read with a ``OspreyCodecs/CodecError``, and leaves limits,
/// colour and orientation to ``OspreyCodecs/ImageDecoder``.
///
/// ```swift
/// let coders = ImageCoderRegistry()
/// coders.register(PortablePixmapCoder() as any ImageDecoding)
/// coders.register(PortablePixmapCoder() as any ImageEncoding)
/// ```
public struct PortablePixmapCoder: ImageDecoding, ImageEncoding {
    /// `ppm`, `image/x-portable-pixmap`.
    public static let format = ImageFormat(name: "ppm", mimeType: "image/x-portable-pixmap", fileExtension: "ppm")

    /// Makes the coder.
    public init() {}

    /// PPM.
    public var format: ImageFormat { Self.format }

    /// The `P6` and the whitespace after it.
    public var signatureLength: Int { 3 }

    /// `P6` or `P5` and a whitespace character.
    public func recognizes(_ prefix: UnsafeRawBufferPointer) -> Bool {
        prefix.count >= 3 && prefix[0] == UInt8(ascii: "P")
            && (prefix[1] == UInt8(ascii: "6") || prefix[1] == UInt8(ascii: "5"))
            && Self.isSpace(prefix[2])
    }

    /// What `data`'s header says (format, size, frames, orientation), read without decoding pixels.
    public func header(of data: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader {
        let header = try Header(data)
        return ImageHeader(format: Self.format, width: header.width, height: header.height)
    }

    /// Decodes `data` as `options` ask (size, limits, frames, colour handling).
    public func decode(_ data: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        let header = try Header(data)
        let count = header.width * header.height * header.channels
        guard data.count - header.offset >= count else { throw .truncated(format: Self.format) }
        let samples = UnsafeRawBufferPointer(rebasing: data[header.offset..<header.offset + count])
        let pixels = try PixelBuffer(
            width: header.width, height: header.height, format: header.channels == 1 ? .gray8 : .rgb8, bytes: samples)
        return Image(pixels: pixels, sourceFormat: Self.format)
    }

    /// Writes gray images as PGM and the rest as PPM; alpha is dropped (the format has none).
    public func encode(_ image: Image, options: EncodingOptions) throws(CodecError) -> [UInt8] {
        let gray = !image.pixelFormat.hasColor
        let pixels = try image.pixels.converted(to: gray ? .gray8 : .rgb8)
        var out = Array("\(gray ? "P5" : "P6")\n\(pixels.width) \(pixels.height)\n255\n".utf8)
        out.reserveCapacity(out.count + pixels.width * pixels.height * (gray ? 1 : 3))
        for y in 0..<pixels.height { out += pixels.row(y) }
        return out
    }

    /// The fields before the samples: magic, width, height, maximum value, then one whitespace character.
    private struct Header {
        var width = 0
        var height = 0
        var channels = 3
        var offset = 0

        init(_ data: UnsafeRawBufferPointer) throws(CodecError) {
            func malformed(_ reason: String) -> CodecError {
                .malformed(format: PortablePixmapCoder.format, reason: reason)
            }
            guard data.count >= 3, data[0] == UInt8(ascii: "P") else { throw malformed("no P5/P6 signature") }
            channels = data[1] == UInt8(ascii: "5") ? 1 : 3
            offset = 2
            var fields: [Int] = []
            while fields.count < 3 {
                // Whitespace and comments (from '#' to the end of the line) separate the fields.
                while offset < data.count, Self.isSpace(data[offset]) || data[offset] == UInt8(ascii: "#") {
                    if data[offset] == UInt8(ascii: "#") {
                        while offset < data.count, data[offset] != 0x0A { offset += 1 }
                    } else {
                        offset += 1
                    }
                }
                var value = 0
                let start = offset
                while offset < data.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(data[offset]) {
                    value = value * 10 + Int(data[offset] - UInt8(ascii: "0"))
                    guard value <= 1 << 20 else { throw malformed("a header field is too large") }
                    offset += 1
                }
                guard offset > start else { throw malformed("the header ends early or holds something else") }
                fields.append(value)
            }
            guard offset < data.count, Self.isSpace(data[offset]) else { throw malformed("no space after the header") }
            offset += 1
            (width, height) = (fields[0], fields[1])
            guard width > 0, height > 0 else { throw .invalidDimensions(width: width, height: height) }
            guard fields[2] == 255 else { throw malformed("only 8-bit samples (maximum 255) are read") }
        }

        static func isSpace(_ byte: UInt8) -> Bool { PortablePixmapCoder.isSpace(byte) }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0B || byte == 0x0C
    }
}
