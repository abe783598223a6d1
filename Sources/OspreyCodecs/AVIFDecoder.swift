internal import COspreyLibraryLoader

/// AVIF through libavif (dav1d decodes the AV1 payload, libaom encodes): stills and image sequences, with alpha, at 8, 10 or 12 bits
/// (converted to 8), 4:0:0 to 4:4:4, grids; the container's transforms (`clap` crop, then `irot` and `imir` as the
/// image's orientation); colours from the ICC profile, or from the `nclx` primaries and transfer, for the colour
/// stage to convert.
///
/// Limits apply before libavif allocates: the file's declared size against the pixel limits, its sample count
/// against the frame limit. libavif's strict checks (a `pixi` box, a valid `clap`, an `ispe` on alpha) are off, as
/// in browsers: files missing them are common and decode correctly.
public struct AVIFCoder: ImageDecoding, ImageEncoding {
    /// Makes the coder; it holds no state.
    public init() {}
    /// The format it reads (and writes, if it does).
    public var format: ImageFormat { .avif }
    /// The bytes it needs to recognise a file: the ISO base media file's `ftyp` box, with its brands.
    public var signatureLength: Int { FileTypeBox.recognitionLength }

    /// An `ftyp` box naming AVIF (see `FileTypeBox.isAVIF`).
    public func recognizes(_ prefix: UnsafeRawBufferPointer) -> Bool {
        FileTypeBox(prefix)?.isAVIF ?? false
    }

    /// The primary image's size after its `clap` crop, its orientation from `irot`/`imir`; nothing is decoded.
    public func header(of data: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader {
        try AVIFDecoder.withParsedFile(data, options: DecodingOptions()) { decoder throws(CodecError) in
            let image = try AVIFDecoder.image(of: decoder).pointee
            let layout = try AVIFDecoder.Layout(image)
            var header = ImageHeader(
                format: .avif, width: layout.crop.width, height: layout.crop.height, orientation: layout.orientation)
            header.hasAlpha = decoder.pointee.alphaPresent != 0
            header.bitDepth = Int(image.depth)
            return header
        }
    }

    /// The cropped size at 3 bytes a pixel (4 with alpha) for each frame decoded, beside libavif's own planes for one frame (up to
    /// 16 bits a sample, three planes and alpha), and a turned copy when the image has an orientation to apply.
    public func memoryEstimate(
        _ data: UnsafeRawBufferPointer, options: DecodingOptions
    ) throws(CodecError) -> DecodingEstimate {
        try AVIFDecoder.withParsedFile(data, options: options) { decoder throws(CodecError) in
            let image = try AVIFDecoder.image(of: decoder).pointee
            let layout = try AVIFDecoder.Layout(image)
            let frames = options.firstFrameOnly ? 1 : max(Int(decoder.pointee.imageCount), 1)
            let channels = decoder.pointee.alphaPresent != 0 ? 4 : 3
            let frameBytes = ImageDecoder.saturating(layout.crop.width, layout.crop.height, channels)
            let imageBytes = ImageDecoder.saturating(frameBytes, frames)
            let planes = ImageDecoder.saturating(Int(image.width), Int(image.height), 8)
            let upright = layout.orientation != .up && !options.keepsStoredOrientation ? imageBytes : 0
            return DecodingEstimate(
                width: layout.crop.width, height: layout.crop.height, channels: channels, frameCount: frames,
                imageBytes: imageBytes, peakBytes: ImageDecoder.saturating(sum: imageBytes, planes, upright))
        }
    }

    /// Decodes `data` as `options` ask (size, limits, frames, colour handling).
    public func decode(_ data: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        try AVIFDecoder.decode(data, options: options)
    }

    /// Encodes with libaom at ``EncodingOptions/quality`` (or losslessly), ``EncodingOptions/avifSpeed`` and the
    /// subsampling asked for; every frame of an animation, with its duration.
    public func encode(_ image: Image, options: EncodingOptions) throws(CodecError) -> [UInt8] {
        try AVIFEncoder.encode(
            image, metadata: ImageEncoder.containerMetadata(for: image, format: .avif, options: options),
            options: options)
    }
}

extension ImageFormat {
    /// AVIF: AV1 images in an ISO base media file (HEIF), stills (`avif`) and sequences (`avis`).
    public static let avif = ImageFormat(name: "avif", mimeType: "image/avif", fileExtension: "avif")
}

enum AVIFDecoder {
    /// What the container does to the coded image: the `clap` crop, then `irot` and `imir` as one orientation.
    struct Layout {
        var crop: (x: Int, y: Int, width: Int, height: Int)
        var orientation = ImageOrientation.up

