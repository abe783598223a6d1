/// Decodes an image with the decoder that recognises its first bytes: JPEG, PNG, GIF and WebP built in, or any
/// format registered with the ``ImageCoderRegistry`` the options name (``DecodingOptions/coders``).
///
/// Every limit in ``DecodingOptions/Limits`` is checked before a pixel buffer is allocated; every C library error
/// becomes a ``CodecError`` that keeps the library's message.
///
/// ```swift
/// let image = try ImageDecoder.decode(data)                          // full size, upright
/// var options = DecodingOptions()
/// options.targetSize = ImageSize(width: 400, height: 300)            // JPEG: DCT-scaled to ≥ 400×300
/// let thumbnail = try ImageDecoder.decode(data, options: options)
/// ```
///
/// - GIF: every frame composited onto the logical screen (disposal none, background, previous; transparency);
///   delays of 10 ms or less read as 100 ms, as browsers do; ``Image/loopCount`` 0 for NETSCAPE2.0 loop 0 (forever),
///   1 when the block is absent (play once), else the block's count.
/// - PNG: an APNG decodes to its default image (the `IDAT` image), one frame: the animation chunks are not read.
/// - WebP: animations are composited by libwebp's animation decoder; scaling applies to stills only.
/// - A registered decoder's image is held to the same limits (its header before it decodes, its frames and pixels
///   after), and gets the same colour handling and orientation as the built-in ones.
public enum ImageDecoder {
    /// Decodes `data`.
    ///
    /// - Throws: ``CodecError/unsupportedFormat`` when no decoder recognises the data; a limit error
    ///   (``CodecError/tooManyPixels(width:height:limit:)`` for the decoded size or the declared one, ``CodecError/tooManyFrames(count:limit:)``,
    ///   ``CodecError/limitExceeded(format:reason:)``); ``CodecError/truncated(format:)``; or
    ///   ``CodecError/malformed(format:reason:)`` with the library's message.
    public static func decode(
        _ data: some Collection<UInt8>,
        options: DecodingOptions = DecodingOptions()
    ) throws(CodecError) -> Image {
        let result: Result<Image, CodecError> =
            data.withContiguousStorageIfAvailable { decode(UnsafeRawBufferPointer($0), options: options) }
            ?? Array(data).withUnsafeBytes { decode($0, options: options) }
        return try result.get()
    }

    private static func decode(_ bytes: UnsafeRawBufferPointer, options: DecodingOptions) -> Result<Image, CodecError> {
        Result { () throws(CodecError) -> Image in
            if options.cancellation?.isCancelled == true { throw .cancelled }
            guard let decoder = options.coders.decoder(recognizing: bytes) else { throw .unsupportedFormat }
            guard decoder is any BuiltInCoder else { return try decodeRegistered(bytes, decoder, options: options) }
            // A header that cannot be read is left to the decoder, which reports it in its own words.
            let scales = options.targetSize != nil || options.pixelBudget != nil
            let header = options.limits.maxSourcePixelCount != nil || scales ? try? decoder.header(of: bytes) : nil
            if let limit = options.limits.maxSourcePixelCount, let header { try check(header, within: limit) }
            var image = try decoder.decode(bytes, options: options)
            // Decoded smaller than stored: the stored size kept, upright, for the resizes that follow.
            if scales, let header {
                let decoded = ImageSize(width: image.width, height: image.height)
                let upright = image.orientation.swapsDimensions ? decoded.transposed : decoded
                let stored = header.displaySize
                if upright != stored, upright.width <= stored.width, upright.height <= stored.height {
                    image.storedSize = stored
                }
            }
            return image
        }
    }

    /// Throws ``CodecError/tooManyPixels(width:height:limit:)`` when `header` declares more pixels than `limit`.
    private static func check(_ header: ImageHeader, within limit: Int) throws(CodecError) {
        guard saturating(header.width, header.height) <= limit else {
            throw .tooManyPixels(width: header.width, height: header.height, limit: limit)
        }
    }

