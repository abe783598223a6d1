import COspreyCodecShims
import OspreyCodecs
import OspreyTesting
import Testing

/// Decoding behaviour on images made at test time (no corpus needed).
@Suite struct ImageDecoderTests {
    @Test func decodesAPNGToItsExactPixels() throws {
        var rgba: [UInt8] = []
        for index in 0..<15 {
            rgba += [UInt8(index * 10), 200, UInt8(255 - index), UInt8(index * 17)]
        }
        let image = try ImageDecoder.decode(SyntheticImages.png(width: 5, height: 3, rgba: rgba))
        #expect(image.width == 5 && image.height == 3)
        #expect(image.pixelFormat == PixelFormat.rgba8)
        #expect(image.sourceFormat == .png)
        #expect((0..<3).flatMap { image.pixels.row($0) } == rgba)
    }

    @Test func refusesAnImageOverThePixelLimitBeforeDecoding() throws {
        var options = DecodingOptions()
        options.limits.maxPixelCount = 999
        #expect(throws: CodecError.tooManyPixels(width: 100, height: 10, limit: 999)) {
            try ImageDecoder.decode(SyntheticImages.png(width: 100, height: 10), options: options)
        }
        #expect(throws: CodecError.tooManyPixels(width: 2000, height: 2000, limit: 999)) {
            try ImageDecoder.decode(SyntheticImages.webpLosslessHeader(width: 2000, height: 2000), options: options)
        }
        #expect(throws: CodecError.tooManyPixels(width: 1000, height: 1000, limit: 999)) {
            try ImageDecoder.decode(SyntheticImages.gifHeader(width: 1000, height: 1000), options: options)
        }
    }

    @Test func theSourceLimitAppliesToTheDeclaredSizeAtEveryScaleAndInEveryFormat() throws {
        // 300 × 200 declared; a JPEG decoded at 1/8 would be 38 × 25, under both limits.
        let pixels = try PixelBuffer(
            width: 300, height: 200, format: .rgb8, bytes: [UInt8](repeating: 120, count: 300 * 200 * 3))
        let image = Image(pixels: pixels)
        var options = DecodingOptions()
        options.limits.maxSourcePixelCount = 59_999
        options.limits.maxPixelCount = 59_999
        for format in [ImageFormat.jpeg, .png, .gif, .webp] {
            let bytes = try ImageEncoder.encode(image, as: format)
            for target in [nil, ImageSize(width: 1, height: 1)] {
                var scaled = options
                scaled.targetSize = target
                scaled.pixelBudget = target.map { _ in 100 }
                #expect(throws: CodecError.tooManyPixels(width: 300, height: 200, limit: 59_999), "\(format)") {
                    try ImageDecoder.decode(bytes, options: scaled)
                }
            }
            // At the limit, it decodes.
            options.limits.maxSourcePixelCount = 60_000
            options.limits.maxPixelCount = 60_000
            #expect(try ImageDecoder.decode(bytes, options: options).width == 300)
            options.limits.maxSourcePixelCount = 59_999
            options.limits.maxPixelCount = 59_999
        }
        // Without a source limit, a JPEG scaled under the decoded limit decodes: that limit counts what is allocated.
        var eighth = DecodingOptions()
        eighth.limits.maxPixelCount = 59_999
        eighth.targetSize = ImageSize(width: 1, height: 1)
        let jpeg = try ImageEncoder.encode(image, as: .jpeg)
        #expect(try ImageDecoder.decode(jpeg, options: eighth).width == 38)
    }

    @Test func aTruncatedPNGIsAnErrorUnlessPartialImagesAreAllowed() throws {
        let whole = SyntheticImages.png(width: 64, height: 64)
        let cut = Array(whole.prefix(whole.count / 2))
        #expect(throws: CodecError.truncated(format: .png)) { try ImageDecoder.decode(cut) }

        var options = DecodingOptions()
        options.allowsPartialImages = true
        let partial = try ImageDecoder.decode(cut, options: options)
        let complete = try ImageDecoder.decode(whole)
        #expect(partial.width == 64 && partial.height == 64)
        // The rows that arrived are exact; the last ones never did and are zero.
        #expect(partial.pixels.row(0) == complete.pixels.row(0))
        #expect(partial.pixels.row(63).allSatisfy { $0 == 0 })
    }

    @Test func headerOnlyFilesAreErrors() {
        for bytes in [
            SyntheticImages.jpegHeader(width: 8, height: 8), SyntheticImages.gifHeader(width: 8, height: 8),
            SyntheticImages.webpLosslessHeader(width: 8, height: 8),
        ] {
            #expect(throws: CodecError.self) { try ImageDecoder.decode(bytes) }
        }
    }

    @Test func unknownDataIsUnsupported() {
        #expect(throws: CodecError.unsupportedFormat) { try ImageDecoder.decode(Array("GIF? no".utf8)) }
        #expect(throws: CodecError.unsupportedFormat) { try ImageDecoder.decode([UInt8]()) }
    }
}

