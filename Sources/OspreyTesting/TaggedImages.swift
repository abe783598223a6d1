import OspreyCodecs

/// Images that carry EXIF and XMP, for the tests of what the metadata policy keeps: ``exif`` holds an orientation,
/// the copyright fields, a camera make and a GPS position, ``xmp`` the same in XMP plus a private description.
public enum TaggedImages {
    /// A big-endian TIFF: IFD0 with Orientation 6, Artist, Copyright, Make and a GPS IFD holding a latitude reference.
    public static let exif: [UInt8] = {
        func be16(_ v: Int) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func be32(_ v: Int) -> [UInt8] { be16(v >> 16) + be16(v & 0xFFFF) }
        let artist = Array("Ada Lovelace".utf8) + [0]
        let copyright = Array("(c) 2026 Ada".utf8) + [0]
        let make = Array("Babbage".utf8) + [0]
        let ifd0 = 8
        let entries = 5
        let gpsIFD = ifd0 + 2 + entries * 12 + 4
        let gpsSize = 2 + 12 + 4
        let dataStart = gpsIFD + gpsSize
        var tiff: [UInt8] = [0x4D, 0x4D] + be16(42) + be32(ifd0) + be16(entries)
        tiff += be16(0x010F) + be16(2) + be32(make.count) + be32(dataStart)  // Make
        tiff += be16(0x0112) + be16(3) + be32(1) + be16(6) + be16(0)  // Orientation 6
        tiff += be16(0x013B) + be16(2) + be32(artist.count) + be32(dataStart + make.count)  // Artist
        tiff += be16(0x8298) + be16(2) + be32(copyright.count) + be32(dataStart + make.count + artist.count)
        tiff += be16(0x8825) + be16(4) + be32(1) + be32(gpsIFD)  // GPSInfo
        tiff += be32(0)
        tiff += be16(1) + be16(0x0001) + be16(2) + be32(2) + [UInt8(ascii: "N"), 0, 0, 0] + be32(0)  // GPSLatitudeRef
        return tiff + make + artist + copyright
    }()

    /// An XMP packet that names a creator and a rating.
    public static let xmp = Array(
        """
        <x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\
        <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" \
        xmlns:tiff="http://ns.adobe.com/tiff/1.0/" xmlns:exif="http://ns.adobe.com/exif/1.0/" tiff:Orientation="6" \
        exif:GPSLatitude="51,30.0N"><dc:creator><rdf:Seq><rdf:li>Ada Lovelace</rdf:li></rdf:Seq></dc:creator>\
        <dc:rights><rdf:Alt><rdf:li xml:lang="x-default">(c) 2026 Ada</rdf:li></rdf:Alt></dc:rights>\
        <dc:description>private notes</dc:description></rdf:Description></rdf:RDF></x:xmpmeta>
        """.utf8)

    /// A 6 × 4 JPEG (displayed 4 × 6) carrying ``exif`` (APP1 Exif) and ``xmp`` (APP1 XMP), inserted by hand after SOI.
    public static func jpeg() throws -> [UInt8] {
        let pixels = try PixelBuffer(
            width: 6, height: 4, format: .rgb8, bytes: (0..<72).map { UInt8(truncatingIfNeeded: $0 * 3) })
        let jpeg = try ImageEncoder.encode(Image(pixels: pixels), as: .jpeg)
        func segment(_ payload: [UInt8]) -> [UInt8] {
            [0xFF, 0xE1, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
        }
        let app1 =
            segment(Array("Exif".utf8) + [0, 0] + exif)
            + segment(Array("http://ns.adobe.com/xap/1.0/".utf8) + [0] + xmp)
        return Array(jpeg.prefix(2)) + app1 + jpeg.dropFirst(2)
    }

    /// The tags of IFD0 of a TIFF structure, in order.
    public static func ifd0Tags(_ tiff: [UInt8]) -> [Int] {
        let little = tiff[0] == 0x49
        func u16(_ o: Int) -> Int {
            little ? Int(tiff[o]) | Int(tiff[o + 1]) << 8 : Int(tiff[o]) << 8 | Int(tiff[o + 1])
        }
        func u32(_ o: Int) -> Int { little ? u16(o) | u16(o + 2) << 16 : u16(o) << 16 | u16(o + 2) }
        let ifd = u32(4)
        return (0..<u16(ifd)).map { u16(ifd + 2 + $0 * 12) }
    }
}

extension Array where Element == UInt8 {
    /// Whether `subsequence` occurs in the array, contiguously.
    public func contains(subsequence: [UInt8]) -> Bool {
        guard !subsequence.isEmpty, subsequence.count <= count else { return false }
        return (0...(count - subsequence.count)).contains {
            self[$0..<$0 + subsequence.count].elementsEqual(subsequence)
        }
    }
}
