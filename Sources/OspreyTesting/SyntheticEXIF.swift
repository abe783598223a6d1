/// EXIF (TIFF) structures built byte by byte, in either byte order, for the tests of what Osprey reads from them.
public struct SyntheticEXIF: Sendable {
    /// Whether the TIFF structure is written little-endian (`II`) or big-endian (`MM`).
    public let littleEndian: Bool

    /// Makes an empty EXIF block in the given byte order.
    public init(littleEndian: Bool) {
        self.littleEndian = littleEndian
    }

    func u16(_ value: Int) -> [UInt8] {
        let (low, high) = (UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF))
        return littleEndian ? [low, high] : [high, low]
    }

    func u32(_ value: Int) -> [UInt8] {
        let (low, high) = (u16(value & 0xFFFF), u16(value >> 16 & 0xFFFF))
        return littleEndian ? low + high : high + low
    }

    /// A value of an entry: its TIFF type follows from the case.
    public enum Value {
        case ascii(String)
        case short(Int)
        case long(Int)
        case rationals([(Int, Int)])
        case byte(UInt8)
    }

    /// The IFDs (the first is IFD0; `pointers` name the tag in IFD0 pointing at each other IFD), laid out.
    public func build(_ ifds: [[(tag: Int, value: Value)]], pointers: [Int]) -> [UInt8] {
        // Header, then each IFD (2 + 12n + 4 bytes), then the values that do not fit in 4 bytes.
        var ifdOffsets: [Int] = []
        var offset = 8
        for ifd in ifds {
            ifdOffsets.append(offset)
            offset += 2 + 12 * (ifd.count + (ifdOffsets.count == 1 ? pointers.count : 0)) + 4
        }
        var data: [UInt8] = []
        var out = (littleEndian ? [0x49, 0x49] : [0x4D, 0x4D]) + u16(42) + u32(8)
        for (index, ifd) in ifds.enumerated() {
            var entries = ifd.map { ($0.tag, $0.value) }
            if index == 0 {
                for (n, tag) in pointers.enumerated() { entries.append((tag, .long(ifdOffsets[n + 1]))) }
            }
            out += u16(entries.count)
            for (tag, value) in entries {
                let (type, count, payload): (Int, Int, [UInt8])
                switch value {
                case .ascii(let text): (type, count, payload) = (2, text.utf8.count + 1, Array(text.utf8) + [0])
                case .short(let v): (type, count, payload) = (3, 1, u16(v))
                case .long(let v): (type, count, payload) = (4, 1, u32(v))
                case .byte(let v): (type, count, payload) = (1, 1, [v])
                case .rationals(let values):
                    (type, count, payload) = (5, values.count, values.flatMap { u32($0.0) + u32($0.1) })
                }
                out += u16(tag) + u16(type) + u32(count)
                if payload.count <= 4 {
                    out += payload + [UInt8](repeating: 0, count: 4 - payload.count)
                } else {
                    out += u32(offset + data.count)
                    data += payload
                }
            }
            out += u32(0)
        }
        return out + data
    }

    /// A photo's EXIF: camera, lens, date with offset, exposure, and a GPS position (48°51′24.12″ N,
    /// 2°17′40.08″ W, 35 m).
    public static func photo(littleEndian: Bool) -> [UInt8] {
        let builder = SyntheticEXIF(littleEndian: littleEndian)
        return builder.build(
            [
                [
                    (0x010F, .ascii("Osprey Optics")), (0x0110, .ascii("Fish Eye 9")),
                    (0x0132, .ascii("2020:01:01 00:00:00")),
                ],
                [
                    (0x829A, .rationals([(1, 125)])), (0x829D, .rationals([(28, 10)])), (0x8827, .short(400)),
                    (0x9003, .ascii("2024:05:01 12:34:56")), (0x9011, .ascii("+02:00")),
                    (0x920A, .rationals([(50, 1)])), (0xA434, .ascii("50mm F1.8")),
                ],
                [
                    (1, .ascii("N")), (2, .rationals([(48, 1), (51, 1), (2412, 100)])), (3, .ascii("W")),
                    (4, .rationals([(2, 1), (17, 1), (4008, 100)])), (5, .byte(0)), (6, .rationals([(35, 1)])),
                ],
            ], pointers: [0x8769, 0x8825])
    }
}
