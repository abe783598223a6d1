internal import COspreyLibraryLoader

/// JPEG XL through libjxl (encoding: `JXLEncoder`), decode: stills and animations (frames composited, with durations and loop count),
/// alpha, any bit depth (converted to 8), the codestream's orientation (applied by libjxl unless the stored
/// orientation is kept), colours: an XYB-encoded (lossy) image is rendered by libjxl straight to sRGB, tone-mapped to
/// SDR when it is HDR; an image in its original colour space goes through the colour stage with its ICC profile,
/// or is tone-mapped by Osprey when its transfer is PQ or HLG.
///
/// The declared size (before libjxl decodes a pixel) and each frame (before it is decoded) are checked against the
/// limits.
public struct JXLCoder: ImageDecoding, ImageEncoding {
    /// Makes the coder; it holds no state.
    public init() {}
    /// The format it reads (and writes, if it does).
    public var format: ImageFormat { .jxl }

    /// The bare codestream (`FF 0A`) or the container (`00 00 00 0C 'JXL ' 0D 0A 87 0A`).
    public func recognizes(_ prefix: UnsafeRawBufferPointer) -> Bool {
        if prefix.count >= 2, prefix[0] == 0xFF, prefix[1] == 0x0A { return true }
        let container: [UInt8] = [0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]
        return prefix.count >= 12 && prefix.prefix(12).elementsEqual(container)
    }

    /// The size before orientation, and the orientation; nothing is decoded.
    public func header(of data: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader {
        let info = try JXLDecoder.basicInfo(data)
        var header = ImageHeader(
            format: .jxl, width: Int(info.xsize), height: Int(info.ysize),
            orientation: ImageOrientation(exifValue: Int(info.orientation.rawValue)))
        header.hasAlpha = info.alpha_bits > 0
        header.bitDepth = Int(info.bits_per_sample)
        return header
    }

    /// The memory decoding `data` as `options` ask takes, from its header: what a budget reserves first.
    public func memoryEstimate(
        _ data: UnsafeRawBufferPointer, options: DecodingOptions
    ) throws(CodecError) -> DecodingEstimate {
        let info = try JXLDecoder.basicInfo(data)
        let (width, height) = (Int(info.xsize), Int(info.ysize))
        let channels = info.alpha_bits > 0 ? 4 : 3
        // Without reading every frame header the count is not known: one, and libjxl's own buffers (float planes).
        let imageBytes = ImageDecoder.saturating(width, height, channels)
        return DecodingEstimate(
            width: width, height: height, channels: channels, frameCount: 1, imageBytes: imageBytes,
            peakBytes: ImageDecoder.saturating(sum: imageBytes, ImageDecoder.saturating(width, height, 16)))
    }

    /// Decodes `data` as `options` ask (size, limits, frames, colour handling).
    public func decode(_ data: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        try JXLDecoder.decode(data, options: options)
    }

    /// Encodes with libjxl: lossy at the distance ``EncodingOptions/quality`` maps to, or lossless, at
    /// ``EncodingOptions/jxlEffort``; every frame of an animation, with its duration and the loop count.
    public func encode(_ image: Image, options: EncodingOptions) throws(CodecError) -> [UInt8] {
        try JXLEncoder.encode(
            image, metadata: ImageEncoder.containerMetadata(for: image, format: .jxl, options: options),
            options: options)
    }
}

extension ImageFormat {
    /// JPEG XL: the bare codestream (what Osprey writes) or the ISO BMFF container.
    public static let jxl = ImageFormat(name: "jxl", mimeType: "image/jxl", fileExtension: "jxl")
}

enum JXLDecoder {
    /// Runs `body` with a decoder whose input is `bytes`, subscribed to `events`. The input is closed (all of the
    /// file is there) unless `isComplete` is false: then libjxl reports `JXL_DEC_NEED_MORE_INPUT` where the data
    /// ends, and what it has decoded so far can be flushed.
    ///
    /// libjxl 0.7 takes a memory manager, but allocates its image planes past it (its own aligned allocator): what
    /// bounds its memory is the size and frame count checked before the first frame, which its working memory is
    /// proportional to.
    static func withDecoder<Result>(
        _ bytes: UnsafeRawBufferPointer, events: Int32, isComplete: Bool = true,
        _ body: (OpaquePointer) throws(CodecError) -> Result
    ) throws(CodecError) -> Result {
        let jxl = try SharedLibraries.jxl
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), !bytes.isEmpty else {
            throw .truncated(format: .jxl)
        }
        guard let decoder = jxl.JxlDecoderCreate(nil) else { throw .outOfMemory(byteCount: 1 << 16) }
        defer { jxl.JxlDecoderDestroy(decoder) }
        guard jxl.JxlDecoderSubscribeEvents(decoder, events) == JXL_DEC_SUCCESS,
            jxl.JxlDecoderSetInput(decoder, base, bytes.count) == JXL_DEC_SUCCESS
        else { throw .malformed(format: .jxl, reason: "libjxl refused the input") }
        if isComplete { jxl.JxlDecoderCloseInput(decoder) }
        return try body(decoder)
    }