/// A JPEG decoded at 1/8 reads only the DC coefficients of the components a 1×1 IDCT scales (their AC coefficients
/// cannot change it): a progressive file without its AC scans, a sequential one with those blocks cut to their DC
/// difference. The pixels must be exactly those of the full decoding path; a partial decode reads the file as it is,
/// so it is the control.
@Suite struct DCOnlyDecodeTests {
    static func decodeBothWays(_ data: [UInt8]) throws -> (dcOnly: Image, allCoefficients: Image) {
        var eighth = DecodingOptions()
        eighth.targetSize = ImageSize(width: 1, height: 1)
        var control = eighth
        control.allowsPartialImages = true
        return (try ImageDecoder.decode(data, options: eighth), try ImageDecoder.decode(data, options: control))
    }

    /// How the decoder's 1/8 decode of `data` read the DC coefficients (asked of the shim itself: the path is not
    /// visible from the pixels, which is the point): 1, libjpeg decoded a DC-only copy; 2, the DC image was read
    /// straight; 0, neither.
    static func dcOnlyPath(_ data: [UInt8]) -> Int32 {
        let (status, result) = decodeAtOneEighth(data)
        return status == OSPREY_OK ? result.readDCOnly : 0
    }

    /// `data` decoded at 1/8 by the shim (the pixels freed): its status and result.
    static func decodeAtOneEighth(_ data: [UInt8], maxPixels: UInt64 = 0) -> (Int32, osprey_jpeg_decode_result) {
        var request = osprey_jpeg_decode_request()
        request.minWidth = 1
        request.minHeight = 1
        request.maxPixels = maxPixels
        var result = osprey_jpeg_decode_result()
        var message = [CChar](repeating: 0, count: Int(OSPREY_MESSAGE_CAPACITY))
        let status = data.withUnsafeBufferPointer { bytes in
            osprey_jpeg_decode(bytes.baseAddress, bytes.count, &request, &result, &message)
        }
        if status == OSPREY_OK {
            osprey_pixels_free(result.pixels, Int(result.bytesPerRow) * Int(result.height))
        }
        return (status, result)
    }

    /// A 333×250 pattern with detail in every block, as a JPEG made with `configure`.
    static func pattern(_ format: PixelFormat, configure: (inout EncodingOptions) -> Void) throws -> [UInt8] {
        var pixels = try PixelBuffer(width: 333, height: 250, format: format)
        let channels = format.bytesPerPixel
        pixels.withUnsafeMutableBytes { bytes in
            for i in 0..<bytes.count {
                bytes[i] = UInt8(truncatingIfNeeded: (i / channels) % 333 * 3 + i / 999 + i % channels * 50)
            }
        }
        var options = EncodingOptions()
        configure(&options)
        return try ImageEncoder.encode(Image(pixels: pixels), as: .jpeg, options: options)
    }

