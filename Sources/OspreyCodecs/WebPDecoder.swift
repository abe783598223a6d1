internal import COspreyLibraryLoader

/// WebP through libwebp: lossy, lossless, alpha, scaling (stills), animation (composited by WebPAnimDecoder), EXIF.
enum WebPDecoder {
    static func decode(_ bytes: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { throw .truncated(format: .webp) }
        let libwebp = try SharedLibraries.webp
        var features = WebPBitstreamFeatures()
        let status = libwebp.getFeatures(base, bytes.count, &features)
        guard status == VP8_STATUS_OK else {
            throw status == VP8_STATUS_NOT_ENOUGH_DATA
                ? .truncated(format: .webp) : .malformed(format: .webp, reason: webPStatusDescription(status))
        }
        let canvas = ImageSize(width: Int(features.width), height: Int(features.height))
        let container = try Container(base, count: bytes.count)
        let lookup = ColorProfile.lookup(in: bytes, format: .webp, options: options)
        if features.has_animation != 0 {
            var image = try decodeAnimation(
                base, count: bytes.count, canvas: canvas, container: container, options: options,
                profile: lookup.profile)
            image.warnings = lookup.warnings + image.warnings
            return image
        }
        let pixels = try decodeStill(
            base, count: bytes.count, features: features, container: container, options: options)
        return try ImageDecoder.still(
            pixels, orientation: container.orientation, format: .webp, options: options, profile: lookup.profile,
            warnings: lookup.warnings)
    }

    /// The source size from which a still decodes on two threads.
    static let threadedPixelCount = 1 << 20

    /// What the RIFF container says beside the bitstream: frame count and EXIF orientation.
    struct Container {
        var frameCount = 1
        var orientation = ImageOrientation.up

        /// What the container says, read with libwebpdemux (without it, a WebP's orientation cannot be known: the
        /// image is refused rather than shown the wrong way up).
        init(_ base: UnsafePointer<UInt8>, count: Int) throws(CodecError) {
            let libwebpdemux = try SharedLibraries.webpDemux
            var data = WebPData(bytes: base, size: count)
            guard let demux = libwebpdemux.demux(&data) else { return }
            defer { libwebpdemux.WebPDemuxDelete(demux) }
            frameCount = Int(libwebpdemux.WebPDemuxGetI(demux, WEBP_FF_FRAME_COUNT))
            var chunk = WebPChunkIterator()
            if libwebpdemux.WebPDemuxGetChunk(demux, "EXIF", 1, &chunk) != 0 {
                orientation =
                    EXIF.orientation(in: UnsafeRawBufferPointer(start: chunk.chunk.bytes, count: chunk.chunk.size))
                    ?? .up
                libwebpdemux.WebPDemuxReleaseChunkIterator(&chunk)
            }
        }
    }

    private static func decodeStill(
        _ base: UnsafePointer<UInt8>, count: Int, features: WebPBitstreamFeatures, container: Container,
        options: DecodingOptions
    ) throws(CodecError) -> PixelBuffer {
        let libwebp = try SharedLibraries.webp
        let source = ImageSize(width: Int(features.width), height: Int(features.height))
        let size = scaledSize(source, orientation: container.orientation, options: options)
        guard size.pixelCount <= options.limits.maxPixelCount else {
            throw .tooManyPixels(width: size.width, height: size.height, limit: options.limits.maxPixelCount)
        }
        let format: PixelFormat = features.has_alpha != 0 ? .rgba8 : .rgb8
        var pixels = try PixelBuffer(width: size.width, height: size.height, format: format)
        var config = WebPDecoderConfig()
        guard libwebp.initDecoderConfig(&config) != 0 else {
            throw .malformed(format: .webp, reason: "libwebp version mismatch")
        }
        // From a megapixel up, libwebp's own second thread, which filters while the first parses (as libvips and
        // dwebp -mt decode); below, starting the thread would cost more than it saves.
        config.options.use_threads = source.pixelCount >= Self.threadedPixelCount ? 1 : 0
        if size != source {
            config.options.use_scaling = 1
            config.options.scaled_width = Int32(size.width)
            config.options.scaled_height = Int32(size.height)
        }
        let stride = pixels.bytesPerRow
        let status = pixels.withUnsafeMutableBytes { buffer -> VP8StatusCode in
            // Decode straight into our buffer: libwebp writes the rows, we own the memory.
            config.output.colorspace = format == .rgba8 ? MODE_RGBA : MODE_RGB
            config.output.is_external_memory = 1
            config.output.u.RGBA.rgba = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
            config.output.u.RGBA.stride = Int32(stride)
            config.output.u.RGBA.size = buffer.count
            let status = libwebp.WebPDecode(base, count, &config)
            if status == VP8_STATUS_NOT_ENOUGH_DATA, options.allowsPartialImages {
                return decodePartially(base, count: count, config: &config, libwebp: libwebp)
            }
            return status
        }
        libwebp.WebPFreeDecBuffer(&config.output)
        switch status {
        case VP8_STATUS_OK: return pixels
        case VP8_STATUS_NOT_ENOUGH_DATA: throw .truncated(format: .webp)
        default: throw .malformed(format: .webp, reason: webPStatusDescription(status))
        }
    }

