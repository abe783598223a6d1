/// The coders Osprey ships, registered in every registry made with the built-in coders.
///
/// They do more than ``ImageDecoding`` asks, because they can do it cheaper inside the decode: they check the limits
/// at the size they will really decode at (a JPEG scaled by its decoder), convert colours as the rows arrive, and turn
/// the image upright themselves, so ``ImageDecoder`` leaves their images as they are.
protocol BuiltInCoder: ImageDecoding, ImageEncoding {}

enum BuiltInCoders {
    static let decoders: [any ImageDecoding] = [
        JPEGCoder(), PNGCoder(), GIFCoder(), WebPCoder(), AVIFCoder(), HEIFCoder(), JXLCoder(),
    ]
    static let encoders: [any ImageEncoding] = [
        JPEGCoder(), PNGCoder(), GIFCoder(), WebPCoder(), AVIFCoder(), JXLCoder(),
    ]
}

extension BuiltInCoder {
    /// The memory decoding `data` as `options` ask takes, from its header: what a budget reserves first.
    public func memoryEstimate(
        _ data: UnsafeRawBufferPointer, options: DecodingOptions
    ) throws(CodecError) -> DecodingEstimate {
        try ImageDecoder.builtInMemoryEstimate(data, header: header(of: data), options: options).get()
    }

    /// The image `decode` made, with the file's EXIF and XMP when the options read metadata.
    func withMetadata(_ image: Image, from data: UnsafeRawBufferPointer, options: DecodingOptions) -> Image {
        guard options.readsMetadata else { return image }
        var image = image
        image.metadata = ImageMetadata.embedded(in: data, format: format)
        return image
    }

    /// `encoded` with the profile and metadata `options` keep of `image` in this format's containers.
    func withContainerMetadata(
        _ encoded: [UInt8], of image: Image, options: EncodingOptions
    ) throws(CodecError) -> [UInt8] {
        try ImageEncoder.containerMetadata(for: image, format: format, options: options).adding(
            to: encoded, format: format)
    }
}

/// JPEG through libjpeg-turbo: baseline, progressive, arithmetic, grayscale, CMYK/YCCK; DCT scaling on decode;
/// TurboJPEG for encoding (alpha composited over ``EncodingOptions/background``), the profile in `APP2` and the kept
/// metadata in `APP1`. Recognised by `FF D8`, the start-of-image marker (nearly every file goes on with `FF`, but
/// libjpeg skips junk before the next marker, and real files have it).
public struct JPEGCoder: BuiltInCoder {
    /// Makes the coder; it holds no state.
    public init() {}
    /// The format it reads (and writes, if it does).
    public var format: ImageFormat { .jpeg }

    /// Whether `data` begins with this format's signature.
    public func recognizes(_ b: UnsafeRawBufferPointer) -> Bool {
        b.count >= 2 && b[0] == 0xFF && b[1] == 0xD8
    }

    /// What `data`'s header says (format, size, frames, orientation), read without decoding pixels.
    public func header(of data: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader {
        try ImageHeader.readJPEG(data)
    }

    /// Decodes `data` as `options` ask (size, limits, frames, colour handling).
    public func decode(_ data: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        withMetadata(try JPEGDecoder.decode(data, options: options), from: data, options: options)
    }

    /// Encodes `image` in this format as `options` ask (quality, effort, metadata).
    public func encode(_ image: Image, options: EncodingOptions) throws(CodecError) -> [UInt8] {
        try withContainerMetadata(JPEGEncoder.encode(image.pixels, options: options), of: image, options: options)
    }
}

/// PNG through libpng (and libdeflate for intact 8-bit files); an APNG decodes to its default image. Encodes the
/// first frame, with `iCCP`, `eXIf` and XMP `iTXt` as kept. Recognised by its 8-byte signature.
public struct PNGCoder: BuiltInCoder {
    /// Makes the coder; it holds no state.
    public init() {}
    /// The format it reads (and writes, if it does).
    public var format: ImageFormat { .png }

    /// Whether `data` begins with this format's signature.
    public func recognizes(_ b: UnsafeRawBufferPointer) -> Bool {
        b.count >= 8 && b[0] == 0x89 && b[1] == 0x50 && b[2] == 0x4E && b[3] == 0x47 && b[4] == 0x0D
            && b[5] == 0x0A && b[6] == 0x1A && b[7] == 0x0A
    }

