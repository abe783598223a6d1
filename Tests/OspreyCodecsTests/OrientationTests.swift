import OspreyCodecs
import OspreyTesting
import Testing

@Suite struct OrientationTests {
    /// Stored 3×2:   1 2 3
    ///               4 5 6
    let stored: PixelBuffer

    init() throws {
        stored = try PixelBuffer(width: 3, height: 2, format: .gray8, bytes: [1, 2, 3, 4, 5, 6])
    }

    @Test(
        "each EXIF orientation turns the pixels upright",
        arguments: [
            (ImageOrientation.up, 3, [[1, 2, 3], [4, 5, 6]]),
            (.upMirrored, 3, [[3, 2, 1], [6, 5, 4]]),
            (.down, 3, [[6, 5, 4], [3, 2, 1]]),
            (.downMirrored, 3, [[4, 5, 6], [1, 2, 3]]),
            (.leftMirrored, 2, [[1, 4], [2, 5], [3, 6]]),
            (.right, 2, [[4, 1], [5, 2], [6, 3]]),
            (.rightMirrored, 2, [[6, 3], [5, 2], [4, 1]]),
            (.left, 2, [[3, 6], [2, 5], [1, 4]]),
        ] as [(ImageOrientation, Int, [[UInt8]])]
    )
    func applies(orientation: ImageOrientation, width: Int, rows: [[UInt8]]) throws {
        let upright = try stored.applying(orientation)
        #expect(upright.width == width)
        #expect(upright.height == rows.count)
        #expect((0..<upright.height).map { upright.row($0) } == rows)
    }

    @Test(
        "a buffer larger than the 64 × 64 tiles is turned exactly, partial tiles included",
        arguments: [
            ImageOrientation.up, .upMirrored, .down, .downMirrored, .leftMirrored, .right, .rightMirrored, .left,
        ]
    )
    func turnsAcrossTiles(orientation: ImageOrientation) throws {
        let (width, height) = (150, 70)
        // Pixel (x, y) holds x + 151 * y as 16 bits, so every pixel is distinct.
        let values = (0..<height).flatMap { y in (0..<width).map { x in UInt16(x + 151 * y) } }
        let bytes = values.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let stored = try PixelBuffer(width: width, height: height, format: .grayAlpha8, bytes: bytes)
        let upright = try stored.applying(orientation)
        let turns = orientation.swapsDimensions
        #expect(upright.width == (turns ? height : width))
        #expect(upright.height == (turns ? width : height))
        for y in 0..<upright.height {
            let row = upright.row(y)
            for x in 0..<upright.width {
                // EXIF's definitions, written out per orientation as the reference.
                let (sx, sy): (Int, Int)
                switch orientation {
                case .up: (sx, sy) = (x, y)
                case .upMirrored: (sx, sy) = (width - 1 - x, y)
                case .down: (sx, sy) = (width - 1 - x, height - 1 - y)
                case .downMirrored: (sx, sy) = (x, height - 1 - y)
                case .leftMirrored: (sx, sy) = (y, x)
                case .right: (sx, sy) = (y, height - 1 - x)
                case .rightMirrored: (sx, sy) = (width - 1 - y, height - 1 - x)
                case .left: (sx, sy) = (width - 1 - y, x)
                }
                let expected = UInt16(sx + 151 * sy)
                guard UInt16(row[2 * x]) | UInt16(row[2 * x + 1]) << 8 == expected else {
                    Issue.record("\(orientation) (\(x), \(y)): expected stored (\(sx), \(sy))")
                    return
                }
            }
        }
    }

    @Test func movesWholePixels() throws {
        let rgb = try PixelBuffer(width: 2, height: 1, format: .rgb8, bytes: [1, 2, 3, 4, 5, 6])
        #expect(try rgb.applying(.upMirrored).row(0) == [4, 5, 6, 1, 2, 3])
        let rgba = try PixelBuffer(width: 2, height: 1, format: .rgba8, bytes: [1, 2, 3, 4, 5, 6, 7, 8])
        let turned = try rgba.applying(.right)
        #expect((0..<2).map { turned.row($0) } == [[1, 2, 3, 4], [5, 6, 7, 8]])
    }
}

@Suite struct EXIFTests {
    /// A TIFF structure with one IFD0 entry: Orientation (0x0112), SHORT, count 1.
    static func tiff(orientation: UInt8, bigEndian: Bool, prefix: Bool = false) -> [UInt8] {
        let header: [UInt8] = bigEndian ? [0x4D, 0x4D, 0, 42, 0, 0, 0, 8] : [0x49, 0x49, 42, 0, 8, 0, 0, 0]
        let entry: [UInt8] =
            bigEndian
            ? [0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, orientation, 0, 0]
            : [1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, orientation, 0, 0, 0]
        return (prefix ? [0x45, 0x78, 0x69, 0x66, 0, 0] : []) + header + entry
    }

    @Test func readsTheOrientationFromEitherByteOrder() throws {
        let png = { (exif: [UInt8]) in try ImageDecoder.decode(pngWithEXIF(exif), options: keepOrientation).orientation
        }
        #expect(try png(Self.tiff(orientation: 6, bigEndian: true)) == .right)
        #expect(try png(Self.tiff(orientation: 8, bigEndian: false)) == .left)
        // PNG's eXIf must start with the TIFF header: libpng drops a chunk that starts with "Exif\0\0".
        #expect(try png(Self.tiff(orientation: 3, bigEndian: false, prefix: true)) == .up)
    }

    @Test func ignoresMalformedEXIF() throws {
        let png = { (exif: [UInt8]) in try ImageDecoder.decode(pngWithEXIF(exif), options: keepOrientation).orientation
        }
        #expect(try png(Array(Self.tiff(orientation: 6, bigEndian: true).prefix(12))) == .up)
        #expect(try png([0x4D, 0x4D, 0, 42, 0xFF, 0xFF, 0xFF, 0xF0]) == .up)
        #expect(try png(Self.tiff(orientation: 9, bigEndian: true)) == .up)
    }

    @Test func appliesPNGOrientationByDefault() throws {
        let image = try ImageDecoder.decode(pngWithEXIF(Self.tiff(orientation: 6, bigEndian: true)))
        #expect(image.orientation == .up)
        #expect(image.width == 3 && image.height == 4)
    }

    private var keepOrientation: DecodingOptions {
        var options = DecodingOptions()
        options.keepsStoredOrientation = true
        return options
    }

    /// A 4×3 PNG with an eXIf chunk before IEND.
    private func pngWithEXIF(_ exif: [UInt8]) -> [UInt8] {
        let png = SyntheticImages.png(width: 4, height: 3)
        return Array(png.dropLast(12)) + SyntheticImages.pngChunk("eXIf", exif) + Array(png.suffix(12))
    }
}
