internal import COspreyCodecShims

/// JPEG through libjpeg-turbo: baseline, progressive, arithmetic, grayscale, CMYK/YCCK (to RGB), DCT scaling.
enum JPEGDecoder {
    static func decode(_ bytes: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        let orientation = EXIF.jpegPayload(in: bytes).flatMap(EXIF.orientation(in:)) ?? .up
        // The target is given in display orientation; the decoder scales stored pixels.
        let target = options.targetSize.map { orientation.swapsDimensions ? $0.transposed : $0 }
        var request = osprey_jpeg_decode_request()
        request.minWidth = UInt32(clamping: target?.width ?? 0)
        request.minHeight = UInt32(clamping: target?.height ?? 0)
        request.pixelBudget = UInt64(clamping: options.pixelBudget ?? 0)
        request.maxPixels = UInt64(clamping: options.limits.maxPixelCount)
        request.maxMemory = UInt64(clamping: options.limits.maxDecoderMemory)
        request.maxScans = UInt32(clamping: options.limits.maxScanCount)
        request.allowPartial = options.allowsPartialImages ? 1 : 0
        // A profiled CMYK file is converted by its profile: the decoder hands the CMYK values over as stored.
        let lookup = ColorProfile.lookup(in: bytes, format: .jpeg, options: options)
        let profile = lookup.profile
        request.keepCMYK = profile?.colorSpace == .cmyk ? 1 : 0
        // An RGB or gray profile converts the rows as they are decoded, while they are in the cache, and for a large
        // image on a second processor, following the decoder.
        let converted: PixelFormat? =
            switch profile?.colorSpace {
            case .rgb: .rgb8
            case .gray: .gray8
            default: nil
            }
        let transform = converted.flatMap { ImageDecoder.rowTransform(for: profile, format: $0, options: options) }
        if let transform, let converted {
            request.converter = transform.converter
            request.converterComponents = UInt32(converted.bytesPerPixel)
        }

        _ = try SharedLibraries.jpeg  // opened here, so that a missing library is not reported as a malformed file
        var result = osprey_jpeg_decode_result()
        let cancellation = options.cancellation
        request.cancelled = UnsafePointer(cancellation?.flag)
        let (status, message) = withExtendedLifetime((transform, cancellation)) {
            withMessageBuffer { message in
                osprey_jpeg_decode(
                    bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &request, &result, message)
            }
        }
        // The rows in the decoder's format are already converted: the profile must not convert them again.
        let converter = result.components == request.converterComponents ? transform : nil
        switch status {
        case OSPREY_OK:
            break
        case OSPREY_LIMIT_EXCEEDED
        where result.width > 0 && UInt64(result.width) * UInt64(result.height) > request.maxPixels:
            throw .tooManyPixels(
                width: Int(result.width), height: Int(result.height), limit: options.limits.maxPixelCount)
        case OSPREY_LIMIT_EXCEEDED:
            throw .limitExceeded(format: .jpeg, reason: message)
        case OSPREY_TRUNCATED:
            throw .truncated(format: .jpeg)
        case OSPREY_CANCELLED:
            throw .cancelled
        default:
            throw .malformed(format: .jpeg, reason: message)
        }
        guard result.components == 4, let profile else {
            let pixels = PixelBuffer(
                adopting: result.pixels,
                width: Int(result.width),
                height: Int(result.height),
                format: PixelFormat(components: Int(result.components)),
                bytesPerRow: Int(result.bytesPerRow)
            )
            return try ImageDecoder.still(
                pixels, orientation: orientation, format: .jpeg, options: options,
                profile: converter == nil ? profile : nil, warnings: lookup.warnings)
        }
        // CMYK as stored, 4 bytes a pixel (carried in an RGBA-sized buffer): converted to sRGB by its profile, or
        // without one when Little CMS cannot use it.
        let cmyk = PixelBuffer(
            adopting: result.pixels, width: Int(result.width), height: Int(result.height), format: .rgba8,
            bytesPerRow: Int(result.bytesPerRow))
        let inverted = result.cmykInverted != 0
        let rgb: PixelBuffer
        var warnings = lookup.warnings
        if let converted = ColorConversion.rgb(fromCMYK: cmyk, inverted: inverted, profile: profile) {
            rgb = converted
        } else {
            rgb = try Self.rgbWithoutProfile(cmyk, inverted: inverted)
            let reason = "a \(profile.colorSpace.rawValue) profile cannot convert CMYK pixels"
            warnings.append(.colorProfileIgnored(reason: reason))
        }
        return try ImageDecoder.still(
            rgb, orientation: orientation, format: .jpeg, options: options, profile: nil, warnings: warnings)
    }

    /// CMYK (4 bytes a pixel) to RGB as the decoder converts it without a profile.
    private static func rgbWithoutProfile(_ cmyk: PixelBuffer, inverted: Bool) throws(CodecError) -> PixelBuffer {
        var rgb = try PixelBuffer(width: cmyk.width, height: cmyk.height, format: .rgb8)
        let (width, height, inStride, outStride) = (cmyk.width, cmyk.height, cmyk.bytesPerRow, rgb.bytesPerRow)
        cmyk.withUnsafeBytes { source in
            rgb.withUnsafeMutableBytes { target in
                for row in 0..<height {
                    osprey_jpeg_cmyk_to_rgb(
                        source.baseAddress!.assumingMemoryBound(to: UInt8.self) + row * inStride,
                        target.baseAddress!.assumingMemoryBound(to: UInt8.self) + row * outStride,
                        UInt32(width), inverted ? 1 : 0)
                }
            }
        }
        return rgb
    }
}
