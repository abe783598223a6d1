internal import COspreyLibraryLoader

/// AVIF frames to 8-bit RGB(A): libavif's YUV conversion, Osprey's for the reversible YCgCo matrices libavif leaves
/// out, and HDR frames tone-mapped to sRGB.
extension AVIFDecoder {
    /// The decoded frame as 8-bit RGB or RGBA, within `crop`; tone-mapped to sRGB from `toneMapping`'s HDR
    /// transfer and primaries when given.
    static func rgb(
        of image: UnsafeMutablePointer<avifImage>, alpha: Bool, crop: (x: Int, y: Int, width: Int, height: Int),
        toneMapping: (HDRToneMapping.Transfer, primaries: Int)?
    ) throws(CodecError) -> PixelBuffer {
        let format: PixelFormat = alpha ? .rgba8 : .rgb8
        let full =
            if let toneMapping {
                try toneMapped(image, format: format, transfer: toneMapping.0, primaries: toneMapping.primaries)
            } else {
                try eightBit(image, format: format)
            }
        guard crop != (0, 0, full.width, full.height) else { return full }
        return try full.cropped(x: crop.x, y: crop.y, width: crop.width, height: crop.height)
    }

    /// The frame converted from YUV by libavif at 8 bits (or by Osprey, for the YCgCo-R matrices).
    private static func eightBit(
        _ image: UnsafeMutablePointer<avifImage>, format: PixelFormat
    ) throws(CodecError) -> PixelBuffer {
        let avif = try SharedLibraries.avif
        let alpha = format.hasAlpha
        var full = try PixelBuffer(width: Int(image.pointee.width), height: Int(image.pointee.height), format: format)
        let bytesPerRow = full.bytesPerRow
        let result = full.withUnsafeMutableBytes { buffer -> avifResult in
            var rgb = avifRGBImage()
            avif.avifRGBImageSetDefaults(&rgb, image)
            rgb.depth = 8
            rgb.format = alpha ? AVIF_RGB_FORMAT_RGBA : AVIF_RGB_FORMAT_RGB
            // Chroma upsampled bilinearly, as browsers do (libheif 1.15 replicates samples: nearest neighbour).
            rgb.chromaUpsampling = AVIF_CHROMA_UPSAMPLING_BILINEAR
            // Straight alpha, as every other decoder gives it; libavif divides a premultiplied file's out.
            rgb.alphaPremultiplied = 0
            rgb.pixels = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
            rgb.rowBytes = UInt32(bytesPerRow)
            return avif.avifImageYUVToRGB(image, &rgb)
        }
        guard result == AVIF_RESULT_OK || reversibleYCgCoToRGB(image, into: &full, alpha: alpha) else {
            throw conversionFailure(result, avif)
        }
        return full
    }

    /// The error for a YUV-to-RGB conversion libavif refused.
    private static func conversionFailure(_ result: avifResult, _ avif: osprey_avif_functions) -> CodecError {
        .malformed(format: .avif, reason: "its pixels cannot be converted to RGB: " + avif.describe(result))
    }

    /// The frame converted from YUV at 16 bits, then tone-mapped to 8-bit sRGB.
    private static func toneMapped(
        _ image: UnsafeMutablePointer<avifImage>, format: PixelFormat, transfer: HDRToneMapping.Transfer,
        primaries: Int
    ) throws(CodecError) -> PixelBuffer {
        let avif = try SharedLibraries.avif
        let (width, height) = (Int(image.pointee.width), Int(image.pointee.height))
        let channels = format.bytesPerPixel
        let count = ImageDecoder.saturating(width, height, channels)
        guard count <= Int(Int32.max) else {
            throw .tooManyPixels(width: width, height: height, limit: Int(Int32.max) / channels)
        }
        var samples = [UInt16](repeating: 0, count: count)
        let result = samples.withUnsafeMutableBufferPointer { buffer -> avifResult in
            var rgb = avifRGBImage()
            avif.avifRGBImageSetDefaults(&rgb, image)
            rgb.depth = 16
            rgb.format = channels == 4 ? AVIF_RGB_FORMAT_RGBA : AVIF_RGB_FORMAT_RGB
            rgb.chromaUpsampling = AVIF_CHROMA_UPSAMPLING_BILINEAR
            rgb.alphaPremultiplied = 0
            rgb.pixels = UnsafeMutableRawPointer(buffer.baseAddress)?.assumingMemoryBound(to: UInt8.self)
            rgb.rowBytes = UInt32(width * channels * 2)
            return avif.avifImageYUVToRGB(image, &rgb)
        }
        guard result == AVIF_RESULT_OK else { throw conversionFailure(result, avif) }
        return try samples.withUnsafeBufferPointer { buffer throws(CodecError) in
            try HDRToneMapping.sRGB(
                from: buffer, width: width, height: height, rowLength: width * channels, format: format,
                transfer: transfer, primaries: primaries)
        }
    }

