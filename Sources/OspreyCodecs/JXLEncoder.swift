internal import COspreyLibraryLoader

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// JPEG XL through libjxl: 8-bit stills and animations, alpha, lossy at a distance from ``EncodingOptions/quality``
/// (``distance(forQuality:)``) or lossless, at ``EncodingOptions/jxlEffort``; sRGB, or the kept ICC profile.
enum JXLEncoder {
    /// The Butteraugli distance for a 0…100 quality: 0.1 + (100 − q)·0.045 from 30 up (quality 90 is distance
    /// 0.55), then linearly to 25 at 0. Half cjxl's slope, so that a quality means what it means for the other
    /// formats: at 90, JPEG, WebP and AVIF reach 38 dB PSNR on the corpus photos, and so does JPEG XL at 0.55, where
    /// cjxl's distance 1.0 gives 34.9–36.4 dB.
    static func distance(forQuality quality: Int) -> Float {
        let q = Double(min(max(quality, 0), 100))
        let atThirty = 0.1 + 70 * 0.045
        let distance = q >= 30 ? 0.1 + (100 - q) * 0.045 : atThirty + (30 - q) * (25 - atThirty) / 30
        return Float(distance)
    }

    static func encode(
        _ image: Image, metadata: ContainerMetadata, options: EncodingOptions
    ) throws(CodecError) -> [UInt8] {
        let jxl = try SharedLibraries.jxl
        guard let encoder = jxl.JxlEncoderCreate(nil) else {
            throw .encodingFailed(format: .jxl, reason: "libjxl could not make an encoder")
        }
        defer { jxl.JxlEncoderDestroy(encoder) }
        let alpha = image.pixelFormat.hasAlpha
        let channels = alpha ? 4 : 3
        var info = JxlBasicInfo()
        jxl.JxlEncoderInitBasicInfo(&info)
        info.xsize = UInt32(image.width)
        info.ysize = UInt32(image.height)
        info.bits_per_sample = 8
        info.num_color_channels = 3
        info.uses_original_profile = options.isLossless || metadata.profile != nil ? 1 : 0
        if alpha {
            info.alpha_bits = 8
            info.num_extra_channels = 1
        }
        let animated = image.frames.count > 1
        if animated {
            info.have_animation = 1
            info.animation.tps_numerator = 1_000
            info.animation.tps_denominator = 1
            info.animation.num_loops = UInt32(clamping: image.loopCount)
        }
        try check(jxl.JxlEncoderSetBasicInfo(encoder, &info), encoder, "basic info")
        if let profile = metadata.profile {
            try check(jxl.JxlEncoderSetICCProfile(encoder, profile, profile.count), encoder, "ICC profile")
        } else {
            var srgb = JxlColorEncoding()
            jxl.JxlColorEncodingSetToSRGB(&srgb, 0)
            try check(jxl.JxlEncoderSetColorEncoding(encoder, &srgb), encoder, "colour encoding")
        }
        guard let settings = jxl.JxlEncoderFrameSettingsCreate(encoder, nil) else {
            throw .encodingFailed(format: .jxl, reason: "libjxl could not make frame settings")
        }
        let effort = Int64(min(max(options.jxlEffort, 1), 9))
        try check(
            jxl.JxlEncoderFrameSettingsSetOption(settings, JXL_ENC_FRAME_SETTING_EFFORT, effort), encoder, "effort")
        if options.isLossless {
            try check(jxl.JxlEncoderSetFrameLossless(settings, 1), encoder, "lossless")
        } else {
            try check(
                jxl.JxlEncoderSetFrameDistance(settings, distance(forQuality: options.quality)), encoder, "distance")
        }
        var format = JxlPixelFormat(
            num_channels: UInt32(channels), data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
        for (index, frame) in image.frames.enumerated() {
            if animated {
                var header = JxlFrameHeader()
                jxl.JxlEncoderInitFrameHeader(&header)
                let milliseconds =
                    frame.duration.components.seconds * 1_000 + frame.duration.components.attoseconds
                    / 1_000_000_000_000_000
                header.duration = UInt32(clamping: max(milliseconds, 0))
                try check(jxl.JxlEncoderSetFrameHeader(settings, &header), encoder, "frame \(index + 1) header")
            }
            let pixels = try frame.pixels.converted(to: alpha ? .rgba8 : .rgb8)
            // Rows packed, as libjxl reads them.
            var packed = [UInt8]()
            packed.reserveCapacity(pixels.width * pixels.height * channels)
            for y in 0..<pixels.height { packed += pixels.row(y) }
            let status = packed.withUnsafeBytes { bytes in
                jxl.JxlEncoderAddImageFrame(settings, &format, bytes.baseAddress, bytes.count)
            }
            try check(status, encoder, "frame \(index + 1)")
        }
        jxl.JxlEncoderCloseInput(encoder)
        var output = [UInt8](repeating: 0, count: 1 << 16)
        var written = 0
        while true {
            let status = output.withUnsafeMutableBufferPointer { buffer -> JxlEncoderStatus in
                var next: UnsafeMutablePointer<UInt8>? = buffer.baseAddress! + written
                var available = buffer.count - written
                let status = jxl.JxlEncoderProcessOutput(encoder, &next, &available)
                written = buffer.count - available
                return status
            }
            if status == JXL_ENC_SUCCESS { break }
            guard status == JXL_ENC_NEED_MORE_OUTPUT else { try check(status, encoder, "the file"); break }
            output += [UInt8](repeating: 0, count: output.count)
        }
        return Array(output.prefix(written))
    }

    private static func check(
        _ status: JxlEncoderStatus, _ encoder: OpaquePointer, _ what: String
    ) throws(CodecError) {
        let jxl = try SharedLibraries.jxl
        guard status != JXL_ENC_SUCCESS else { return }
        let error = jxl.JxlEncoderGetError(encoder)
        throw .encodingFailed(format: .jxl, reason: "\(what): libjxl error \(error.rawValue)")
    }
}
