import COspreyCodecShims
import OspreyCodecs
import OspreyTesting
import Testing

/// A sequential JPEG's scan is read by Osprey's own Huffman decoder, libjpeg doing the rest: the coefficients, and so
/// the pixels, must be exactly those of libjpeg's own decoder, for every sampling, scale and restart interval; a scan
/// that does not read cleanly is decoded again by libjpeg's decoder from the start, so that damaged files come out as
/// they always have (libjpeg's warnings, its zeros, its errors). libjpeg's decoder, asked for by the request, is the
/// control.
@Suite struct JPEGHuffmanTests {
    struct Decoded {
        let status: Int32
        let width: UInt32, height: UInt32
        let truncated: Int32
        let message: String
        let pixels: [UInt8]
    }

    /// `data` decoded by the shim at scale `numerator`/8 (the smallest scale at least that size), by Osprey's decoder
    /// or libjpeg's: the outcome, and the result's `ownHuffman` (1: Osprey's decoder read the scan; 2: it gave up and
    /// libjpeg's decoded the file again; 0: libjpeg's alone).
    static func decode(
        _ data: [UInt8], numerator: UInt32 = 8, libjpeg: Bool, allowPartial: Bool = false
    ) -> (
        Decoded, ownHuffman: Int32
    ) {
        var request = osprey_jpeg_decode_request()
        var header = osprey_jpeg_header()
        var message = [CChar](repeating: 0, count: Int(OSPREY_MESSAGE_CAPACITY))
        if data.withUnsafeBufferPointer({ osprey_jpeg_read_header($0.baseAddress, $0.count, &header, &message) }) == 0 {
            request.minWidth = UInt32((UInt64(header.width) * UInt64(numerator) + 7) / 8)
            request.minHeight = UInt32((UInt64(header.height) * UInt64(numerator) + 7) / 8)
        }
        request.maxPixels = 50_000_000
        request.maxMemory = 1 << 30
        request.maxScans = 1_000
        request.allowPartial = allowPartial ? 1 : 0
        request.libjpegHuffman = libjpeg ? 1 : 0
        var result = osprey_jpeg_decode_result()
        let status = data.withUnsafeBufferPointer { bytes in
            osprey_jpeg_decode(bytes.baseAddress, bytes.count, &request, &result, &message)
        }
        var pixels: [UInt8] = []
        if status == OSPREY_OK {
            let count = Int(result.bytesPerRow) * Int(result.height)
            pixels = Array(UnsafeBufferPointer(start: result.pixels, count: count))
            osprey_pixels_free(result.pixels, count)
        }
        let decoded = Decoded(
            status: status, width: result.width, height: result.height, truncated: result.truncated,
            message: String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
            pixels: pixels)
        return (decoded, result.ownHuffman)
    }

    /// `data` decoded both ways at `numerator`/8: Osprey's outcome must be libjpeg's. Returns which decoder read the
    /// scan (the result's `ownHuffman`).
    @discardableResult
    static func expectAlike(
        _ data: [UInt8], numerator: UInt32 = 8, allowPartial: Bool = false, _ label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Int32 {
        let (own, ownHuffman) = decode(data, numerator: numerator, libjpeg: false, allowPartial: allowPartial)
        let (control, controlOwn) = decode(data, numerator: numerator, libjpeg: true, allowPartial: allowPartial)
        #expect(controlOwn == 0, sourceLocation: sourceLocation)
        #expect(own.status == control.status, "\(label)", sourceLocation: sourceLocation)
        #expect(
            (own.width, own.height, own.truncated) == (control.width, control.height, control.truncated),
            "\(label)", sourceLocation: sourceLocation)
        #expect(own.message == control.message, "\(label)", sourceLocation: sourceLocation)
        // Where they differ, not the arrays (megabytes to print).
        if own.pixels != control.pixels {
            let difference = zip(own.pixels, control.pixels).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            Issue.record(
                "\(label): \(own.pixels.count) and \(control.pixels.count) bytes, first apart at \(difference ?? -1)",
                sourceLocation: sourceLocation)
        }
        return ownHuffman
    }

    /// A 333×250 pattern with detail in every block, as a JPEG made with `configure`: large coefficients at q95, runs
    /// of zeros at q50, both kinds of partial MCU at the edges.
    static func pattern(_ format: PixelFormat, configure: (inout EncodingOptions) -> Void = { _ in }) throws -> [UInt8]
    {
        try DCOnlyDecodeTests.pattern(format, configure: configure)
    }

    /// Where a JPEG's entropy-coded data starts: after its (first) SOS header.
    static func scanStart(_ data: [UInt8]) -> Int? {
        var position = 2
        while position + 4 <= data.count, data[position] == 0xFF {
            let length = Int(data[position + 2]) << 8 | Int(data[position + 3])
            if data[position + 1] == 0xDA { return position + 2 + length }
            position += 2 + length
        }
        return nil
    }

