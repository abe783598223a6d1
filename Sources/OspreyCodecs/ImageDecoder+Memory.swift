internal import COspreyCodecShims

/// What decoding an image will take, read from its header before anything is decoded: how large the decoded image
/// will be, and the most memory the decode holds at once.
///
/// ```swift
/// let estimate = try ImageDecoder.memoryEstimate(for: data, options: options)
/// let reservation = try await budget.reserve(estimate.peakBytes)
/// let image = try ImageDecoder.decode(data, options: options)
/// ```
public struct DecodingEstimate: Sendable, Hashable {
    /// The decoded size, after the decoder's own scaling (JPEG's DCT scaling, WebP's), before orientation.
    public var width: Int
    /// The decoded height.
    public var height: Int
    /// Channels per pixel of the decoded image (1 gray, 2 gray and alpha, 3 RGB, 4 RGBA).
    public var channels: Int
    /// The frames decoded: the container's count, or 1 for a still or with ``DecodingOptions/firstFrameOnly``.
    public var frameCount: Int
    /// The decoded image's pixel bytes, every frame counted.
    public var imageBytes: Int
    /// The most the decode holds at once: the image, the copy that turns it upright, and the decoder's own working
    /// memory (a progressive JPEG's coefficients, an animation's canvases, a profiled CMYK JPEG's stored pixels).
    public var peakBytes: Int

    /// Makes an estimate from known values.
    public init(width: Int, height: Int, channels: Int, frameCount: Int, imageBytes: Int, peakBytes: Int) {
        self.width = width
        self.height = height
        self.channels = channels
        self.frameCount = frameCount
        self.imageBytes = imageBytes
        self.peakBytes = peakBytes
    }
}

extension ImageDecoder {
    /// What decoding `data` with `options` will take (see ``DecodingEstimate``), from its header and, for GIF and
    /// WebP, its container's frame list; nothing is decoded.
    ///
    /// It is an estimate in the conservative direction where the header leaves room (a progressive JPEG's arrays are
    /// counted for every component at full resolution, rounded to blocks), exact for the pixels.
    ///
    /// - Throws: what `ImageHeader.init(reading:)` throws: a decode of `data` would fail before allocating.
    public static func memoryEstimate(
        for data: some Collection<UInt8>, options: DecodingOptions = DecodingOptions()
    ) throws(CodecError) -> DecodingEstimate {
        let result: Result<DecodingEstimate, CodecError> =
            data.withContiguousStorageIfAvailable { memoryEstimate(UnsafeRawBufferPointer($0), options: options) }
            ?? Array(data).withUnsafeBytes { memoryEstimate($0, options: options) }
        return try result.get()
    }

    private static func memoryEstimate(
        _ bytes: UnsafeRawBufferPointer, options: DecodingOptions
    ) -> Result<DecodingEstimate, CodecError> {
        Result { () throws(CodecError) -> DecodingEstimate in
            guard let decoder = options.coders.decoder(recognizing: bytes) else { throw .unsupportedFormat }
            return try decoder.memoryEstimate(bytes, options: options)
        }
    }

    /// The estimate for a built-in format, whose decoders scale, convert and turn as they decode.
    static func builtInMemoryEstimate(
        _ bytes: UnsafeRawBufferPointer, header: ImageHeader, options: DecodingOptions
    ) -> Result<DecodingEstimate, CodecError> {
        Result { () throws(CodecError) -> DecodingEstimate in
            let source = ImageSize(width: header.width, height: header.height)
            var frames = 1
            if header.format == .gif || header.format == .webp, !options.firstFrameOnly {
                frames = max(try ImageHeader.frames(bytes).get().count, 1)
            }
            let size: ImageSize
            var working = header.workingBytes
            switch header.format {
            case .jpeg:
                let scale = jpegScaleNumerator(source, orientation: header.orientation, options: options)
                size = ImageSize(width: (source.width * scale + 7) / 8, height: (source.height * scale + 7) / 8)
                // A sequential file (no coefficient arrays) has its scan unstuffed into a buffer of its own for the
                // Huffman decoder: at most the file's size. At 1/8 the decoder reads a copy of the file without the
                // coefficients a 1×1 IDCT never reads, made beside it (and a sequential copy's scan is the one
                // unstuffed): twice the file's size.
                let sequential = header.workingBytes == 0
                let copies = scale == 1 && !options.allowsPartialImages ? 2 : sequential ? 1 : 0
                working = saturating(sum: working, saturating(bytes.count, copies))
                // A CMYK file with a profile is decoded as stored, 4 bytes a pixel, and converted to RGB from there.
                if header.storedChannels == 4, options.colorHandling != .ignore,
                    case .bytes = ColorProfile.jpegProfile(bytes)
                {
                    working = saturating(sum: working, saturating(size.width, size.height, 4))
                }
            case .webp where frames == 1:
                size = WebPDecoder.scaledSize(source, orientation: header.orientation, options: options)
            case .gif, .webp:
                // The canvas being drawn and the one a frame may be restored to (GIF), or libwebp's two (WebP).
                size = source
                working = saturating(source.width, source.height, 4, 2)
            default:
                size = source
            }
            let frameBytes = saturating(size.width, size.height, header.channels)
            let imageBytes = saturating(frameBytes, frames)
            // Turning a frame upright makes a turned copy before the stored one goes.
            let upright = header.orientation != .up && !options.keepsStoredOrientation ? frameBytes : 0
            return DecodingEstimate(
                width: size.width, height: size.height, channels: header.channels, frameCount: frames,
                imageBytes: imageBytes, peakBytes: saturating(sum: imageBytes, upright, working))
        }
    }

    /// The DCT scale M/8 libjpeg-turbo will decode `source` at for `options`: the decoder's own choice.
    private static func jpegScaleNumerator(
        _ source: ImageSize, orientation: ImageOrientation, options: DecodingOptions
    ) -> Int {
        let target = options.targetSize.map { orientation.swapsDimensions ? $0.transposed : $0 }
        var request = osprey_jpeg_decode_request()
        request.minWidth = UInt32(clamping: target?.width ?? 0)
        request.minHeight = UInt32(clamping: target?.height ?? 0)
        request.pixelBudget = UInt64(clamping: options.pixelBudget ?? 0)
        return Int(
            osprey_jpeg_scale_numerator(UInt32(clamping: source.width), UInt32(clamping: source.height), &request))
    }

    /// The product of `factors`, or `Int.max` when it overflows.
    package static func saturating(_ factors: Int...) -> Int {
        var product = 1
        for factor in factors {
            let (next, overflow) = product.multipliedReportingOverflow(by: max(factor, 0))
            if overflow { return .max }
            product = next
        }
        return product
    }

    /// The sum of `terms`, or `Int.max` when it overflows.
    package static func saturating(sum terms: Int...) -> Int {
        var total = 0
        for term in terms {
            let (next, overflow) = total.addingReportingOverflow(max(term, 0))
            if overflow { return .max }
            total = next
        }
        return total
    }
}
