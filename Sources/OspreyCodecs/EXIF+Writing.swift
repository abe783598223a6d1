// What an encoder keeps of EXIF (see ``ImageMetadata/Policy``): everything with the orientation reset, or a new
// TIFF structure with the copyright fields alone. Every offset is bounds-checked: EXIF comes from untrusted files.
extension EXIF {
    /// The TIFF tags the copyright policy keeps: Artist and Copyright.
    static let copyrightTags: [UInt16] = [0x013B, 0x8298]

    /// A TIFF structure (little-endian) holding only `tiff`'s Artist and Copyright strings; `nil` when it has neither
    /// or cannot be read.
    static func copyrightOnly(_ tiff: [UInt8]) -> [UInt8]? {
        guard let reader = TIFFReader(tiff) else { return nil }
        var fields: [(tag: UInt16, value: [UInt8])] = []
        for tag in copyrightTags {
            guard let entry = reader.entry(tag), entry.type == 2, let value = reader.data(of: entry) else { continue }
            // ASCII: NUL-terminated (a missing terminator is added).
            fields.append((tag, value.last == 0 ? value : value + [0]))
        }
        guard !fields.isEmpty else { return nil }
        // "II", 42, IFD0 at 8: its entries, the next-IFD offset (0), then the strings longer than four bytes.
        var output: [UInt8] = [0x49, 0x49, 42, 0, 8, 0, 0, 0]
        let dataStart = 8 + 2 + fields.count * 12 + 4
        var data: [UInt8] = []
        output += littleEndian16(fields.count)
        for (tag, value) in fields {
            output += littleEndian16(Int(tag)) + littleEndian16(2) + littleEndian32(value.count)
            if value.count <= 4 {
                output += value + [UInt8](repeating: 0, count: 4 - value.count)
            } else {
                output += littleEndian32(dataStart + data.count)
                data += value
                if data.count % 2 == 1 { data.append(0) }  // word-aligned, as TIFF asks
            }
        }
        return output + littleEndian32(0) + data
    }

    /// `tiff` with its IFD0 orientation (if any) set to 1, top-left: an encoder writes upright pixels.
    static func withOrientationReset(_ tiff: [UInt8]) -> [UInt8] {
        // The value's two bytes must be there: the entry's first eight are all reading the IFD checked.
        guard let reader = TIFFReader(tiff), let entry = reader.entry(0x0112), entry.type == 3, entry.count == 1,
            entry.offset + 10 <= tiff.count
        else { return tiff }
        var output = tiff
        let value = entry.offset + 8
        output[value] = reader.littleEndian ? 1 : 0
        output[value + 1] = reader.littleEndian ? 0 : 1
        return output
    }

    private static func littleEndian16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF)] }

    private static func littleEndian32(_ value: Int) -> [UInt8] {
        littleEndian16(value & 0xFFFF) + littleEndian16((value >> 16) & 0xFFFF)
    }
}

/// IFD0 of a TIFF structure, read with every offset checked.
struct TIFFReader {
    struct Entry {
        /// Where the entry's 12 bytes start.
        let offset: Int
        let tag: Int
        let type: Int
        let count: Int
    }

    private let tiff: TIFFBytes<[UInt8]>
    let entries: [Entry]

    var bytes: [UInt8] { tiff.bytes }
    var littleEndian: Bool { tiff.littleEndian }

    init?(_ bytes: [UInt8]) {
        guard let tiff = TIFFBytes(bytes), let ifd = tiff.read32(4), let count = tiff.read16(ifd), count <= 1_000
        else { return nil }
        var entries: [Entry] = []
        for index in 0..<count {
            let offset = ifd + 2 + index * 12
            guard let tag = tiff.read16(offset), let type = tiff.read16(offset + 2), let count = tiff.read32(offset + 4)
            else { return nil }
            entries.append(Entry(offset: offset, tag: tag, type: type, count: count))
        }
        self.tiff = tiff
        self.entries = entries
    }

    func entry(_ tag: UInt16) -> Entry? {
        entries.first { $0.tag == Int(tag) }
    }

    /// An entry's value bytes (ASCII and BYTE types): inline when four bytes or fewer, else at its offset.
    func data(of entry: Entry) -> [UInt8]? {
        guard entry.count >= 0, entry.count <= 65_536 else { return nil }
        if entry.count <= 4 {
            // Inline, in the entry's last four bytes, which an IFD cut short may not have.
            guard entry.offset + 8 + entry.count <= bytes.count else { return nil }
            return Array(bytes[(entry.offset + 8)..<(entry.offset + 8 + entry.count)])
        }
        guard let start = tiff.read32(entry.offset + 8), start >= 0, start + entry.count <= bytes.count else {
            return nil
        }
        return Array(bytes[start..<start + entry.count])
    }
}

/// What an encoder keeps of an XMP packet (see ``ImageMetadata/Policy``).
enum XMP {
    /// A new XMP packet holding only the `dc:creator` and `dc:rights` elements of `xmp`; `nil` when it has neither.
    static func copyrightOnly(_ xmp: [UInt8]) -> [UInt8]? {
        let text = String(decoding: xmp, as: UTF8.self)
        let kept = ["dc:creator", "dc:rights"].compactMap { element(named: $0, in: text) }
        guard !kept.isEmpty else { return nil }
        let packet = """
            <?xpacket begin="\u{FEFF}" id="W5M0MpCehiHzreSzNTczkc9d"?>
            <x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\
            <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">\(kept.joined())</rdf:Description>\
            </rdf:RDF></x:xmpmeta>
            <?xpacket end="w"?>
            """
        return Array(packet.utf8)
    }

    /// `xmp` with its `tiff:Orientation` (attribute or element) set to 1.
    static func withOrientationReset(_ xmp: [UInt8]) -> [UInt8] {
        var text = String(decoding: xmp, as: UTF8.self)
        for (opening, closing) in [("tiff:Orientation=\"", "\""), ("<tiff:Orientation>", "</tiff:Orientation>")] {
            var searchFrom = text.startIndex
            while let start = text[searchFrom...].firstRange(of: opening),
                let end = text[start.upperBound...].firstRange(of: closing)
            {
                text.replaceSubrange(start.upperBound..<end.lowerBound, with: "1")
                searchFrom = text.index(start.upperBound, offsetBy: 1)
            }
        }
        return Array(text.utf8)
    }

    /// The whole `<name>…</name>` element in `text`, or `nil`.
    private static func element(named name: String, in text: String) -> String? {
        guard let start = text.firstRange(of: "<" + name + ">") ?? text.firstRange(of: "<" + name + " "),
            let end = text[start.upperBound...].firstRange(of: "</" + name + ">")
        else { return nil }
        return String(text[start.lowerBound..<end.upperBound])
    }
}