    @Test(
        "Osprey's decoder reads a sequential scan to libjpeg's coefficients at every scale",
        arguments: [
            (PixelFormat.rgb8, EncodingOptions.ChromaSubsampling.yuv444), (.rgb8, .yuv422), (.rgb8, .yuv420),
            (.gray8, .automatic),
        ])
    func everySamplingAndScale(format: PixelFormat, subsampling: EncodingOptions.ChromaSubsampling) throws {
        for quality in [50, 95] {
            let data = try Self.pattern(format) {
                $0.chromaSubsampling = subsampling
                $0.quality = quality
            }
            for numerator: UInt32 in [8, 5, 4, 2, 1] {
                let own = Self.expectAlike(data, numerator: numerator, "q\(quality) \(numerator)/8")
                // At 1/8 a file whose every component is scaled by a 1×1 IDCT is made from its DC values without
                // libjpeg (no scan for either decoder); 4:2:0 at 1/8 has libjpeg decode a DC-only copy, which Osprey's
                // decoder reads.
                let direct = numerator == 1 && subsampling != .yuv420
                #expect(own == (direct ? 0 : 1), "q\(quality) \(numerator)/8")
            }
        }
    }

    /// Bytes taken out of the middle of the scan: the data ends before its last MCU (libjpeg warns and fills the rest
    /// with zeros). Osprey's decoder finds it past the data, gives up, and the file is decoded again by libjpeg's.
    @Test func aScanThatEndsEarlyIsReadByLibjpegAsItAlwaysWas() throws {
        let data = try Self.pattern(.rgb8) { $0.chromaSubsampling = .yuv420 }
        let start = try #require(Self.scanStart(data))
        var damaged = data
        damaged.removeSubrange((start + 500)..<(start + 1_500))
        #expect(Self.expectAlike(damaged, "1,000 bytes gone") == 2)
        #expect(Self.decode(damaged, libjpeg: false).0.status == OSPREY_OK)
        // Bytes changed in place instead: the codes after them read out of step with the blocks, and mostly the scan
        // no longer ends where its data does (or it falls back into step, and both decoders read the same codes).
        let paths = [40, 700, 2_000].map { offset in
            var changed = data
            for i in 0..<16 { changed[start + offset + i] = UInt8(truncatingIfNeeded: 37 * i + 11) }
            return Self.expectAlike(changed, "16 bytes changed at \(offset)")
        }
        #expect(paths.contains(2))
    }

    /// A file cut inside its scan has no marker after it: libjpeg's decoder reads it, and reports the truncation.
    @Test func aTruncatedScanIsLeftToLibjpeg() throws {
        let data = try Self.pattern(.rgb8)
        let cut = Array(data.prefix(data.count * 2 / 3))
        #expect(Self.expectAlike(cut, "cut") == 0)
        #expect(Self.decode(cut, libjpeg: false).0.status == OSPREY_TRUNCATED)
        #expect(Self.expectAlike(cut, allowPartial: true, "cut, partial allowed") == 0)
        #expect(Self.decode(cut, libjpeg: false, allowPartial: true).0.truncated == 1)
    }

    /// Restart markers where the frame asks for none, or out of order: libjpeg resynchronizes (with warnings), and
    /// Osprey's decoder is not used.
    @Test func unexpectedRestartMarkersAreLeftToLibjpeg() throws {
        let data = try Self.pattern(.gray8)
        let start = try #require(Self.scanStart(data))
        // A restart marker in place of two bytes of data, in a file without a restart interval.
        var marked = data
        let at = try #require((start + 600..<data.count - 2).first { data[$0] != 0xFF && data[$0 + 1] != 0xFF })
        marked[at] = 0xFF
        marked[at + 1] = 0xD0
        #expect(Self.expectAlike(marked, "RST0 without a restart interval") == 0)
    }

    /// Every JPEG of the corpus — valid, damaged and hostile, restart intervals and odd samplings among them — comes
    /// out of a decode by Osprey's decoder as out of libjpeg's, at full size and at 1/4; the count of files Osprey's
    /// decoder read keeps the comparison from passing by never taking it.
    @Test("every JPEG of the corpus decodes alike with either Huffman decoder", .requiresTestData)
    func corpus() throws {
        let manifest = try TestData.manifest()
        var read = (full: 0, quarter: 0, restartIntervals: 0, gaveUp: 0)
        for entry in manifest.entries where entry.imageFormat == .jpeg {
            let data = try manifest.bytes(of: entry)
            let restarts = zip(data, data.dropFirst()).contains { $0 == 0xFF && $1 == 0xDD }
            switch Self.expectAlike(data, numerator: 8, entry.path) {
            case 1:
                read.full += 1
                read.restartIntervals += restarts ? 1 : 0
            case 2: read.gaveUp += 1
            default: break
            }
            if Self.expectAlike(data, numerator: 2, "\(entry.path) at 1/4") == 1 { read.quarter += 1 }
        }
        #expect(read.full >= 110)  // 119 on 2026-11-30, every sequential file that decodes cleanly
        #expect(read.quarter >= 110)
        #expect(read.restartIntervals >= 15)  // 20
        #expect(read.gaveUp >= 25)  // 32 damaged files: libjpeg's decoder read them again
    }
}