    @Test("a 1/8 decode of a progressive JPEG equals the all-scans decode", arguments: [PixelFormat.rgb8, .gray8])
    func progressive(format: PixelFormat) throws {
        let data = try Self.pattern(format) { $0.isProgressive = true }
        let (dcOnly, allCoefficients) = try Self.decodeBothWays(data)
        #expect((dcOnly.width, dcOnly.height) == (42, 32))
        #expect(dcOnly.pixels == allCoefficients.pixels)
        #expect(Self.dcOnlyPath(data) == 1)
    }

    /// Every sampling: at 4:4:4, 4:2:2 (whose chroma is upsampled at 1/8, not scaled by a larger IDCT) and in gray
    /// every component is scaled by a 1×1 IDCT, and the DC image is read straight; at 4:2:0 libjpeg decodes a copy
    /// whose luma blocks are cut to their DC difference and whose chroma blocks are copied bit for bit.
    @Test(
        "a 1/8 decode of a sequential JPEG equals the full decode",
        arguments: [
            (PixelFormat.rgb8, EncodingOptions.ChromaSubsampling.yuv444, Int32(2)), (.rgb8, .yuv422, 2),
            (.rgb8, .yuv420, 1), (.gray8, .automatic, 2),
        ])
    func sequential(format: PixelFormat, subsampling: EncodingOptions.ChromaSubsampling, path: Int32) throws {
        for quality in [50, 95] {
            let data = try Self.pattern(format) {
                $0.chromaSubsampling = subsampling
                $0.quality = quality
            }
            let (dcOnly, allCoefficients) = try Self.decodeBothWays(data)
            #expect((dcOnly.width, dcOnly.height) == (42, 32))
            #expect(dcOnly.pixels == allCoefficients.pixels, "q\(quality)")
            let taken = Self.dcOnlyPath(data)
            #expect(taken == path, "q\(quality)")
        }
    }

    /// An output over the pixel limit is refused before the file's scan is read for its DC coefficients (a small file
    /// can hold a very large image: the walk costs time in proportion to its blocks).
    @Test(arguments: [EncodingOptions.ChromaSubsampling.yuv444, .yuv420])
    func anOutputOverThePixelLimitIsRefusedBeforeTheScanIsRead(subsampling: EncodingOptions.ChromaSubsampling) throws {
        let data = try Self.pattern(.rgb8) { $0.chromaSubsampling = subsampling }
        let (status, result) = Self.decodeAtOneEighth(data, maxPixels: 42 * 32 - 1)
        #expect(status == OSPREY_LIMIT_EXCEEDED)
        #expect((result.width, result.height) == (42, 32))
        #expect(result.readDCOnly == 0)
    }

    /// A file cut inside its scan is decoded as it is (libjpeg reports the truncation), not rewritten.
    @Test func aTruncatedSequentialFileIsNotRewritten() throws {
        let data = try Self.pattern(.rgb8) { $0.chromaSubsampling = .yuv420 }
        let cut = Array(data.prefix(data.count * 2 / 3))
        #expect(Self.dcOnlyPath(cut) == 0)
        var eighth = DecodingOptions()
        eighth.targetSize = ImageSize(width: 1, height: 1)
        #expect(throws: CodecError.truncated(format: .jpeg)) { try ImageDecoder.decode(cut, options: eighth) }
    }