    /// Feeds the truncated data to libwebp's incremental decoder, which keeps the rows it could decode.
    private static func decodePartially(
        _ base: UnsafePointer<UInt8>, count: Int, config: inout WebPDecoderConfig, libwebp: osprey_webp_functions
    )
        -> VP8StatusCode
    {
        guard let decoder = libwebp.WebPIDecode(nil, 0, &config) else { return VP8_STATUS_OUT_OF_MEMORY }
        defer { libwebp.WebPIDelete(decoder) }
        let status = libwebp.WebPIAppend(decoder, base, count)
        var lastRow: Int32 = 0
        guard status == VP8_STATUS_OK || status == VP8_STATUS_SUSPENDED,
            libwebp.WebPIDecGetRGB(decoder, &lastRow, nil, nil, nil) != nil, lastRow > 0
        else { return VP8_STATUS_NOT_ENOUGH_DATA }
        return VP8_STATUS_OK
    }

    /// The size to decode a still at: scaled down for the pixel budget, then no smaller than the target.
    static func scaledSize(_ source: ImageSize, orientation: ImageOrientation, options: DecodingOptions) -> ImageSize {
        var scale = 1.0
        if let budget = options.pixelBudget, budget > 0, source.pixelCount > budget {
            scale = (Double(budget) / Double(source.pixelCount)).squareRoot()
        }
        if let target = options.targetSize.map({ orientation.swapsDimensions ? $0.transposed : $0 }) {
            let needed = max(Double(target.width) / Double(source.width), Double(target.height) / Double(source.height))
            scale = min(scale, max(needed, 0))
        }
        guard scale < 1 else { return source }
        return ImageSize(
            width: max(1, Int((Double(source.width) * scale).rounded(.up))),
            height: max(1, Int((Double(source.height) * scale).rounded(.up))))
    }

    private static func decodeAnimation(
        _ base: UnsafePointer<UInt8>, count: Int, canvas: ImageSize, container: Container, options: DecodingOptions,
        profile: ColorProfile?
    ) throws(CodecError) -> Image {
        let limits = options.limits
        let frameCount = options.firstFrameOnly ? 1 : container.frameCount
        guard frameCount <= limits.maxFrameCount else {
            throw .tooManyFrames(count: frameCount, limit: limits.maxFrameCount)
        }
        guard canvas.pixelCount * max(frameCount, 1) <= limits.maxPixelCount else {
            throw .tooManyPixels(
                width: canvas.width, height: canvas.height * max(frameCount, 1), limit: limits.maxPixelCount)
        }
        let libwebpdemux = try SharedLibraries.webpDemux
        var decoderOptions = WebPAnimDecoderOptions()
        guard libwebpdemux.initAnimDecoderOptions(&decoderOptions) != 0 else {
            throw .malformed(format: .webp, reason: "libwebp version mismatch")
        }
        decoderOptions.color_mode = MODE_RGBA
        decoderOptions.use_threads = 0
        var data = WebPData(bytes: base, size: count)
        guard let decoder = libwebpdemux.newAnimDecoder(&data, &decoderOptions) else {
            throw .malformed(format: .webp, reason: "cannot read the animation (damaged or truncated)")
        }
        defer { libwebpdemux.WebPAnimDecoderDelete(decoder) }
        var info = WebPAnimInfo()
        guard libwebpdemux.WebPAnimDecoderGetInfo(decoder, &info) != 0 else {
            throw .malformed(format: .webp, reason: "cannot read the animation header")
        }
        var frames: [ImageFrame] = []
        var warning: DecodingWarning?
        var previousTimestamp: Int32 = 0
        while libwebpdemux.WebPAnimDecoderHasMoreFrames(decoder) != 0, frames.count < frameCount {
            var buffer: UnsafeMutablePointer<UInt8>?
            var timestamp: Int32 = 0
            guard libwebpdemux.WebPAnimDecoderGetNext(decoder, &buffer, &timestamp) != 0, let buffer else {
                if options.allowsPartialImages, !frames.isEmpty { break }
                throw .malformed(format: .webp, reason: "cannot decode frame \(frames.count + 1)")
            }
            var pixels = try PixelBuffer(
                width: Int(info.canvas_width), height: Int(info.canvas_height), format: .rgba8,
                bytes: UnsafeBufferPointer(start: buffer, count: Int(info.canvas_width) * Int(info.canvas_height) * 4))
            warning = ImageDecoder.colorManage(&pixels, profile: profile, options: options).warning
            let upright = options.keepsStoredOrientation ? pixels : try pixels.applying(container.orientation)
            frames.append(ImageFrame(pixels: upright, duration: .milliseconds(Int(timestamp - previousTimestamp))))
            previousTimestamp = timestamp
        }
        guard !frames.isEmpty else { throw .malformed(format: .webp, reason: "the animation has no frames") }
        var image = try Image(
            frames: frames,
            loopCount: Int(info.loop_count),
            orientation: options.keepsStoredOrientation ? container.orientation : .up,
            sourceFormat: .webp)
        image.colorProfile = options.colorHandling == .keepProfile ? profile : nil
        if let warning { image.warnings = [warning] }
        return image
    }
}
