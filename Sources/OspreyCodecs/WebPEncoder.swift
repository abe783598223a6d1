internal import COspreyLibraryLoader

/// WebP through libwebp's advanced API: lossy at a quality, or lossless and exact (transparent pixels keep their
/// colour, so a round trip is bit-exact); animations through WebPAnimEncoder.
enum WebPEncoder {
    /// WebP's largest width or height.
    static let maxDimension = 16_383

    static func encode(_ frames: [ImageFrame], loopCount: Int, options: EncodingOptions) throws(CodecError) -> [UInt8] {
        let first = frames[0].pixels
        guard first.width <= maxDimension, first.height <= maxDimension else {
            throw .encodingFailed(format: .webp, reason: "WebP images are at most \(maxDimension)x\(maxDimension)")
        }
        var config = try makeConfig(options)
        if frames.count == 1 {
            return try encodeStill(first, config: &config)
        }
        return try encodeAnimation(frames, loopCount: loopCount, config: &config)
    }

    private static func makeConfig(_ options: EncodingOptions) throws(CodecError) -> WebPConfig {
        let libwebp = try SharedLibraries.webp
        var config = WebPConfig()
        guard libwebp.initConfig(&config) != 0 else {
            throw .encodingFailed(format: .webp, reason: "libwebp version mismatch")
        }
        config.quality = Float(min(max(options.quality, 0), 100))
        config.method = Int32(min(max(options.webpMethod, 0), 6))
        if options.isLossless {
            config.lossless = 1
            config.exact = 1
        } else if options.quality >= 90 {
            // At high quality the loss is dominated by the RGB→YUV 4:2:0 conversion: the iterative "sharp" conversion
            // keeps colour edges (about +1 dB on detailed photos) at some encoding time, worth it where quality was
            // asked for.
            config.use_sharp_yuv = 1
        }
        guard libwebp.WebPValidateConfig(&config) != 0 else {
            throw .encodingFailed(format: .webp, reason: "invalid configuration")
        }
        return config
    }

    /// Fills `picture` with `pixels` (gray is widened to RGB, gray+alpha to RGBA).
    private static func importPixels(
        _ pixels: PixelBuffer, into picture: inout WebPPicture
    ) throws(CodecError) {
        let libwebp = try SharedLibraries.webp
        let source = try pixels.converted(to: pixels.format.hasAlpha ? .rgba8 : .rgb8)
        guard libwebp.initPicture(&picture) != 0 else {
            throw .encodingFailed(format: .webp, reason: "libwebp version mismatch")
        }
        picture.width = Int32(source.width)
        picture.height = Int32(source.height)
        picture.use_argb = 1
        let imported = source.withUnsafeBytes { bytes in
            let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return source.format == .rgba8
                ? libwebp.WebPPictureImportRGBA(&picture, base, Int32(source.bytesPerRow))
                : libwebp.WebPPictureImportRGB(&picture, base, Int32(source.bytesPerRow))
        }
        guard imported != 0 else { throw .encodingFailed(format: .webp, reason: "out of memory importing pixels") }
    }

    private static func encodeStill(_ pixels: PixelBuffer, config: inout WebPConfig) throws(CodecError) -> [UInt8] {
        let libwebp = try SharedLibraries.webp
        var picture = WebPPicture()
        try importPixels(pixels, into: &picture)
        defer { libwebp.WebPPictureFree(&picture) }
        var writer = WebPMemoryWriter()
        libwebp.WebPMemoryWriterInit(&writer)
        defer { libwebp.WebPMemoryWriterClear(&writer) }
        let encoded = withUnsafeMutablePointer(to: &writer) { writer in
            picture.writer = libwebp.WebPMemoryWrite
            picture.custom_ptr = UnsafeMutableRawPointer(writer)
            return libwebp.WebPEncode(&config, &picture)
        }
        guard encoded != 0, let memory = writer.mem else {
            throw .encodingFailed(format: .webp, reason: "WebPEncode failed (error \(picture.error_code.rawValue))")
        }
        return Array(UnsafeBufferPointer(start: memory, count: writer.size))
    }

    private static func encodeAnimation(
        _ frames: [ImageFrame], loopCount: Int, config: inout WebPConfig
    ) throws(CodecError)
        -> [UInt8]
    {
        let (libwebp, libwebpmux) = (try SharedLibraries.webp, try SharedLibraries.webpMux)
        let canvas = frames[0].pixels
        var encoderOptions = WebPAnimEncoderOptions()
        guard libwebpmux.initAnimEncoderOptions(&encoderOptions) != 0 else {
            throw .encodingFailed(format: .webp, reason: "libwebp version mismatch")
        }
        encoderOptions.anim_params.loop_count = Int32(clamping: loopCount)
        let encoder = libwebpmux.newAnimEncoder(Int32(canvas.width), Int32(canvas.height), &encoderOptions)
        guard let encoder else {
            throw .encodingFailed(format: .webp, reason: "cannot create the animation encoder")
        }
        defer { libwebpmux.WebPAnimEncoderDelete(encoder) }
        var timestamp = 0
        for frame in frames {
            var picture = WebPPicture()
            try importPixels(frame.pixels, into: &picture)
            let added = libwebpmux.WebPAnimEncoderAdd(encoder, &picture, Int32(clamping: timestamp), &config)
            libwebp.WebPPictureFree(&picture)
            guard added != 0 else { throw .encodingFailed(format: .webp, reason: animationError(encoder, libwebpmux)) }
            timestamp += Int(frame.duration / .milliseconds(1))
        }
        guard libwebpmux.WebPAnimEncoderAdd(encoder, nil, Int32(clamping: timestamp), nil) != 0 else {
            throw .encodingFailed(format: .webp, reason: animationError(encoder, libwebpmux))
        }
        var data = WebPData()
        guard libwebpmux.WebPAnimEncoderAssemble(encoder, &data) != 0, let bytes = data.bytes else {
            throw .encodingFailed(format: .webp, reason: animationError(encoder, libwebpmux))
        }
        defer { libwebp.clear(&data) }
        return Array(UnsafeBufferPointer(start: bytes, count: data.size))
    }

    private static func animationError(_ encoder: OpaquePointer, _ libwebpmux: osprey_webpmux_functions) -> String {
        libwebpmux.WebPAnimEncoderGetError(encoder).map { String(cString: $0) } ?? "WebPAnimEncoder failed"
    }
}