        init(_ image: avifImage) throws(CodecError) {
            let width = Int(image.width)
            let height = Int(image.height)
            guard width > 0, height > 0 else { throw .invalidDimensions(width: width, height: height) }
            crop = (0, 0, width, height)
            let flags = image.transformFlags
            if flags & UInt32(AVIF_TRANSFORM_CLAP.rawValue) != 0 {
                crop = try AVIFDecoder.cleanAperture(image.clap, width: width, height: height)
            }
            let rotation = flags & UInt32(AVIF_TRANSFORM_IROT.rawValue) != 0 ? Int(image.irot.angle & 3) : 0
            let mirror = flags & UInt32(AVIF_TRANSFORM_IMIR.rawValue) != 0 ? Int(image.imir.mode & 1) : nil
            orientation = AVIFTransforms.orientation(rotation: rotation, mirror: mirror)
        }
    }

    /// The rectangle a `clap` box keeps: its width and height centred on the image's centre moved by its offsets
    /// (all four fractions), rounded to whole pixels. libavif's own conversion also refuses an origin that is not a
    /// whole pixel or, in 4:2:0, not even, which real files have (link-u's kimono.crop.avif): rounded here, as
    /// browsers show them.
    static func cleanAperture(
        _ clap: avifCleanApertureBox, width: Int, height: Int
    ) throws(CodecError) -> (x: Int, y: Int, width: Int, height: Int) {
        func fraction(_ numerator: UInt32, _ denominator: UInt32, signed: Bool) -> Double? {
            guard denominator != 0 else { return nil }
            let value = signed ? Double(Int32(bitPattern: numerator)) : Double(numerator)
            return value / Double(signed ? Double(Int32(bitPattern: denominator)) : Double(denominator))
        }
        guard let cropWidth = fraction(clap.widthN, clap.widthD, signed: false),
            let cropHeight = fraction(clap.heightN, clap.heightD, signed: false),
            let horizontal = fraction(clap.horizOffN, clap.horizOffD, signed: true),
            let vertical = fraction(clap.vertOffN, clap.vertOffD, signed: true),
            cropWidth.isFinite, cropHeight.isFinite, horizontal.isFinite, vertical.isFinite
        else { throw .malformed(format: .avif, reason: "its clean aperture (clap) divides by zero") }
        let x = ((Double(width) - cropWidth) / 2 + horizontal).rounded()
        let y = ((Double(height) - cropHeight) / 2 + vertical).rounded()
        let (w, h) = (cropWidth.rounded(), cropHeight.rounded())
        guard w >= 1, h >= 1, x >= 0, y >= 0, x + w <= Double(width), y + h <= Double(height) else {
            throw .malformed(format: .avif, reason: "its clean aperture (clap) lies outside the image")
        }
        return (Int(x), Int(y), Int(w), Int(h))
    }
}

extension AVIFDecoder {
    /// A frame's duration from libavif's timing, in seconds: at most a day, and none when it is not a number.
    static func duration(_ timing: avifImageTiming) -> Duration {
        let seconds = timing.duration
        return seconds.isFinite && seconds > 0 ? .nanoseconds(Int64(min(seconds, 86_400) * 1e9)) : .zero
    }