    /// Corpus files of every kind, restart intervals, odd sampling and unusual tables among them; the count of files
    /// that took each path keeps the comparison from passing by never taking one.
    @Test("every JPEG of the corpus decodes alike at 1/8 either way", .requiresTestData)
    func corpus() throws {
        let manifest = try TestData.manifest()
        var checked = (progressive: 0, sequentialCopy: 0, sequentialDirect: 0)
        for entry in manifest.entries where entry.imageFormat == .jpeg && entry.expected == .decodeOK {
            let data = try manifest.bytes(of: entry)
            guard let (dcOnly, allCoefficients) = try? Self.decodeBothWays(data) else { continue }
            #expect(dcOnly.pixels == allCoefficients.pixels, "\(entry.path)")
            // A progressive frame header (SOF2) or not.
            let progressive = zip(data, data.dropFirst()).contains { $0 == 0xFF && $1 == 0xC2 }
            switch (Self.dcOnlyPath(data), progressive) {
            case (1, true): checked.progressive += 1
            case (1, false): checked.sequentialCopy += 1
            case (2, _): checked.sequentialDirect += 1
            default: break
            }
        }
        #expect(checked.progressive >= 5)
        #expect(checked.sequentialCopy >= 60)
        #expect(checked.sequentialDirect >= 25)
    }
}

/// A progressive (or multi-scan) JPEG keeps every coefficient of the image while its scans arrive; Osprey gives
/// libjpeg that memory from its recycling pool, prefaulted, and checks it against the decoder memory limit first.
@Suite struct JPEGCoefficientMemoryTests {
    /// `width` × `height` pixels of a pattern with detail in every block (so AC coefficients are not zero).
    static func pattern(width: Int, height: Int, seed: Int) throws -> Image {
        var pixels = try PixelBuffer(width: width, height: height, format: .rgb8)
        pixels.withUnsafeMutableBytes { bytes in
            for i in 0..<bytes.count {
                let pixel = i / 3
                bytes[i] = UInt8(truncatingIfNeeded: (pixel % width) * (seed + 3) ^ (pixel / width) * 7 + i % 3 * 80)
            }
        }
        return Image(pixels: pixels)
    }

    @Test("a progressive JPEG decoded into coefficient memory another decode left behind equals its baseline twin")
    func recycledCoefficientsAreCleared() throws {
        // 1,600 × 1,200 at 4:2:0: 5.8 MB of coefficients, above the 4 MiB from which buffers are recycled. The
        // same quantized coefficients in one scan (baseline) or many (progressive) decode to the same pixels, and
        // a baseline decode needs no coefficient buffer: the twin is the reference.
        var progressive = EncodingOptions()
        progressive.isProgressive = true
        let other = try ImageEncoder.encode(
            Self.pattern(width: 1_600, height: 1_200, seed: 1), as: .jpeg,
            options: progressive)
        let target = try Self.pattern(width: 1_600, height: 1_200, seed: 2)
        let baseline = try ImageDecoder.decode(ImageEncoder.encode(target, as: .jpeg))
        let progressiveData = try ImageEncoder.encode(target, as: .jpeg, options: progressive)
        for _ in 0..<3 {
            // The other image's coefficients, all but zero, go back to the pool: the next decode of this size
            // takes them, and would see them if the buffer were not cleared (a progressive scan adds to what is
            // there).
            _ = try ImageDecoder.decode(other)
            #expect(try ImageDecoder.decode(progressiveData).pixels == baseline.pixels)
        }
    }

    @Test("a progressive JPEG whose coefficients would pass the decoder memory limit is refused before allocating")
    func coefficientsOverTheLimit() throws {
        // 60,000 × 60,000 progressive, grey: 7.2 GB of coefficients. Decoded at 1/8 (7,500 × 7,500 pixels, under the
        // pixel limit), the limit on libjpeg's memory is 8 bytes per allowed pixel: 800 MB.
        var header = SyntheticImages.jpegHeader(width: 60_000, height: 60_000)
        header[3] = 0xC2  // SOF0 → SOF2: progressive
        var options = DecodingOptions()
        options.targetSize = ImageSize(width: 1, height: 1)
        let error = #expect(throws: CodecError.self) { try ImageDecoder.decode(header, options: options) }
        guard case .limitExceeded(.jpeg, let reason) = error else {
            Issue.record("expected the decoder memory limit, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("coefficients") && reason.contains("800000000"))
    }
}
