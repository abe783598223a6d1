import OspreyCodecs
import OspreyTesting
import Testing

/// The coder seam: a registry of one's own with a coder for a format Osprey does not ship (PPM), and what the shared
/// registry holds.
@Suite struct ImageCoderRegistryTests {
    /// A registry with the built-in coders and PPM.
    static func withPPM() -> ImageCoderRegistry {
        let coders = ImageCoderRegistry()
        coders.register(PortablePixmapCoder() as any ImageDecoding)
        coders.register(PortablePixmapCoder() as any ImageEncoding)
        return coders
    }

    /// 3 × 2 RGB pixels, every byte different.
    static let samples: [UInt8] = (0..<18).map { UInt8($0 * 13) }
    static let ppm = Array("P6\n# made by hand\n3 2\n255\n".utf8) + samples

    @Test func theSharedRegistryHoldsTheBuiltInCodersAndNothingElse() {
        let shared = ImageCoderRegistry.shared
        #expect(shared.encodableFormats == [.jpeg, .png, .gif, .webp, .avif, .jxl])
        #expect(shared.decoders.map(\.format) == [.jpeg, .png, .gif, .webp, .avif, .heic, .jxl])
        // AVIF's: the ftyp box with a dozen compatible brands.
        #expect(shared.signatureLength == 64)
        #expect(shared.encodableFormat(named: "jpg") == .jpeg)
        #expect(shared.encodableFormat(named: "WEBP") == .webp)
        #expect(shared.encodableFormat(named: "ppm") == nil)
        #expect(ImageFormat(sniffing: Self.ppm) == .unknown)
        #expect(throws: CodecError.unsupportedFormat) { try ImageDecoder.decode(Self.ppm) }
        let image = Image(pixels: try! PixelBuffer(width: 1, height: 1, format: .rgb8))
        #expect(throws: CodecError.unsupportedFormat) { try ImageEncoder.encode(image, as: PortablePixmapCoder.format) }
    }

    @Test func aRegisteredCoderIsSniffedReadDecodedAndEncoded() throws {
        let coders = Self.withPPM()
        #expect(coders.format(of: Self.ppm) == PortablePixmapCoder.format)
        #expect(coders.encodableFormats.map(\.name) == ["jpeg", "png", "gif", "webp", "avif", "jxl", "ppm"])
        #expect(coders.format(of: try Fixtures.png()) == .png)

        let header = try ImageHeader(reading: Self.ppm, coders: coders)
        #expect(header == ImageHeader(format: PortablePixmapCoder.format, width: 3, height: 2))
        var options = DecodingOptions()
        options.coders = coders
        let estimate = try ImageDecoder.memoryEstimate(for: Self.ppm, options: options)
        #expect(estimate.imageBytes == 3 * 2 * 4 && estimate.frameCount == 1)

        let image = try ImageDecoder.decode(Self.ppm, options: options)
        #expect(image.sourceFormat == PortablePixmapCoder.format)
        #expect((image.width, image.height, image.pixelFormat) == (3, 2, .rgb8))
        #expect(image.pixels.row(0) + image.pixels.row(1) == Self.samples)

        var encoding = EncodingOptions()
        encoding.coders = coders
        let written = try ImageEncoder.encode(image, as: PortablePixmapCoder.format, options: encoding)
        #expect(written == Array("P6\n3 2\n255\n".utf8) + Self.samples)
        // And the other way: a PPM written as PNG reads back the same pixels.
        let png = try ImageEncoder.encode(image, as: .png, options: encoding)
        #expect(try ImageDecoder.decode(png).pixels == image.pixels)
    }