    /// What a sequence's sample table lists (its frames, their durations) and its edit list (the loop count), from
    /// the parse alone; a still is one frame.
    static func frames(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader.Frames {
        let avif = try SharedLibraries.avif
        return try withParsedFile(bytes, options: DecodingOptions()) {
            decoder throws(CodecError) -> ImageHeader.Frames in
            let count = Int(decoder.pointee.imageCount)
            guard count > 1 else { return ImageHeader.Frames(count: 1, loopCount: 0, durations: []) }
            var durations: [Duration] = []
            for index in 0..<count {
                var timing = avifImageTiming()
                try check(avif.avifDecoderNthImageTiming(decoder, UInt32(index), &timing), decoder)
                durations.append(duration(timing))
            }
            return ImageHeader.Frames(
                count: count, loopCount: SequenceRepetition.loopCount(in: bytes), durations: durations)
        }
    }

    /// Runs `body` on a libavif decoder that has parsed `bytes` (boxes read, nothing decoded), with the limits of
    /// `options` set before parsing.
    static func withParsedFile<Result>(
        _ bytes: UnsafeRawBufferPointer, options: DecodingOptions,
        _ body: (UnsafeMutablePointer<avifDecoder>) throws(CodecError) -> Result
    ) throws(CodecError) -> Result {
        let avif = try SharedLibraries.avif
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), !bytes.isEmpty else {
            throw .truncated(format: .avif)
        }
        guard let decoder = avif.avifDecoderCreate() else {
            throw .outOfMemory(byteCount: MemoryLayout<avifDecoder>.size)
        }
        defer { avif.avifDecoderDestroy(decoder) }
        let limits = options.limits
        // libavif's own ceilings (268 MP, 32,768 px a side) stay below ours; the pixel limit proper is checked after
        // the parse, where it can say which size was refused.
        let pixelCeiling = min(limits.maxPixelCount, limits.maxSourcePixelCount ?? .max, 16_384 * 16_384)
        decoder.pointee.imageSizeLimit = UInt32(clamping: max(pixelCeiling, 1))
        decoder.pointee.imageDimensionLimit = 32_768
        // A sequence's sample table is read whole at parse: bounded by the frame limit, or by libavif's default of
        // 12 hours at 60 frames a second when only the first frame is wanted.
        decoder.pointee.imageCountLimit = UInt32(
            clamping: options.firstFrameOnly ? 12 * 3_600 * 60 : limits.maxFrameCount)
        decoder.pointee.strictFlags = UInt32(AVIF_STRICT_DISABLED.rawValue)
        decoder.pointee.ignoreXMP = options.readsMetadata ? 0 : 1
        decoder.pointee.ignoreExif = options.readsMetadata ? 0 : 1
        try check(avif.avifDecoderSetIOMemory(decoder, base, bytes.count), decoder)
        try check(avif.avifDecoderParse(decoder), decoder)
        let image = try AVIFDecoder.image(of: decoder).pointee
        guard ImageDecoder.saturating(Int(image.width), Int(image.height)) <= pixelCeiling else {
            throw .tooManyPixels(width: Int(image.width), height: Int(image.height), limit: pixelCeiling)
        }
        return try body(decoder)
    }

    /// The decoder's image: the primary item's properties after a parse, the last frame's planes after a decode.
    static func image(
        of decoder: UnsafeMutablePointer<avifDecoder>
    ) throws(CodecError) -> UnsafeMutablePointer<avifImage> {
        guard let image = decoder.pointee.image else {
            throw .malformed(format: .avif, reason: "libavif made no image")
        }
        return image
    }

