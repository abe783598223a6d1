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

        var result = osprey_jpeg_decode_result()
        let (status, message) = withMessageBuffer { message in
            osprey_jpeg_decode(
                bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &request, &result, message)
        }
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
        default:
            throw .malformed(format: .jpeg, reason: message)
        }
        let pixels = PixelBuffer(
            adopting: result.pixels,
            width: Int(result.width),
            height: Int(result.height),
            format: PixelFormat(components: Int(result.components)),
            bytesPerRow: Int(result.bytesPerRow)
        )
        return try ImageDecoder.still(pixels, orientation: orientation, format: .jpeg, options: options)
    }
}