    /// What `data`'s header says (format, size, frames, orientation), read without decoding pixels.
    public func header(of data: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader {
        try ImageHeader.readPNG(data)
    }

    /// Decodes `data` as `options` ask (size, limits, frames, colour handling).
    public func decode(_ data: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        withMetadata(try PNGDecoder.decode(data, options: options), from: data, options: options)
    }

    /// Encodes `image` in this format as `options` ask (quality, effort, metadata).
    public func encode(_ image: Image, options: EncodingOptions) throws(CodecError) -> [UInt8] {
        var written = image
        if options.palettePNGQuality != nil, !image.pixelFormat.hasColor {
            // A palette holds colours: gray is widened first (a gray colour profile is then left out, as WebP does).
            let colour = try image.pixels.converted(to: image.pixelFormat.hasAlpha ? .rgba8 : .rgb8)
            written = Image(pixels: colour, orientation: image.orientation, sourceFormat: image.sourceFormat)
            written.colorProfile = image.colorProfile
            written.metadata = image.metadata
        }
        return try withContainerMetadata(
            PNGEncoder.encode(written.pixels, options: options), of: written, options: options)
    }
}

/// GIF through giflib: every frame composited; encoded with a palette per frame, every frame and the loop count kept
/// (no profile or metadata: GIF has no place for them). Recognised by `GIF87a` or `GIF89a`.
public struct GIFCoder: BuiltInCoder {
    /// Makes the coder; it holds no state.
    public init() {}
    /// The format it reads (and writes, if it does).
    public var format: ImageFormat { .gif }

    /// Whether `data` begins with this format's signature.
    public func recognizes(_ b: UnsafeRawBufferPointer) -> Bool {
        b.count >= 6 && b[0] == 0x47 && b[1] == 0x49 && b[2] == 0x46 && b[3] == 0x38
            && (b[4] == 0x37 || b[4] == 0x39) && b[5] == 0x61
    }

    /// What `data`'s header says (format, size, frames, orientation), read without decoding pixels.
    public func header(of data: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader {
        try ImageHeader.readGIF(data)
    }

    /// Decodes `data` as `options` ask (size, limits, frames, colour handling).
    public func decode(_ data: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        withMetadata(try GIFDecoder.decode(data, options: options), from: data, options: options)
    }

    /// Encodes `image` in this format as `options` ask (quality, effort, metadata).
    public func encode(_ image: Image, options: EncodingOptions) throws(CodecError) -> [UInt8] {
        try GIFEncoder.encode(image.frames, loopCount: image.loopCount)
    }
}

/// WebP through libwebp: stills (scaled while decoding), animations; lossy or lossless encoding, animations kept,
/// `ICCP`, `EXIF` and `XMP ` chunks as kept. Recognised by `RIFF`, four bytes of length, `WEBP`.
public struct WebPCoder: BuiltInCoder {
    /// Makes the coder; it holds no state.
    public init() {}
    /// The format it reads (and writes, if it does).
    public var format: ImageFormat { .webp }

    /// Whether `data` begins with this format's signature.
    public func recognizes(_ b: UnsafeRawBufferPointer) -> Bool {
        b.count >= 12 && b[0] == 0x52 && b[1] == 0x49 && b[2] == 0x46 && b[3] == 0x46 && b[8] == 0x57
            && b[9] == 0x45 && b[10] == 0x42 && b[11] == 0x50
    }

    /// What `data`'s header says (format, size, frames, orientation), read without decoding pixels.
    public func header(of data: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader {
        try ImageHeader.readWebP(data)
    }

    /// Decodes `data` as `options` ask (size, limits, frames, colour handling).
    public func decode(_ data: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        withMetadata(try WebPDecoder.decode(data, options: options), from: data, options: options)
    }

    /// Encodes `image` in this format as `options` ask (quality, effort, metadata).
    public func encode(_ image: Image, options: EncodingOptions) throws(CodecError) -> [UInt8] {
        let encoded = try WebPEncoder.encode(image.frames, loopCount: image.loopCount, options: options)
        return try withContainerMetadata(encoded, of: image, options: options)
    }
}