    /// Throws the ``CodecError`` for a libavif result other than success, with libavif's diagnostic.
    static func check(_ result: avifResult, _ decoder: UnsafeMutablePointer<avifDecoder>) throws(CodecError) {
        guard result != AVIF_RESULT_OK else { return }
        let avif = try SharedLibraries.avif
        let detail = decoder.pointee.diag.message
        let reason = avif.describe(result) + (detail.isEmpty ? "" : ": \(detail)")
        switch result {
        case AVIF_RESULT_TRUNCATED_DATA, AVIF_RESULT_WAITING_ON_IO: throw .truncated(format: .avif)
        case AVIF_RESULT_OUT_OF_MEMORY: throw .limitExceeded(format: .avif, reason: reason)
        case _ where detail.contains("too large") || detail.contains("exceeds"):
            throw .limitExceeded(format: .avif, reason: reason)
        default: throw .malformed(format: .avif, reason: reason)
        }
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        let avif = try SharedLibraries.avif
        return try withParsedFile(bytes, options: options) { decoder throws(CodecError) -> Image in
            let first = try AVIFDecoder.image(of: decoder).pointee
            let layout = try Layout(first)
            let limits = options.limits
            let frameCount = options.firstFrameOnly ? 1 : max(Int(decoder.pointee.imageCount), 1)
            guard frameCount <= limits.maxFrameCount else {
                throw .tooManyFrames(count: frameCount, limit: limits.maxFrameCount)
            }
            let framePixels = ImageDecoder.saturating(layout.crop.width, layout.crop.height)
            guard ImageDecoder.saturating(framePixels, frameCount) <= limits.maxPixelCount else {
                throw .tooManyPixels(
                    width: layout.crop.width, height: layout.crop.height * frameCount, limit: limits.maxPixelCount)
            }
            // dav1d's frame threads pay from about a megapixel up, as libwebp's second thread does.
            decoder.pointee.maxThreads = framePixels >= WebPDecoder.threadedPixelCount ? 2 : 1
            let hasAlpha = decoder.pointee.alphaPresent != 0
            // PQ and HLG without an ICC profile are tone-mapped to sRGB as they are converted from YUV.
            let toneMapping = HDRToneMapping.Transfer(codePoint: Int(first.transferCharacteristics)).flatMap {
                transfer -> (HDRToneMapping.Transfer, primaries: Int)? in
                guard first.icc.size == 0, options.colorHandling != .ignore else { return nil }
                return (transfer, Int(first.colorPrimaries))
            }
            var frames: [ImageFrame] = []
            for index in 0..<frameCount {
                let result = avif.avifDecoderNextImage(decoder)
                guard result == AVIF_RESULT_OK else {
                    if options.allowsPartialImages, !frames.isEmpty { break }
                    try check(result, decoder)
                    throw .malformed(format: .avif, reason: "frame \(index + 1) did not decode")
                }
                let image = try AVIFDecoder.image(of: decoder)
                // Every frame of a sequence has the first one's size; a file that says otherwise is damaged.
                guard image.pointee.width == first.width, image.pointee.height == first.height else {
                    throw .malformed(format: .avif, reason: "frame \(index + 1) is not the size of the first")
                }
                let pixels = try rgb(of: image, alpha: hasAlpha, crop: layout.crop, toneMapping: toneMapping)
                frames.append(ImageFrame(pixels: pixels, duration: duration(decoder.pointee.imageTiming)))
            }
            let last = try AVIFDecoder.image(of: decoder).pointee
            let colour =
                toneMapping == nil ? colourDescription(of: last, options: options) : (profile: nil, warnings: [])
            // libavif 0.11 does not read a sequence's edit list, which says how often it repeats: read here.
            let loopCount = frames.count > 1 ? SequenceRepetition.loopCount(in: bytes) : 0
            var image = try Image(
                frames: frames, loopCount: loopCount, orientation: layout.orientation, sourceFormat: .avif)
            image.colorProfile = colour.profile
            image.warnings = colour.warnings
            if options.readsMetadata {
                image.metadata = metadata(of: last)
            }
            return image
        }
    }

    /// The profile the colour stage converts from: the embedded ICC profile, else one made from the `nclx` primaries
    /// and transfer; none for sRGB (or unspecified) colours.
    private static func colourDescription(
        of image: avifImage, options: DecodingOptions
    ) -> (profile: ColorProfile?, warnings: [DecodingWarning]) {
        guard options.colorHandling != .ignore else { return (nil, []) }
        if image.icc.size > 0, let data = image.icc.data {
            let bytes = Array(UnsafeBufferPointer(start: data, count: image.icc.size))
            if let profile = ColorProfile(data: bytes) { return (profile, []) }
            return (nil, [.colorProfileIgnored(reason: "its ICC profile is damaged or not one Little CMS can read")])
        }
        switch CodingIndependentCodePoints.profile(
            primaries: Int(image.colorPrimaries), transfer: Int(image.transferCharacteristics))
        {
        case .none: return (nil, [])
        case .found(let profile): return (profile, [])
        case .unusable(let reason): return (nil, [.colorProfileIgnored(reason: reason)])
        }
    }

