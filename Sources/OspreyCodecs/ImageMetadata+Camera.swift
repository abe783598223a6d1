extension ImageMetadata {
    /// What a photo's EXIF says of how it was taken: camera, lens, date, exposure, and where (GPS), each when present
    /// and well formed. Read from ``exif`` with every offset and count checked (EXIF comes from untrusted files);
    /// strings are cut at 128 characters.
    public struct Camera: Sendable, Hashable, Codable {
        /// The camera's maker (`Make`).
        public var make: String?
        /// The camera's model (`Model`).
        public var model: String?
        /// The lens (`LensModel`).
        public var lens: String?
        /// When the photo was taken (`DateTimeOriginal`, else `DateTime`), as ISO 8601 local time
        /// (`2024-05-01T12:34:56`), with its offset (`+02:00`) when `OffsetTimeOriginal` gives one.
        public var dateTaken: String?
        /// The exposure time in seconds (`ExposureTime`): 0.008 for 1/125 s.
        public var exposureTime: Double?
        /// The aperture's f-number (`FNumber`).
        public var fNumber: Double?
        /// The ISO speed (`PhotographicSensitivity`).
        public var iso: Int?
        /// The focal length in millimetres (`FocalLength`).
        public var focalLength: Double?
        /// Where the photo was taken (the GPS IFD).
        public var gps: Location?

        /// A position on Earth: degrees north and east (negative south and west), metres above sea level.
        public struct Location: Sendable, Hashable, Codable {
            /// Degrees north of the equator (negative south).
            public var latitude: Double
            /// Degrees east of Greenwich (negative west).
            public var longitude: Double
            /// Metres above sea level (negative below), when recorded.
            public var altitude: Double?
        }

        /// Whether nothing was found.
        public var isEmpty: Bool { self == Camera() }

        /// Makes camera metadata with nothing recorded.
        public init() {}
    }

    /// The camera fields of ``exif``; `nil` when there is no EXIF or it holds none of them.
    public var camera: Camera? {
        guard let exif else { return nil }
        var bytes = exif[...]
        if bytes.count >= 6, bytes.prefix(6).elementsEqual([0x45, 0x78, 0x69, 0x66, 0, 0]) {
            bytes = bytes.dropFirst(6)
        }
        guard let reader = EXIFReader(Array(bytes)) else { return nil }
        let camera = reader.camera()
        return camera.isEmpty ? nil : camera
    }
}

/// The IFDs of an EXIF (TIFF) structure, read with every offset checked.
struct EXIFReader {
    let tiff: TIFFBytes<[UInt8]>

    init?(_ bytes: [UInt8]) {
        guard let tiff = TIFFBytes(bytes) else { return nil }
        self.tiff = tiff
    }

    /// One IFD entry: its type, count, and where its value lies (inline or at an offset).
    struct Entry {
        let type: Int
        let count: Int
        let valueOffset: Int
    }

    /// The sizes of TIFF's types, by type number (BYTE, ASCII, SHORT, LONG, RATIONAL, SBYTE, UNDEFINED, SSHORT,
    /// SLONG, SRATIONAL).
    static let typeSizes: [Int: Int] = [1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8]

    /// The entries of the IFD at `offset`, by tag (at most 512 read).
    func entries(at offset: Int) -> [Int: Entry] {
        guard let count = tiff.read16(offset) else { return [:] }
        var entries: [Int: Entry] = [:]
        for index in 0..<min(count, 512) {
            let entry = offset + 2 + index * 12
            guard let tag = tiff.read16(entry), let type = tiff.read16(entry + 2), let count = tiff.read32(entry + 4),
                let size = Self.typeSizes[type], count > 0, count <= 1 << 20
            else { continue }
            let valueOffset = size * count <= 4 ? entry + 8 : tiff.read32(entry + 8) ?? -1
            guard valueOffset >= 0, valueOffset + size * count <= tiff.bytes.count else { continue }
            entries[tag] = Entry(type: type, count: count, valueOffset: valueOffset)
        }
        return entries
    }

    func string(_ entry: Entry?) -> String? {
        guard let entry, entry.type == 2 || entry.type == 7 else { return nil }
        let bytes = tiff.bytes[entry.valueOffset..<(entry.valueOffset + min(entry.count, 128))]
        let text = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            .filter { !$0.isNewline && $0 != "\u{FFFD}" && !($0.asciiValue.map { $0 < 0x20 } ?? false) }
        var trimmed = Substring(text)
        while trimmed.first?.isWhitespace == true { trimmed.removeFirst() }
        while trimmed.last?.isWhitespace == true { trimmed.removeLast() }
        return trimmed.isEmpty ? nil : String(trimmed)
    }

