import OspreyTesting
import Testing

@testable import OspreyCodecs

/// The PNG fast path (libdeflate and our unfiltering) against the truth: pixels we filtered ourselves, and libpng.
@Suite struct PNGDecoderTests {
    // MARK: Building PNGs

    /// A deterministic byte generator (64-bit LCG), so failures reproduce.
    struct Bytes {
        var state: UInt64

        mutating func next(_ count: Int) -> [UInt8] {
            (0..<count).map { _ in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return UInt8(truncatingIfNeeded: state >> 56)
            }
        }
    }

    /// PNG's forward filter of one row (the encoder's side of the specification's section 9), written independently
    /// of the decoder's reversal.
    static func filter(_ type: UInt8, row: [UInt8], previous: [UInt8], bytesPerPixel: Int) -> [UInt8] {
        row.indices.map { index -> UInt8 in
            let a = index >= bytesPerPixel ? Int(row[index - bytesPerPixel]) : 0
            let b = Int(previous[index])
            let c = index >= bytesPerPixel ? Int(previous[index - bytesPerPixel]) : 0
            let predictor: Int
            switch type {
            case 0: predictor = 0
            case 1: predictor = a
            case 2: predictor = b
            case 3: predictor = (a + b) / 2
            default:
                let p = a + b - c
                let (pa, pb, pc) = (abs(p - a), abs(p - b), abs(p - c))
                predictor = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c)
            }
            return row[index] &- UInt8(truncatingIfNeeded: predictor)
        }
    }

    /// The zlib stream of `samples` (rows of `rowBytes`) with row `y` filtered by `filterOfRow(y)`.
    static func imageData(
        _ samples: [UInt8], rowBytes: Int, bytesPerPixel: Int, filterOfRow: (Int) -> UInt8
    ) -> [UInt8] {
        var raw: [UInt8] = []
        var previous = [UInt8](repeating: 0, count: rowBytes)
        for y in 0..<samples.count / rowBytes {
            let row = Array(samples[y * rowBytes..<(y + 1) * rowBytes])
            let type = filterOfRow(y)
            raw += [type] + filter(type, row: row, previous: previous, bytesPerPixel: bytesPerPixel)
            previous = row
        }
        return SyntheticImages.zlibStored(raw)
    }

    /// Decodes `bytes` both ways, expects both to agree, and returns the fast path's outcome.
    static func decodeBothWays(
        _ bytes: [UInt8], options: DecodingOptions = DecodingOptions(),
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Result<(image: Image, path: PNGDecoder.Path), CodecError> {
        bytes.withUnsafeBytes { buffer in
            let fast = Result { () throws(CodecError) in try PNGDecoder.decodeReportingPath(buffer, options: options) }
            let libpng = Result { () throws(CodecError) in
                try PNGDecoder.decodeReportingPath(buffer, options: options, usesLibpngOnly: true)
            }
            switch (fast, libpng) {
            case (.success(let fast), .success(let libpng)):
                #expect(libpng.path == .libpng, sourceLocation: sourceLocation)
                #expect(
                    fast.image == libpng.image, "the two paths decode different pixels", sourceLocation: sourceLocation)
            case (.failure(let fast), .failure(let libpng)):
                #expect(fast == libpng, sourceLocation: sourceLocation)
            default:
                Issue.record("fast path: \(fast), libpng: \(libpng)", sourceLocation: sourceLocation)
            }
            return fast
        }
    }

    // MARK: Reconstruction

    @Test(
        "every filter type reconstructs every 8-bit pixel size",
        arguments: [(UInt8(0), 1), (4, 2), (2, 3), (6, 4)]
    )
    func filters(colorType: UInt8, bytesPerPixel: Int) throws {
        // Given random samples, filtered row by row with each type in turn and then with all five mixed
        let (width, height) = (37, 11)
        var generator = Bytes(state: UInt64(colorType) + 1)
        let samples = generator.next(width * height * bytesPerPixel)
        for filterOfRow in [{ _ in 0 }, { _ in 1 }, { _ in 2 }, { _ in 3 }, { _ in 4 }, { UInt8($0 % 5) }]
            as [(Int) -> UInt8]
        {
            let data = Self.imageData(
                samples, rowBytes: width * bytesPerPixel, bytesPerPixel: bytesPerPixel, filterOfRow: filterOfRow)
            let png = SyntheticImages.png(width: width, height: height, colorType: colorType, imageData: data)

            // When it is decoded
            let (image, path) = try Self.decodeBothWays(png).get()

            // Then the fast path took it and gives back the samples exactly
            #expect(path == .fast)
            #expect(image.pixelFormat.bytesPerPixel == bytesPerPixel)
            #expect(image.pixels.withUnsafeBytes { Array($0) } == samples)
        }
    }

    @Test("palette indices expand to RGB, or RGBA with tRNS; indices past the palette are black")
    func palette() throws {
        // Given a 3-entry palette, alpha for the first two, and indices 0...3 (3 is past the palette)
        let plte = SyntheticImages.pngChunk("PLTE", [255, 0, 0, 0, 255, 0, 0, 0, 255])
        let trns = SyntheticImages.pngChunk("tRNS", [0, 128])
        let indices: [UInt8] = [0, 1, 2, 3, 3, 2, 1, 0]
        let data = Self.imageData(indices, rowBytes: 4, bytesPerPixel: 1) { UInt8($0 % 5) }

        // When it is decoded without and with tRNS
        let opaque = try Self.decodeBothWays(
            SyntheticImages.png(width: 4, height: 2, colorType: 3, imageData: data, before: [plte])
        ).get()
        let translucent = try Self.decodeBothWays(
            SyntheticImages.png(width: 4, height: 2, colorType: 3, imageData: data, before: [plte, trns])
        ).get()

        // Then both take the fast path and look colours up as libpng does
        #expect(opaque.path == .fast)
        #expect(opaque.image.pixels.row(0) == [255, 0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0])
        #expect(translucent.path == .fast)
        #expect(translucent.image.pixels.row(1) == [0, 0, 0, 255, 0, 0, 255, 255, 0, 255, 0, 128, 255, 0, 0, 0])
    }

    @Test("a tRNS colour key turns matching gray and RGB pixels transparent")
    func colourKey() throws {
        // Given gray samples keyed on 7, and RGB samples keyed on (1, 2, 3)
        let gray = SyntheticImages.png(
            width: 3, height: 1, colorType: 0,
            imageData: Self.imageData([7, 8, 7], rowBytes: 3, bytesPerPixel: 1) { _ in 1 },
            before: [SyntheticImages.pngChunk("tRNS", [0, 7])])
        let rgb = SyntheticImages.png(
            width: 2, height: 1, colorType: 2,
            imageData: Self.imageData([1, 2, 3, 1, 2, 4], rowBytes: 6, bytesPerPixel: 3) { _ in 4 },
            before: [SyntheticImages.pngChunk("tRNS", [0, 1, 0, 2, 0, 3])])

        // When they are decoded
        let grayResult = try Self.decodeBothWays(gray).get()
        let rgbResult = try Self.decodeBothWays(rgb).get()

        // Then the key colour gets alpha 0 and every other pixel alpha 255
        #expect(grayResult.path == .fast)
        #expect(grayResult.image.pixels.row(0) == [7, 0, 8, 255, 7, 0])
        #expect(rgbResult.path == .fast)
        #expect(rgbResult.image.pixels.row(0) == [1, 2, 3, 0, 1, 2, 4, 255])
    }

    @Test("image data split over many IDAT chunks, with eXIf before it, takes the fast path")
    func splitImageDataAndEXIF() throws {
        // Given an RGBA image whose zlib stream is cut into 7-byte IDATs, and an eXIf saying orientation 6
        let (width, height) = (5, 3)
        var generator = Bytes(state: 99)
        let samples = generator.next(width * height * 4)
        let exif: [UInt8] = [0x4D, 0x4D, 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0]
        let png = SyntheticImages.png(
            width: width, height: height, colorType: 6,
            imageData: Self.imageData(samples, rowBytes: width * 4, bytesPerPixel: 4) { UInt8($0 % 5) },
            before: [SyntheticImages.pngChunk("eXIf", exif)], imageDataChunkSize: 7)

        // When it is decoded keeping the stored orientation
        var options = DecodingOptions()
        options.keepsStoredOrientation = true
        let (image, path) = try Self.decodeBothWays(png, options: options).get()

        // Then the fast path joined the chunks and read the orientation
        #expect(path == .fast)
        #expect(image.orientation == .right)
        #expect(image.pixels.withUnsafeBytes { Array($0) } == samples)
    }

    // MARK: What the fast path leaves to libpng

    /// Files the fast path must hand to libpng, named by what is unusual about them.
    static let unusual: [(String, [UInt8])] = {
        let rgba = [UInt8](repeating: 200, count: 4 * 4 * 4)
        let data = imageData(rgba, rowBytes: 16, bytesPerPixel: 4) { _ in 0 }
        func png(_ data: [UInt8], before: [[UInt8]] = [], after: [[UInt8]] = []) -> [UInt8] {
            SyntheticImages.png(width: 4, height: 4, colorType: 6, imageData: data, before: before, after: after)
        }
        var badCRC = SyntheticImages.pngChunk("tIME", [7, 234, 1, 1, 0, 0, 0])
        badCRC[badCRC.count - 1] ^= 1
        var badFilter = [UInt8](repeating: 0, count: 4 * 17)
        badFilter[17] = 5
        var missingIEND = png(data)
        missingIEND.removeLast(12)
        return [
            ("an ancillary chunk with a bad CRC", png(data, before: [badCRC])),
            ("bytes after the zlib stream", png(data + [0, 0, 0])),
            ("a zlib stream that ends early", png(Array(data.dropLast(10)))),
            (
                "a zlib stream that holds too many rows",
                png(imageData(rgba + rgba, rowBytes: 16, bytesPerPixel: 4) { _ in 0 })
            ),
            ("a filter type of 5", png(SyntheticImages.zlibStored(badFilter))),
            ("an unknown critical chunk", png(data, before: [SyntheticImages.pngChunk("ABCD", [1])])),
            ("a PLTE after the image data", png(data, after: [SyntheticImages.pngChunk("PLTE", [1, 2, 3])])),
            ("a tRNS in an image with alpha", png(data, before: [SyntheticImages.pngChunk("tRNS", [0, 1])])),
            ("no IEND", missingIEND),
            (
                "IDAT chunks interrupted",
                png(
                    data,
                    after: [
                        SyntheticImages.pngChunk("tIME", [7, 234, 1, 1, 0, 0, 0]),
                        SyntheticImages.pngChunk("IDAT", []),
                    ])
            ),
        ]
    }()

    @Test("unusual and damaged files go to libpng, which gives the same outcome", arguments: unusual.indices)
    func unusualFiles(index: Int) {
        // Given a file with something the fast path does not handle
        let (name, bytes) = Self.unusual[index]

        // When it is decoded, also with partial images allowed
        var partial = DecodingOptions()
        partial.allowsPartialImages = true
        for options in [DecodingOptions(), partial] {
            // Then libpng decoded it (or failed it), and both paths agree
            if case .success(let result) = Self.decodeBothWays(bytes, options: options) {
                #expect(result.path == .libpng, "\(name)")
            }
        }
    }

    // MARK: The corpus

    @Test("on every PNG of the corpus, the fast path and libpng agree", .requiresTestData)
    func corpusAgreement() throws {
        // Given every PNG file of the corpus, whatever its verdict
        let manifest = try TestData.manifest()
        var partial = DecodingOptions()
        partial.allowsPartialImages = true
        var fastCount = 0
        var pngCount = 0
        for entry in manifest.entries where entry.imageFormat == .png {
            let bytes = try manifest.bytes(of: entry)
            pngCount += 1
            // When each is decoded both ways, with and without partial images
            // Then both succeed with the same pixels or both fail alike
            if case .success(let result) = Self.decodeBothWays(bytes), result.path == .fast {
                fastCount += 1
            }
            _ = Self.decodeBothWays(bytes, options: partial)
        }
        // And the fast path took its share of them: the 8-bit, non-interlaced, intact files.
        #expect(pngCount == 605)
        #expect(fastCount == 211, "the fast path decoded \(fastCount) of \(pngCount) files")
    }
}