    /// The colours the file declares, read without decoding: its ICC profile, else a profile from its `nclx`.
    static func embeddedColour(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> ColorProfile.Lookup {
        try withParsedFile(bytes, options: DecodingOptions()) { decoder throws(CodecError) in
            let image = try AVIFDecoder.image(of: decoder).pointee
            if image.icc.size > 0, let data = image.icc.data {
                let bytes = Array(UnsafeBufferPointer(start: data, count: image.icc.size))
                return ColorProfile(data: bytes).map(ColorProfile.Lookup.found) ?? .unusable("a damaged ICC profile")
            }
            return CodingIndependentCodePoints.profile(
                primaries: Int(image.colorPrimaries), transfer: Int(image.transferCharacteristics))
        }
    }

    /// The EXIF and XMP the file carries (libavif reads them from their items).
    static func metadata(of image: avifImage) -> ImageMetadata {
        var metadata = ImageMetadata()
        if image.exif.size > 0, let data = image.exif.data {
            metadata.exif = Array(UnsafeBufferPointer(start: data, count: image.exif.size))
        }
        if image.xmp.size > 0, let data = image.xmp.data {
            metadata.xmp = Array(UnsafeBufferPointer(start: data, count: image.xmp.size))
        }
        return metadata
    }
}

extension PixelBuffer {
    /// The rectangle at (`x`, `y`) of `width` × `height` pixels, which must lie inside the buffer.
    func cropped(x: Int, y: Int, width: Int, height: Int) throws(CodecError) -> PixelBuffer {
        precondition(
            x >= 0 && y >= 0 && width > 0 && height > 0 && x + width <= self.width && y + height <= self.height)
        var result = try PixelBuffer(width: width, height: height, format: format)
        let pixelSize = format.bytesPerPixel
        let sourceStride = bytesPerRow
        let destinationStride = result.bytesPerRow
        withUnsafeBytes { source in
            result.withUnsafeMutableBytes { destination in
                for row in 0..<height {
                    let from = source.baseAddress! + (y + row) * sourceStride + x * pixelSize
                    let to = destination.baseAddress! + row * destinationStride
                    to.copyMemory(from: from, byteCount: width * pixelSize)
                }
            }
        }
        return result
    }
}

/// `irot` and `imir` as the one orientation that shows the image the same way.
enum AVIFTransforms {
    /// The orientation that shows the stored image as `irot` (anticlockwise quarter turns) then `imir` (mode 0:
    /// top and bottom exchanged; 1: left and right) do. Each is a matrix on (x, y), y pointing down; the
    /// product is looked up among the eight EXIF orientations' own matrices.
    static func orientation(rotation: Int, mirror: Int?) -> ImageOrientation {
        typealias Matrix = (Int, Int, Int, Int)  // (a, b, c, d): (x, y) → (a·x + b·y, c·x + d·y)
        func product(_ m: Matrix, _ n: Matrix) -> Matrix {
            (m.0 * n.0 + m.1 * n.2, m.0 * n.1 + m.1 * n.3, m.2 * n.0 + m.3 * n.2, m.2 * n.1 + m.3 * n.3)
        }
        // An anticlockwise quarter turn on screen, y down: (x, y) → (y, −x).
        var turned: Matrix = (1, 0, 0, 1)
        for _ in 0..<rotation { turned = product((0, 1, -1, 0), turned) }
        let mirrored: Matrix =
            switch mirror {
            case 0?: product((1, 0, 0, -1), turned)
            case 1?: product((-1, 0, 0, 1), turned)
            default: turned
            }
        let table: [(ImageOrientation, Matrix)] = [
            (.up, (1, 0, 0, 1)), (.upMirrored, (-1, 0, 0, 1)), (.down, (-1, 0, 0, -1)),
            (.downMirrored, (1, 0, 0, -1)), (.left, (0, 1, -1, 0)), (.right, (0, -1, 1, 0)),
            (.leftMirrored, (0, 1, 1, 0)), (.rightMirrored, (0, -1, -1, 0)),
        ]
        return table.first { $0.1 == mirrored }?.0 ?? .up
    }
}

extension avifDiagnostics {
    /// libavif's last diagnostic (a NUL-terminated string in a fixed array), empty when it gave none.
    var message: String {
        withUnsafeBytes(of: error) { bytes in String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
