extension ImageEncoder {
    /// The bytes `image` was decoded from, to be sent as they are in place of an encode, when they hold exactly its
    /// pixels: a JPEG, PNG or WebP of `format`, upright (no EXIF orientation to apply), at the image's size and frame
    /// count, 8 bits per sample, not CMYK. With `metadata` ``ImageMetadata/Policy/strip`` they lose their EXIF, XMP,
    /// IPTC, comments and text (a JPEG's `APP1`, `APP13`, other `APPn` but JFIF, ICC and Adobe, and `COM`; a PNG's
    /// `tEXt`, `zTXt`, `iTXt`, `eXIf` and `tIME`; a WebP's `EXIF` and `XMP `), without re-encoding, and keep what the
    /// pixels' colour depends on (ICC profile, `sRGB`, `gAMA`, `cHRM`, Adobe's transform); with
    /// ``ImageMetadata/Policy/all`` they are kept whole. `nil` otherwise (``ImageMetadata/Policy/copyright`` keeps
    /// chosen fields, which only an encode writes), and for bytes these rules cannot read.
    public static func sourceBytes(
        _ data: [UInt8], of image: Image, as format: ImageFormat, metadata: ImageMetadata.Policy
    ) -> [UInt8]? {
        guard [.jpeg, .png, .webp].contains(format), metadata != .copyright,
            let header = try? ImageHeader(reading: data), header.format == format, header.orientation == .up,
            header.bitDepth == 8, header.storedChannels != 4 || format != .jpeg,
            header.width == image.width, header.height == image.height,
            (try? ImageHeader.frames(in: data).count) == image.frames.count
        else { return nil }
        if metadata == .all { return data }
        switch format {
        case .jpeg: return MetadataStripping.jpeg(data)
        case .png: return MetadataStripping.png(data)
        default: return MetadataStripping.webp(data)
        }
    }
}

/// Metadata removed from encoded bytes by walking their segments, chunks or boxes; `nil` for bytes that do not walk
/// to their end.
enum MetadataStripping {
    /// A JPEG without `APP1` (EXIF, XMP), `APP13` (IPTC), the `APPn` segments of cameras and editors, `COM`, and
    /// anything after `EOI`; JFIF (`APP0`), ICC profiles (`APP2` `ICC_PROFILE`) and Adobe's colour transform
    /// (`APP14`) kept.
    static func jpeg(_ data: [UInt8]) -> [UInt8]? {
        guard data.count >= 4, data[0] == 0xFF, data[1] == 0xD8 else { return nil }
        var output: [UInt8] = [0xFF, 0xD8]
        output.reserveCapacity(data.count)
        var index = 2
        while index + 1 < data.count {
            guard data[index] == 0xFF else {
                // Entropy-coded data after a scan: copied up to the next marker (stuffed 00, restarts and fill skipped).
                let start = index
                while index + 1 < data.count,
                    !(data[index] == 0xFF && data[index + 1] != 0 && !(0xD0...0xD7).contains(data[index + 1])
                        && data[index + 1] != 0xFF)
                {
                    index += 1
                }
                output += data[start..<index]
                continue
            }
            let marker = data[index + 1]
            if marker == 0xFF {  // fill byte
                index += 1
                continue
            }
            if marker == 0xD9 {
                output += [0xFF, 0xD9]
                return output
            }
            guard index + 3 < data.count else { return nil }
            let length = Int(data[index + 2]) << 8 | Int(data[index + 3])
            guard length >= 2, index + 2 + length <= data.count else { return nil }
            let segment = data[index..<(index + 2 + length)]
            let payload = segment.dropFirst(4)
            let kept: Bool =
                switch marker {
                case 0xE0, 0xEE: true  // JFIF, Adobe
                case 0xE2: payload.starts(with: Array("ICC_PROFILE\u{0}".utf8))
                case 0xE1...0xEF, 0xFE: false  // EXIF, XMP, IPTC, makers' segments, comments
                default: true
                }
            if kept { output += segment }
            index += 2 + length
        }
        return nil
    }

    /// A PNG without `tEXt`, `zTXt`, `iTXt`, `eXIf`, `tIME`, and anything after `IEND`.
    static func png(_ data: [UInt8]) -> [UInt8]? {
        guard data.count >= 8, data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else { return nil }
        let dropped: Set<String> = ["tEXt", "zTXt", "iTXt", "eXIf", "tIME"]
        var output = Array(data[0..<8])
        output.reserveCapacity(data.count)
        var index = 8
        while index + 12 <= data.count {
            let length =
                Int(data[index]) << 24 | Int(data[index + 1]) << 16 | Int(data[index + 2]) << 8
                | Int(data[index + 3])
            guard length <= data.count - index - 12 else { return nil }
            let type = String(decoding: data[(index + 4)..<(index + 8)], as: UTF8.self)
            let end = index + 12 + length
            if !dropped.contains(type) { output += data[index..<end] }
            if type == "IEND" { return output }
            index = end
        }
        return nil
    }

    /// A WebP without its `EXIF` and `XMP ` chunks (and their flags in `VP8X`), the RIFF size made to match.
    static func webp(_ data: [UInt8]) -> [UInt8]? {
        guard data.count >= 12, data.starts(with: Array("RIFF".utf8)), Array(data[8..<12]) == Array("WEBP".utf8)
        else { return nil }
        let declared = Int(data[4]) | Int(data[5]) << 8 | Int(data[6]) << 16 | Int(data[7]) << 24
        // Cut short, or with nothing in it: not passed. What follows the RIFF is not the image's.
        guard declared >= 12, 8 + declared <= data.count else { return nil }
        let data = data[0..<(8 + declared)]
        var output = Array(data[0..<12])
        output.reserveCapacity(data.count)
        var index = 12
        while index + 8 <= data.count {
            let size =
                Int(data[index + 4]) | Int(data[index + 5]) << 8 | Int(data[index + 6]) << 16
                | Int(data[index + 7]) << 24
            let end = index + 8 + size + (size & 1)
            guard end <= data.count || (end == data.count + 1 && size & 1 == 1) else { return nil }
            let type = String(decoding: data[index..<(index + 4)], as: UTF8.self)
            if type != "EXIF" && type != "XMP " {
                var chunk = Array(data[index..<min(end, data.count)])
                if type == "VP8X", chunk.count > 8 { chunk[8] &= ~0x0C }  // the EXIF and XMP flags
                output += chunk
            }
            index = end
        }
        guard index >= data.count else { return nil }
        let riff = UInt32(output.count - 8)
        for byte in 0..<4 { output[4 + byte] = UInt8(truncatingIfNeeded: riff >> (8 * UInt32(byte))) }
        return output
    }
}
