/// Image bytes made at test time, so tests that only need a well-formed file run without the third-party corpus.
///
/// ``png(width:height:rgba:)`` is a complete, decodable PNG (stored deflate blocks, real CRCs and Adler-32). The
/// `…Header` functions produce just the bytes a header reader looks at: enough for format detection and
/// ``OspreyCodecs/ImageHeader``, not for decoding pixels.
public enum SyntheticImages {
    /// A complete 8-bit RGBA PNG. `rgba` holds `width * height * 4` bytes, rows top to bottom; `nil` paints an opaque
    /// gradient.
    public static func png(width: Int, height: Int, rgba: [UInt8]? = nil) -> [UInt8] {
        precondition(width > 0 && height > 0)
        let pixels =
            rgba
            ?? (0..<width * height).flatMap { index -> [UInt8] in
                let x = index % width
                let y = index / width
                return [UInt8(x * 255 / max(width - 1, 1)), UInt8(y * 255 / max(height - 1, 1)), 128, 255]
            }
        precondition(pixels.count == width * height * 4, "rgba must hold width * height * 4 bytes")
        var raw: [UInt8] = []
        raw.reserveCapacity(height * (1 + width * 4))
        for y in 0..<height {
            raw.append(0)  // filter type None
            raw += pixels[y * width * 4..<(y + 1) * width * 4]
        }
        return png(width: width, height: height, colorType: 6, imageData: zlibStored(raw))
    }

    /// A complete 8-bit, non-interlaced PNG of PNG colour type `colorType` (0 gray, 2 RGB, 3 palette, 4 gray+alpha,
    /// 6 RGBA) around `imageData`, a zlib stream of filtered rows (each row its filter type byte, then its samples),
    /// split into IDAT chunks of at most `imageDataChunkSize` bytes, with `before` spliced in after IHDR (PLTE, tRNS,
    /// eXIf, ...) and `after` after the last IDAT.
    public static func png(
        width: Int,
        height: Int,
        colorType: UInt8,
        imageData: [UInt8],
        before: [[UInt8]] = [],
        after: [[UInt8]] = [],
        imageDataChunkSize: Int = .max
    ) -> [UInt8] {
        var ihdr = bigEndian32(width) + bigEndian32(height)
        ihdr += [8, colorType, 0, 0, 0]  // bit depth 8, deflate, adaptive filtering, no interlace
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + pngChunk("IHDR", ihdr)
        bytes += before.joined()
        var offset = 0
        repeat {
            let end = offset + min(imageDataChunkSize, imageData.count - offset)
            bytes += pngChunk("IDAT", Array(imageData[offset..<end]))
            offset = end
        } while offset < imageData.count
        bytes += after.joined()
        return bytes + pngChunk("IEND", [])
    }

    /// A GIF89a signature and logical screen descriptor of `width` × `height`, with no global colour table.
    public static func gifHeader(width: Int, height: Int) -> [UInt8] {
        Array("GIF89a".utf8) + littleEndian16(width) + littleEndian16(height) + [0x00, 0x00, 0x00]
    }

    /// A lossless WebP (VP8L) RIFF container whose bitstream holds only the image header.
    public static func webpLosslessHeader(width: Int, height: Int) -> [UInt8] {
        precondition((1...16384).contains(width) && (1...16384).contains(height))
        // VP8L: signature 0x2F, then 14 bits width-1, 14 bits height-1, 1 bit alpha, 3 bits version 0.
        let bits = UInt32(width - 1) | UInt32(height - 1) << 14
        let payload: [UInt8] = [
            0x2F, UInt8(bits & 0xFF), UInt8(bits >> 8 & 0xFF), UInt8(bits >> 16 & 0xFF),
            UInt8(bits >> 24 & 0xFF), 0, 0, 0,
        ]
        let chunk = Array("VP8L".utf8) + littleEndian32(payload.count) + payload
        return Array("RIFF".utf8) + littleEndian32(4 + chunk.count) + Array("WEBP".utf8) + chunk
    }

    /// A baseline JPEG's markers up to the start of scan (SOI, SOF0 with one component, SOS): what a header reader
    /// needs, with no tables and no entropy-coded data.
    public static func jpegHeader(width: Int, height: Int) -> [UInt8] {
        precondition((1...65535).contains(width) && (1...65535).contains(height))
        let sof: [UInt8] =
            [0xFF, 0xC0, 0x00, 0x0B, 0x08] + bigEndian16(height) + bigEndian16(width) + [0x01, 0x01, 0x11, 0x00]
        let sos: [UInt8] = [0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3F, 0x00]
        return [0xFF, 0xD8] + sof + sos
    }

    // MARK: Building blocks

    /// A PNG chunk: length, type, data and CRC, to splice extra chunks (eXIf, tEXt, ...) into ``png(width:height:rgba:)``.
    public static func pngChunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeAndData = Array(type.utf8) + data
        return bigEndian32(data.count) + typeAndData + bigEndian32(Int(crc32(typeAndData)))
    }

    /// A zlib stream of stored (uncompressed) deflate blocks.
    public static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let length = min(65_535, data.count - offset)
            let isFinal = offset + length == data.count
            out.append(isFinal ? 1 : 0)
            out += littleEndian16(length) + littleEndian16(~length & 0xFFFF)
            out += data[offset..<offset + length]
            offset += length
        } while offset < data.count
        return out + bigEndian32(Int(adler32(data)))
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }

    private static func bigEndian32(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func bigEndian16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
    private static func littleEndian16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
    private static func littleEndian32(_ value: Int) -> [UInt8] {
        littleEndian16(value & 0xFFFF) + littleEndian16(value >> 16)
    }
}