    /// The codestream's basic information: size, orientation, alpha, animation.
    static func basicInfo(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> JxlBasicInfo {
        let jxl = try SharedLibraries.jxl
        return try withDecoder(bytes, events: Int32(JXL_DEC_BASIC_INFO.rawValue)) { decoder throws(CodecError) in
            let status = jxl.JxlDecoderProcessInput(decoder)
            guard status == JXL_DEC_BASIC_INFO else { throw failure(status) }
            var info = JxlBasicInfo()
            guard jxl.JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else {
                throw .malformed(format: .jxl, reason: "its header cannot be read")
            }
            guard info.xsize > 0, info.ysize > 0 else {
                throw .invalidDimensions(width: Int(info.xsize), height: Int(info.ysize))
            }
            return info
        }
    }

    /// The duration of the frame whose header libjxl has just read: its ticks at the animation's rate, at most a
    /// day; none for a still.
    static func frameDuration(_ decoder: OpaquePointer, _ info: JxlBasicInfo, _ jxl: osprey_jxl_functions) -> Duration {
        var header = JxlFrameHeader()
        guard jxl.JxlDecoderGetFrameHeader(decoder, &header) == JXL_DEC_SUCCESS, info.have_animation != 0,
            info.animation.tps_numerator > 0
        else { return .zero }
        let seconds =
            Double(header.duration) * Double(info.animation.tps_denominator) / Double(info.animation.tps_numerator)
        return .nanoseconds(Int64(min(seconds, 86_400) * 1e9))
    }

    /// The frames an animation shows (libjxl reads each frame's header and skips its groups) with their durations,
    /// and its loop count; a still is one frame. At most the default frame limit is counted.
    static func frames(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader.Frames {
        let jxl = try SharedLibraries.jxl
        let events = JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_FRAME.rawValue
        let limit = DecodingOptions.Limits().maxFrameCount
        return try withDecoder(bytes, events: Int32(events)) { decoder throws(CodecError) -> ImageHeader.Frames in
            var info = JxlBasicInfo()
            var durations: [Duration] = []
            while true {
                let status = jxl.JxlDecoderProcessInput(decoder)
                switch status {
                case JXL_DEC_BASIC_INFO:
                    guard jxl.JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else {
                        throw .malformed(format: .jxl, reason: "its header cannot be read")
                    }
                    if info.have_animation == 0 {
                        return ImageHeader.Frames(count: 1, loopCount: 0, durations: [])
                    }
                case JXL_DEC_FRAME:
                    guard durations.count < limit else {
                        throw .tooManyFrames(count: durations.count + 1, limit: limit)
                    }
                    durations.append(frameDuration(decoder, info, jxl))
                case JXL_DEC_SUCCESS:
                    return ImageHeader.Frames(
                        count: durations.count, loopCount: Int(info.animation.num_loops), durations: durations)
                default:
                    throw failure(status)
                }
            }
        }
    }

    /// The error for a status that ends the decode.
    static func failure(_ status: JxlDecoderStatus) -> CodecError {
        if status == JXL_DEC_NEED_MORE_INPUT { return .truncated(format: .jxl) }
        return .malformed(format: .jxl, reason: "libjxl could not decode it (status \(status.rawValue))")
    }

    /// How the frames are rendered: 8-bit, or 16-bit for Osprey to tone-map.
    private struct Rendering {
        var channels: Int
        var toneMapping: (HDRToneMapping.Transfer, primaries: Int)?
        var profile: ColorProfile?
        var warnings: [DecodingWarning] = []
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        let jxl = try SharedLibraries.jxl
        let limits = options.limits
        let events =
            JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_COLOR_ENCODING.rawValue | JXL_DEC_FRAME.rawValue
            | JXL_DEC_FULL_IMAGE.rawValue
        // The input stays open, so that a file cut short ends in NEED_MORE_INPUT (with the input closed, libjxl
        // reports an error no different from a malformed file's): truncated, or with partial images allowed,
        // flushed: the whole frame at the detail decoded so far (a progressive or DC-first file shows a blurred
        // picture from its first groups).
        return try withDecoder(bytes, events: Int32(events), isComplete: false) {
            decoder throws(CodecError) -> Image in
            if options.keepsStoredOrientation { _ = jxl.JxlDecoderSetKeepOrientation(decoder, 1) }
            var info = JxlBasicInfo()
            var rendering = Rendering(channels: 3)
            var frames: [ImageFrame] = []
            var duration = Duration.zero
            var samples: [UInt8] = []
            var size = (width: 0, height: 0)
            let pixelLimit = min(limits.maxPixelCount, limits.maxSourcePixelCount ?? .max)
            decoding: while true {
                let status = jxl.JxlDecoderProcessInput(decoder)
                switch status {
                case JXL_DEC_BASIC_INFO:
                    guard jxl.JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else {
                        throw .malformed(format: .jxl, reason: "its header cannot be read")
                    }
                    let swaps = info.orientation.rawValue >= 5 && !options.keepsStoredOrientation
                    size = swaps ? (Int(info.ysize), Int(info.xsize)) : (Int(info.xsize), Int(info.ysize))
                    guard size.width > 0, size.height > 0 else {
                        throw .invalidDimensions(width: size.width, height: size.height)
                    }
                    guard ImageDecoder.saturating(size.width, size.height) <= pixelLimit else {
                        throw .tooManyPixels(width: size.width, height: size.height, limit: pixelLimit)
                    }
                    rendering.channels = info.alpha_bits > 0 ? 4 : 3
                case JXL_DEC_COLOR_ENCODING:
                    if info.uses_original_profile == 0, options.colorHandling != .ignore {
                        // XYB: libjxl renders to any colour space itself (asked for here, after this event and
                        // before any other): sRGB, HDR tone-mapped to SDR white.
                        var srgb = JxlColorEncoding()
                        srgb.color_space = info.num_color_channels == 1 ? JXL_COLOR_SPACE_GRAY : JXL_COLOR_SPACE_RGB
                        srgb.white_point = JXL_WHITE_POINT_D65
                        srgb.primaries = JXL_PRIMARIES_SRGB
                        srgb.transfer_function = JXL_TRANSFER_FUNCTION_SRGB
                        srgb.rendering_intent = JXL_RENDERING_INTENT_RELATIVE
                        _ = jxl.JxlDecoderSetPreferredColorProfile(decoder, &srgb)
                        _ = jxl.JxlDecoderSetDesiredIntensityTarget(decoder, 255)
                    }
                    if options.colorHandling != .ignore {
                        rendering = colour(
                            of: decoder, channels: rendering.channels, xyb: info.uses_original_profile == 0, jxl: jxl)
                    }
                case JXL_DEC_FRAME:
                    duration = frameDuration(decoder, info, jxl)
                    guard frames.count < (options.firstFrameOnly ? 1 : limits.maxFrameCount) else {
                        if options.firstFrameOnly { break decoding }
                        throw .tooManyFrames(count: frames.count + 1, limit: limits.maxFrameCount)
                    }
                    guard ImageDecoder.saturating(size.width, size.height, frames.count + 1) <= limits.maxPixelCount
                    else {
                        throw .tooManyPixels(
                            width: size.width, height: size.height * (frames.count + 1), limit: limits.maxPixelCount)
                    }
                case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
                    var format = pixelFormat(rendering)
                    var needed = 0
                    guard jxl.JxlDecoderImageOutBufferSize(decoder, &format, &needed) == JXL_DEC_SUCCESS else {
                        throw .malformed(format: .jxl, reason: "libjxl gave no output size")
                    }
                    samples = [UInt8](repeating: 0, count: needed)
                    let set = samples.withUnsafeMutableBytes { buffer in
                        jxl.JxlDecoderSetImageOutBuffer(decoder, &format, buffer.baseAddress, buffer.count)
                    }
                    guard set == JXL_DEC_SUCCESS else {
                        throw .malformed(format: .jxl, reason: "libjxl refused the buffer")
                    }
                case JXL_DEC_FULL_IMAGE:
                    frames.append(
                        ImageFrame(
                            pixels: try pixels(samples, size: size, rendering: rendering), duration: duration))
                    if options.firstFrameOnly { break decoding }
                case JXL_DEC_SUCCESS:
                    break decoding
                case JXL_DEC_NEED_MORE_INPUT where options.allowsPartialImages:
                    if frames.isEmpty, !samples.isEmpty, jxl.JxlDecoderFlushImage(decoder) == JXL_DEC_SUCCESS {
                        frames.append(
                            ImageFrame(
                                pixels: try pixels(samples, size: size, rendering: rendering), duration: duration))
                    }
                    guard !frames.isEmpty else { throw failure(status) }
                    break decoding
                default:
                    if options.allowsPartialImages, !frames.isEmpty { break decoding }
                    throw failure(status)
                }
            }
            guard !frames.isEmpty else { throw .malformed(format: .jxl, reason: "it has no frames") }
            let orientation =
                options.keepsStoredOrientation ? ImageOrientation(exifValue: Int(info.orientation.rawValue)) : .up
            var image = try Image(
                frames: frames, loopCount: info.have_animation != 0 ? Int(info.animation.num_loops) : 0,
                orientation: orientation, sourceFormat: .jxl)
            image.colorProfile = rendering.profile
            image.warnings = rendering.warnings
            return image
        }
    }

    /// What the frames are rendered as, from the colour encoding libjxl reports for the pixels it will give.
    private static func colour(
        of decoder: OpaquePointer, channels: Int, xyb: Bool, jxl: osprey_jxl_functions
    ) -> Rendering {
        var rendering = Rendering(channels: channels)
        var encoding = JxlColorEncoding()
        let known = jxl.JxlDecoderGetColorAsEncodedProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &encoding)
        if known == JXL_DEC_SUCCESS {
            let transfer = Int(encoding.transfer_function.rawValue)
            let primaries = encoding.primaries == JXL_PRIMARIES_P3 ? 12 : Int(encoding.primaries.rawValue)
            if encoding.color_space == JXL_COLOR_SPACE_RGB, let hdr = HDRToneMapping.Transfer(codePoint: transfer),
                encoding.primaries != JXL_PRIMARIES_CUSTOM
            {
                rendering.toneMapping = (hdr, primaries)
                return rendering
            }
            if encoding.color_space == JXL_COLOR_SPACE_RGB, encoding.primaries == JXL_PRIMARIES_SRGB,
                encoding.white_point == JXL_WHITE_POINT_D65, encoding.transfer_function == JXL_TRANSFER_FUNCTION_SRGB
            {
                return rendering  // sRGB: nothing to convert
            }
        }
        var size = 0
        guard jxl.JxlDecoderGetICCProfileSize(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &size) == JXL_DEC_SUCCESS,
            size > 0, size <= ColorProfiles.maximumSize
        else { return rendering }
        var data = [UInt8](repeating: 0, count: size)
        let read = data.withUnsafeMutableBufferPointer { buffer in
            jxl.JxlDecoderGetColorAsICCProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, buffer.baseAddress, size)
        }
        if read == JXL_DEC_SUCCESS, let profile = ColorProfile(data: data) {
            rendering.profile = profile.isSRGB ? nil : profile
        } else {
            rendering.warnings = [.colorProfileIgnored(reason: "its ICC profile is not one Little CMS can read")]
        }
        return rendering
    }