    func integer(_ entry: Entry?) -> Int? {
        guard let entry else { return nil }
        switch entry.type {
        case 3: return tiff.read16(entry.valueOffset)
        case 4: return tiff.read32(entry.valueOffset)
        case 1: return Int(tiff.bytes[entry.valueOffset])
        default: return nil
        }
    }

    /// The `index`th value of a RATIONAL or SRATIONAL entry; `nil` for a zero denominator.
    func rational(_ entry: Entry?, index: Int = 0) -> Double? {
        guard let entry, entry.type == 5 || entry.type == 10, index < entry.count,
            let numerator = tiff.read32(entry.valueOffset + index * 8),
            let denominator = tiff.read32(entry.valueOffset + index * 8 + 4)
        else { return nil }
        let signed = entry.type == 10
        let n = signed ? Double(Int32(truncatingIfNeeded: numerator)) : Double(UInt32(truncatingIfNeeded: numerator))
        let d =
            signed ? Double(Int32(truncatingIfNeeded: denominator)) : Double(UInt32(truncatingIfNeeded: denominator))
        guard d != 0 else { return nil }
        let value = n / d
        return value.isFinite ? value : nil
    }

    func camera() -> ImageMetadata.Camera {
        var camera = ImageMetadata.Camera()
        guard let first = tiff.read32(4) else { return camera }
        let ifd0 = entries(at: first)
        camera.make = string(ifd0[0x010F])
        camera.model = string(ifd0[0x0110])
        var date = string(ifd0[0x0132])
        if let pointer = integer(ifd0[0x8769]) {
            let exif = entries(at: pointer)
            camera.lens = string(exif[0xA434])
            date = string(exif[0x9003]) ?? date
            camera.exposureTime = rational(exif[0x829A])
            camera.fNumber = rational(exif[0x829D])
            camera.iso = integer(exif[0x8827])
            camera.focalLength = rational(exif[0x920A])
            if let taken = date.flatMap(Self.isoDate), let offset = string(exif[0x9011]), Self.isOffset(offset) {
                camera.dateTaken = taken + offset
            }
        }
        if camera.dateTaken == nil { camera.dateTaken = date.flatMap(Self.isoDate) }
        if let pointer = integer(ifd0[0x8825]) { camera.gps = location(entries(at: pointer)) }
        return camera
    }

    /// Degrees, minutes and seconds with their hemisphere; metres above (or below) sea level.
    func location(_ gps: [Int: Entry]) -> ImageMetadata.Camera.Location? {
        func degrees(_ value: Int, _ reference: Int, negative: String) -> Double? {
            guard let entry = gps[value], entry.count >= 3, let d = rational(entry, index: 0),
                let m = rational(entry, index: 1), let s = rational(entry, index: 2)
            else { return nil }
            let magnitude = d + m / 60 + s / 3600
            return string(gps[reference]) == negative ? -magnitude : magnitude
        }
        guard let latitude = degrees(2, 1, negative: "S"), let longitude = degrees(4, 3, negative: "W"),
            abs(latitude) <= 90, abs(longitude) <= 180
        else { return nil }
        var altitude = rational(gps[6])
        if let below = gps[5], tiff.bytes[below.valueOffset] == 1 { altitude = altitude.map { -$0 } }
        return ImageMetadata.Camera.Location(latitude: latitude, longitude: longitude, altitude: altitude)
    }

    /// `YYYY:MM:DD HH:MM:SS` as `YYYY-MM-DDTHH:MM:SS`; `nil` for anything else (blank dates included).
    static func isoDate(_ text: String) -> String? {
        let characters = Array(text)
        guard characters.count == 19 else { return nil }
        for (index, character) in characters.enumerated() {
            switch index {
            case 4, 7: guard character == ":" else { return nil }
            case 10: guard character == " " else { return nil }
            case 13, 16: guard character == ":" else { return nil }
            default: guard character.isASCII, character.isNumber else { return nil }
            }
        }
        guard characters.prefix(4) != ["0", "0", "0", "0"] else { return nil }
        var result = characters
        result[4] = "-"
        result[7] = "-"
        result[10] = "T"
        return String(result)
    }

    /// `+HH:MM` or `-HH:MM`.
    static func isOffset(_ text: String) -> Bool {
        let characters = Array(text)
        return characters.count == 6 && (characters[0] == "+" || characters[0] == "-") && characters[3] == ":"
            && [1, 2, 4, 5].allSatisfy { characters[$0].isASCII && characters[$0].isNumber }
    }
}