    /// Decodes with a decoder Osprey did not write: its declared size checked against the pixel limits before, its
    /// frames and pixels after; then the colours handled and the image turned upright as the options say.
    private static func decodeRegistered(
        _ bytes: UnsafeRawBufferPointer, _ decoder: any ImageDecoding, options: DecodingOptions
    ) throws(CodecError) -> Image {
        let limits = options.limits
        // Unlike a built-in decoder, which checks what it will allocate itself, this one runs only on a header
        // that says how large the image is, and is within the limits at full size.
        try check(decoder.header(of: bytes), within: min(limits.maxPixelCount, limits.maxSourcePixelCount ?? .max))
        let decoded = try decoder.decode(bytes, options: options)
        guard decoded.frames.count <= limits.maxFrameCount else {
            throw .tooManyFrames(count: decoded.frames.count, limit: limits.maxFrameCount)
        }
        guard saturating(decoded.width, decoded.height, decoded.frames.count) <= limits.maxPixelCount else {
            throw .tooManyPixels(width: decoded.width, height: decoded.height, limit: limits.maxPixelCount)
        }
        let (profile, loopCount, orientation) = (decoded.colorProfile, decoded.loopCount, decoded.orientation)
        let metadata = options.readsMetadata ? decoded.metadata : ImageMetadata()
        // Taken from the decoded image so that converting colours in place copies no pixels.
        var warnings = decoded.warnings
        var frames = (consume decoded).frames
        var kept: ColorProfile?
        var warning: DecodingWarning?
        for index in frames.indices {
            (kept, warning) = colorManage(&frames[index].pixels, profile: profile, options: options)
        }
        if let warning { warnings.append(warning) }
        var image = try Image(
            frames: frames, loopCount: loopCount, orientation: orientation, sourceFormat: decoder.format)
        image.colorProfile = kept
        image.metadata = metadata
        image.warnings = warnings
        return options.keepsStoredOrientation ? image : try image.upright()
    }

    /// Makes the still image a decoder produced: its colours handled as the options say for the profile the file
    /// embeds (see ``ColorHandling``), then turned upright unless the caller keeps the stored orientation.
    static func still(
        _ pixels: consuming PixelBuffer, orientation: ImageOrientation, format: ImageFormat, options: DecodingOptions,
        profile: ColorProfile?, warnings: [DecodingWarning] = []
    ) throws(CodecError) -> Image {
        let (kept, warning) = colorManage(&pixels, profile: profile, options: options)
        var image =
            options.keepsStoredOrientation
            ? Image(pixels: pixels, orientation: orientation, sourceFormat: format)
            : Image(pixels: try pixels.applying(orientation), orientation: .up, sourceFormat: format)
        image.colorProfile = kept
        image.warnings = warnings + (warning.map { [$0] } ?? [])
        return image
    }

    /// Makes `pixels` what ``DecodingOptions/colorHandling`` wants for `profile` (converted to sRGB in place, or left
    /// as stored) and returns the profile the image keeps. An sRGB profile converts nothing; one that does not fit
    /// the pixels (an RGB profile on a gray image) or of which no transform can be made converts nothing either, and
    /// says so in the warning.
    static func colorManage(
        _ pixels: inout PixelBuffer, profile: ColorProfile?, options: DecodingOptions
    ) -> (kept: ColorProfile?, warning: DecodingWarning?) {
        guard let profile else { return (nil, nil) }
        switch options.colorHandling {
        case .ignore:
            return (nil, nil)
        case .keepProfile:
            return (profile, nil)
        case .convertToSRGB:
            guard !profile.isSRGB, !ColorConversion.convertToSRGB(&pixels, from: profile) else { return (nil, nil) }
            let reason = "a \(profile.colorSpace.rawValue) profile cannot convert \(pixels.format) pixels"
            return (nil, .colorProfileIgnored(reason: reason))
        }
    }

    /// The transform a decoder applies to its rows as they come (JPEG), when the options convert colours and the
    /// profile is not sRGB's; `nil` when nothing is to be converted or the profile does not fit `format`.
    static func rowTransform(
        for profile: ColorProfile?, format: PixelFormat, options: DecodingOptions
    ) -> ColorTransform? {
        guard let profile, options.colorHandling == .convertToSRGB, !profile.isSRGB else { return nil }
        return ColorConversion.transform(for: .init(profile: profile, layout: .init(format)))
    }
}

extension PixelFormat {
    /// The 8-bit layout with `components` channels: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA.
    init(components: Int) {
        switch components {
        case 1: self = .gray8
        case 2: self = .grayAlpha8
        case 3: self = .rgb8
        default: self = .rgba8
        }
    }
}
