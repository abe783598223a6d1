/// Reads the orientation tag from an EXIF (TIFF) structure, the only EXIF field decoding needs.
enum EXIF {
    /// The orientation in `tiff` (a TIFF header and IFD0, optionally preceded by `Exif\0\0`), or `nil` when it has
    /// none or is malformed. Every offset is bounds-checked: EXIF comes from untrusted files.
    static func orientation(in tiff: UnsafeRawBufferPointer) -> ImageOrientation? {
        var bytes = tiff
        if bytes.count >= 6, Array(bytes[0..<6]) == [0x45, 0x78, 0x69, 0x66, 0, 0] {  // "Exif\0\0"
            bytes = UnsafeRawBufferPointer(rebasing: bytes[6...])
        }
        guard let tiff = TIFFBytes(bytes), let ifd = tiff.read32(4), let count = tiff.read16(ifd) else { return nil }
        for index in 0..<count {
            let entry = ifd + 2 + index * 12
            guard let tag = tiff.read16(entry) else { return nil }
            if tag == 0x0112 {
                guard let type = tiff.read16(entry + 2), type == 3, let value = tiff.read16(entry + 8) else {
                    return nil
                }
                return ImageOrientation(rawValue: value)
            }
        }
        return nil
    }

    /// The EXIF payload of a JPEG's first `APP1 Exif` segment, found by walking the markers before the first scan.
    static func jpegPayload(in jpeg: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        var offset = 2  // after SOI
        while offset + 4 <= jpeg.count {
            guard jpeg[offset] == 0xFF else { return nil }
            let marker = jpeg[offset + 1]
            if marker == 0xFF {  // fill byte
                offset += 1
                continue
            }
            if marker == 0xDA || marker == 0xD9 { return nil }  // start of scan, end of image: no EXIF before them
            if (0xD0...0xD7).contains(marker) || marker == 0x01 {
                offset += 2
                continue
            }
            let length = Int(jpeg[offset + 2]) << 8 | Int(jpeg[offset + 3])
            guard length >= 2, offset + 2 + length <= jpeg.count else { return nil }
            if marker == 0xE1, length >= 8 {
                let payload = UnsafeRawBufferPointer(rebasing: jpeg[(offset + 4)..<(offset + 2 + length)])
                if Array(payload[0..<6]) == [0x45, 0x78, 0x69, 0x66, 0, 0] { return payload }
            }
            offset += 2 + length
        }
        return nil
    }

    /// The payload of a PNG's first `eXIf` chunk, before or after the image data.
    static func pngPayload(in png: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        PNGChunks.first("eXIf", in: png)
    }
}

/// A PNG's chunks, walked by their lengths: their data is skipped, not read.
enum PNGChunks {
    /// The data of the first chunk of `type` before `IEND`, or `nil`.
    static func first(_ type: String, in png: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        var offset = 8  // after the signature
        while offset + 8 <= png.count {
            let length =
                Int(png[offset]) << 24 | Int(png[offset + 1]) << 16 | Int(png[offset + 2]) << 8 | Int(png[offset + 3])
            let name = UnsafeRawBufferPointer(rebasing: png[(offset + 4)..<(offset + 8)])
            guard length <= png.count - offset - 8 else { return nil }
            if name.elementsEqual(type.utf8) {
                return UnsafeRawBufferPointer(rebasing: png[(offset + 8)..<(offset + 8 + length)])
            }
            if name.elementsEqual("IEND".utf8) { return nil }
            offset += 12 + length  // length, type, data, CRC
        }
        return nil
    }

    /// Calls `body` with the data of each chunk of `type` before `IEND`, in order, while it returns `true`.
    static func forEach(_ type: String, in png: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Bool) {
        var offset = 8
        while offset + 8 <= png.count {
            let length =
                Int(png[offset]) << 24 | Int(png[offset + 1]) << 16 | Int(png[offset + 2]) << 8 | Int(png[offset + 3])
            let name = UnsafeRawBufferPointer(rebasing: png[(offset + 4)..<(offset + 8)])
            guard length <= png.count - offset - 8, !name.elementsEqual("IEND".utf8) else { return }
            if name.elementsEqual(type.utf8),
                !body(UnsafeRawBufferPointer(rebasing: png[(offset + 8)..<(offset + 8 + length)]))
            {
                return
            }
            offset += 12 + length
        }
    }

    /// Whether `png` has a chunk of `type`.
    static func contains(_ type: String, in png: UnsafeRawBufferPointer) -> Bool {
        first(type, in: png) != nil
    }
}

/// The bytes of a TIFF structure (EXIF's), read in its byte order with every offset checked.
struct TIFFBytes<Bytes: RandomAccessCollection> where Bytes.Element == UInt8, Bytes.Index == Int {
    let bytes: Bytes
    /// "II" (Intel) rather than "MM" (Motorola).
    let littleEndian: Bool

    /// `nil` unless `bytes` (indexed from 0) start with a TIFF header: a byte order and the number 42.
    init?(_ bytes: Bytes) {
        guard bytes.startIndex == 0, bytes.count >= 8 else { return nil }
        switch (bytes[0], bytes[1]) {
        case (0x49, 0x49): littleEndian = true  // "II"
        case (0x4D, 0x4D): littleEndian = false  // "MM"
        default: return nil
        }
        self.bytes = bytes
        guard read16(2) == 42 else { return nil }
    }

    func read16(_ offset: Int) -> Int? {
        guard offset >= 0, offset + 2 <= bytes.count else { return nil }
        let (a, b) = (Int(bytes[offset]), Int(bytes[offset + 1]))
        return littleEndian ? a | b << 8 : a << 8 | b
    }

    func read32(_ offset: Int) -> Int? {
        guard let low = read16(littleEndian ? offset : offset + 2),
            let high = read16(littleEndian ? offset + 2 : offset)
        else { return nil }
        return low | high << 16
    }
}