    /// Converts the lossless YCgCo-R matrices of H.273 (16: YCgCo-Re, RGB two bits below the coded depth; 17:
    /// YCgCo-Ro, one bit below), which libavif 0.11 predates, for 4:4:4 full-range images; `false` for anything else.
    /// The inverse lifting: t = Y − ⌊Cg/2⌋, G = Cg + t, B = t − ⌊Co/2⌋, R = B + Co, with Cg and Co centred on
    /// half the coded range.
    private static func reversibleYCgCoToRGB(
        _ image: UnsafeMutablePointer<avifImage>, into pixels: inout PixelBuffer, alpha: Bool
    ) -> Bool {
        let source = image.pointee
        let coefficients = Int(source.matrixCoefficients)
        guard coefficients == 16 || coefficients == 17, source.yuvFormat == AVIF_PIXEL_FORMAT_YUV444,
            source.yuvRange == AVIF_RANGE_FULL,
            source.depth > 8, source.depth <= 16,
            let yPlane = source.yuvPlanes.0, let cgPlane = source.yuvPlanes.1, let coPlane = source.yuvPlanes.2
        else { return false }
        let depth = Int(source.depth)
        let rgbMaximum = (1 << (depth - (coefficients == 16 ? 2 : 1))) - 1
        let alphaMaximum = (1 << depth) - 1
        let offset = 1 << (depth - 1)
        let rowBytes = (Int(source.yuvRowBytes.0), Int(source.yuvRowBytes.1), Int(source.yuvRowBytes.2))
        let channels = pixels.format.bytesPerPixel
        let stride = pixels.bytesPerRow
        let (width, height) = (pixels.width, pixels.height)
        func sample(_ plane: UnsafeMutablePointer<UInt8>, _ rowBytes: Int, _ x: Int, _ y: Int) -> Int {
            Int(UnsafeRawPointer(plane + y * rowBytes).load(fromByteOffset: x * 2, as: UInt16.self))
        }
        func eight(_ value: Int, _ maximum: Int) -> UInt8 {
            UInt8((min(max(value, 0), maximum) * 255 + maximum / 2) / maximum)
        }
        pixels.withUnsafeMutableBytes { buffer in
            for y in 0..<height {
                let row = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self) + y * stride
                for x in 0..<width {
                    let luma = sample(yPlane, rowBytes.0, x, y)
                    let cg = sample(cgPlane, rowBytes.1, x, y) - offset
                    let co = sample(coPlane, rowBytes.2, x, y) - offset
                    let t = luma - (cg >> 1)
                    let green = cg + t
                    let blue = t - (co >> 1)
                    let red = blue + co
                    let pixel = row + x * channels
                    pixel[0] = eight(red, rgbMaximum)
                    pixel[1] = eight(green, rgbMaximum)
                    pixel[2] = eight(blue, rgbMaximum)
                    if alpha {
                        pixel[3] =
                            source.alphaPlane.map { eight(sample($0, Int(source.alphaRowBytes), x, y), alphaMaximum) }
                            ?? 255
                    }
                }
            }
        }
        return true
    }
}