    private static func pixelFormat(_ rendering: Rendering) -> JxlPixelFormat {
        JxlPixelFormat(
            num_channels: UInt32(rendering.channels),
            data_type: rendering.toneMapping == nil ? JXL_TYPE_UINT8 : JXL_TYPE_UINT16,
            endianness: JXL_NATIVE_ENDIAN, align: 0)
    }

    /// One rendered frame as 8-bit RGB or RGBA (tone-mapped from 16 bits when its transfer is HDR).
    private static func pixels(
        _ samples: [UInt8], size: (width: Int, height: Int), rendering: Rendering
    ) throws(CodecError) -> PixelBuffer {
        let format: PixelFormat = rendering.channels == 4 ? .rgba8 : .rgb8
        if let (transfer, primaries) = rendering.toneMapping {
            // libjxl wrote native-endian 16-bit samples into the byte buffer.
            let wide = samples.withUnsafeBytes { raw in
                (0..<raw.count / 2).map { raw.loadUnaligned(fromByteOffset: $0 * 2, as: UInt16.self) }
            }
            return try wide.withUnsafeBufferPointer { buffer throws(CodecError) in
                try HDRToneMapping.sRGB(
                    from: buffer, width: size.width, height: size.height, rowLength: size.width * rendering.channels,
                    format: format, transfer: transfer, primaries: primaries)
            }
        }
        return try PixelBuffer(width: size.width, height: size.height, format: format, bytes: samples)
    }
}
