internal import COspreyLibraryLoader

/// AVIF through libavif and libaom: 8-bit stills and sequences, alpha, chroma subsampling, lossless; the profile as a
/// `colr` ICC box (or `nclx` sRGB without one), the kept EXIF and XMP as items.
enum AVIFEncoder {
    /// The media timescale of sequences: durations are written in milliseconds.
    static let timescale: UInt64 = 1_000

    static func encode(
        _ image: Image, metadata: ContainerMetadata, options: EncodingOptions
    ) throws(CodecError) -> [UInt8] {
        let avif = try SharedLibraries.avif
        guard let encoder = avif.avifEncoderCreate() else {
            throw .encodingFailed(format: .avif, reason: "libavif could not make an encoder")
        }
        defer { avif.avifEncoderDestroy(encoder) }
        let lossless = options.isLossless
        let quantizer = lossless ? Int32(AVIF_QUANTIZER_LOSSLESS) : quantizer(forQuality: options.quality)
        encoder.pointee.minQuantizer = quantizer
        encoder.pointee.maxQuantizer = quantizer
        encoder.pointee.minQuantizerAlpha = quantizer
        encoder.pointee.maxQuantizerAlpha = quantizer
        encoder.pointee.speed = Int32(min(max(options.avifSpeed, Int(AVIF_SPEED_SLOWEST)), Int(AVIF_SPEED_FASTEST)))
        // One thread: the manager's processing pool already runs an encode per core.
        encoder.pointee.maxThreads = 1
        encoder.pointee.timescale = timescale
        let frames = image.frames
        for (index, frame) in frames.enumerated() {
            let planes = try yuvImage(of: frame.pixels, metadata: index == 0 ? metadata : nil, options: options)
            defer { avif.avifImageDestroy(planes) }
            let milliseconds = max(
                frame.duration.components.seconds * 1_000
                    + frame.duration.components.attoseconds / 1_000_000_000_000_000, 1)
            let flags = frames.count == 1 ? UInt32(AVIF_ADD_IMAGE_FLAG_SINGLE.rawValue) : 0
            try check(
                avif.avifEncoderAddImage(encoder, planes, UInt64(milliseconds), flags), encoder,
                what: "frame \(index + 1)")
        }
        var output = avifRWData()
        defer { avif.avifRWDataFree(&output) }
        try check(avif.avifEncoderFinish(encoder, &output), encoder, what: "the file")
        guard let data = output.data else { throw .encodingFailed(format: .avif, reason: "libavif wrote nothing") }
        return Array(UnsafeBufferPointer(start: data, count: output.size))
    }

    /// libavif's quantizer (0 best … 63 worst) for a quality of 0…100, as libavif 1.x maps its own `quality`.
    static func quantizer(forQuality quality: Int) -> Int32 {
        let quality = min(max(quality, 0), 100)
        return Int32(((100 - quality) * 63 + 50) / 100)
    }

    /// `pixels` as libavif's YUV planes (the caller destroys them): 4:4:4 with the identity matrix when lossless
    /// (RGB kept exactly), else BT.601 at the subsampling asked for; the profile and metadata on the first frame.
    private static func yuvImage(
        of pixels: PixelBuffer, metadata: ContainerMetadata?, options: EncodingOptions
    ) throws(CodecError) -> UnsafeMutablePointer<avifImage> {
        let avif = try SharedLibraries.avif
        let hasAlpha = pixels.format.hasAlpha
        let source = try pixels.converted(to: hasAlpha ? .rgba8 : .rgb8)
        let format: avifPixelFormat =
            if options.isLossless {
                AVIF_PIXEL_FORMAT_YUV444
            } else {
                switch options.chromaSubsampling {
                case .yuv444: AVIF_PIXEL_FORMAT_YUV444
                case .yuv422: AVIF_PIXEL_FORMAT_YUV422
                case .yuv420: AVIF_PIXEL_FORMAT_YUV420
                case .automatic: options.quality >= 90 ? AVIF_PIXEL_FORMAT_YUV444 : AVIF_PIXEL_FORMAT_YUV420
                }
            }
        guard let image = avif.avifImageCreate(UInt32(source.width), UInt32(source.height), 8, format) else {
            throw .encodingFailed(format: .avif, reason: "libavif could not make an image")
        }
        image.pointee.yuvRange = AVIF_RANGE_FULL
        image.pointee.colorPrimaries = UInt16(AVIF_COLOR_PRIMARIES_BT709)
        image.pointee.transferCharacteristics = UInt16(AVIF_TRANSFER_CHARACTERISTICS_SRGB)
        image.pointee.matrixCoefficients = UInt16(
            options.isLossless ? AVIF_MATRIX_COEFFICIENTS_IDENTITY : AVIF_MATRIX_COEFFICIENTS_BT601)
        if let metadata {
            if let profile = metadata.profile { avif.avifImageSetProfileICC(image, profile, profile.count) }
            if let exif = metadata.exif { avif.avifImageSetMetadataExif(image, exif, exif.count) }
            if let xmp = metadata.xmp { avif.avifImageSetMetadataXMP(image, xmp, xmp.count) }
        }
        let result = source.withUnsafeBytes { bytes -> avifResult in
            var rgb = avifRGBImage()
            avif.avifRGBImageSetDefaults(&rgb, image)
            rgb.depth = 8
            rgb.format = hasAlpha ? AVIF_RGB_FORMAT_RGBA : AVIF_RGB_FORMAT_RGB
            rgb.alphaPremultiplied = 0
            // libavif reads the RGB pixels only; its struct has no const pointer for them.
            rgb.pixels = UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self))
            rgb.rowBytes = UInt32(source.bytesPerRow)
            return avif.avifImageRGBToYUV(image, &rgb)
        }
        guard result == AVIF_RESULT_OK else {
            avif.avifImageDestroy(image)
            throw .encodingFailed(
                format: .avif, reason: "RGB to YUV: " + avif.describe(result))
        }
        return image
    }

    private static func check(
        _ result: avifResult, _ encoder: UnsafeMutablePointer<avifEncoder>, what: String
    ) throws(CodecError) {
        let avif = try SharedLibraries.avif
        guard result != AVIF_RESULT_OK else { return }
        let detail = encoder.pointee.diag.message
        throw .encodingFailed(
            format: .avif,
            reason: "\(what): " + avif.describe(result) + (detail.isEmpty ? "" : ": \(detail)"))
    }
}