    @Test func aRegisteredDecoderIsHeldToTheLimitsBeforeItRuns() throws {
        var options = DecodingOptions()
        options.coders = Self.withPPM()
        options.limits.maxPixelCount = 5
        // The header says 3 × 2: refused from it, so the decoder never allocates.
        #expect(throws: CodecError.tooManyPixels(width: 3, height: 2, limit: 5)) {
            try ImageDecoder.decode(Self.ppm, options: options)
        }
        options.limits.maxPixelCount = 6
        #expect(throws: CodecError.truncated(format: PortablePixmapCoder.format)) {
            try ImageDecoder.decode(Self.ppm.dropLast(), options: options)
        }
        #expect(throws: CodecError.self) { try ImageDecoder.decode(Array("P6 3 2 65535 ".utf8), options: options) }
    }

    @Test(
        "a registered decoder's profile is converted to sRGB, and its orientation applied, as the built-ins'",
        .requiresTestData)
    func colourAndOrientationApplyToARegisteredDecoder() throws {
        let p3 = try #require(ColorProfile(embeddedIn: try TestData.bytes("valid/colour/P3-sRGB-color-bars.jpg")))
        let coders = ImageCoderRegistry()
        coders.register(TurnedDecoder(profile: p3) as any ImageDecoding)
        var options = DecodingOptions()
        options.coders = coders
        let upright = try ImageDecoder.decode(TurnedDecoder.signature, options: options)
        #expect((upright.width, upright.height, upright.orientation) == (1, 2, .up))
        #expect(upright.colorProfile == nil)
        // Display P3's orange is more saturated than sRGB's: in sRGB, more red and less blue.
        let converted = upright.pixels.row(0)
        #expect(converted[0] > 200 && converted[2] < 50, "\(converted)")
        #expect(upright.pixels.row(1) == converted)
        options.keepsStoredOrientation = true
        options.colorHandling = .keepProfile
        let stored = try ImageDecoder.decode(TurnedDecoder.signature, options: options)
        #expect((stored.width, stored.height, stored.orientation) == (2, 1, .right))
        #expect(stored.colorProfile == p3)
        #expect(stored.pixels.row(0) == TurnedDecoder.orange + TurnedDecoder.orange)
        options.colorHandling = .ignore
        #expect(try ImageDecoder.decode(TurnedDecoder.signature, options: options).colorProfile == nil)
    }

    @Test func aLaterRegistrationIsConsultedFirstAndCanReplaceABuiltInCoder() throws {
        let coders = ImageCoderRegistry()
        coders.register(FlatJPEGDecoder() as any ImageDecoding)
        var options = DecodingOptions()
        options.coders = coders
        let image = try ImageDecoder.decode(try Fixtures.jpeg(), options: options)
        #expect((image.width, image.height) == (1, 1))
        #expect(try ImageDecoder.decode(try Fixtures.jpeg()).width == 16)
        #expect(ImageCoderRegistry(builtIn: false).format(of: try Fixtures.jpeg()) == .unknown)
    }
}

/// Stored 2 × 1 Display P3 orange, to be turned a quarter clockwise, tagged with `profile`.
private struct TurnedDecoder: ImageDecoding {
    static let signature: [UInt8] = Array("TURN".utf8)
    static let orange: [UInt8] = [200, 100, 50]
    let profile: ColorProfile
    var format: ImageFormat { ImageFormat(name: "turned", mimeType: "image/x-turned", fileExtension: nil) }
    func recognizes(_ prefix: UnsafeRawBufferPointer) -> Bool { prefix.starts(with: Self.signature) }
    func header(of data: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader {
        ImageHeader(format: format, width: 2, height: 1, orientation: .right)
    }
    func decode(_ data: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        var image = Image(
            pixels: try PixelBuffer(width: 2, height: 1, format: .rgb8, bytes: Self.orange + Self.orange),
            orientation: .right, sourceFormat: format)
        image.colorProfile = profile
        return image
    }
}

/// Reads any JPEG as one gray pixel: a stand-in that replaces the built-in JPEG decoder.
private struct FlatJPEGDecoder: ImageDecoding {
    var format: ImageFormat { .jpeg }
    func recognizes(_ prefix: UnsafeRawBufferPointer) -> Bool { prefix.starts(with: [0xFF, 0xD8]) }
    func header(of data: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader {
        ImageHeader(format: .jpeg, width: 1, height: 1)
    }
    func decode(_ data: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        Image(pixels: try PixelBuffer(width: 1, height: 1, format: .gray8, bytes: [128]), sourceFormat: .jpeg)
    }
}

/// Small images made with the built-in encoders.
private enum Fixtures {
    static func jpeg() throws -> [UInt8] {
        try ImageEncoder.encode(Image(pixels: try PixelBuffer(width: 16, height: 8, format: .rgb8)), as: .jpeg)
    }

    static func png() throws -> [UInt8] {
        try ImageEncoder.encode(Image(pixels: try PixelBuffer(width: 4, height: 4, format: .rgba8)), as: .png)
    }
}
