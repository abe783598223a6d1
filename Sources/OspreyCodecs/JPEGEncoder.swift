internal import COspreyLibraryLoader

/// JPEG through TurboJPEG, which reports errors by return value (no long jumps to wrap).
enum JPEGEncoder {
    static func encode(_ pixels: PixelBuffer, options: EncodingOptions) throws(CodecError) -> [UInt8] {
        let background = options.background
        let opaque = try pixels.flattened(red: background.red, green: background.green, blue: background.blue)
        let turbojpeg = try SharedLibraries.turbojpeg
        guard let handle = turbojpeg.tjInitCompress() else {
            throw .encodingFailed(format: .jpeg, reason: turboJPEGError(turbojpeg, nil))
        }
        defer { _ = turbojpeg.tjDestroy(handle) }
        let isGray = opaque.format == .gray8
        let subsampling: TJSAMP =
            if isGray {
                TJSAMP_GRAY
            } else {
                switch options.chromaSubsampling {
                case .yuv444: TJSAMP_444
                case .yuv422: TJSAMP_422
                case .yuv420: TJSAMP_420
                case .automatic: options.quality >= 90 ? TJSAMP_444 : TJSAMP_420
                }
            }
        var flags = TJFLAG_ACCURATEDCT
        if options.isProgressive { flags |= TJFLAG_PROGRESSIVE }
        var output: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let status = opaque.withUnsafeBytes { bytes in
            turbojpeg.tjCompress2(
                handle, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(opaque.width),
                Int32(opaque.bytesPerRow), Int32(opaque.height),
                Int32(isGray ? TJPF_GRAY.rawValue : TJPF_RGB.rawValue), &output, &size, Int32(subsampling.rawValue),
                Int32(min(max(options.quality, 1), 100)), flags)
        }
        defer { turbojpeg.tjFree(output) }
        guard status == 0, let output else {
            throw .encodingFailed(format: .jpeg, reason: turboJPEGError(turbojpeg, handle))
        }
        return Array(UnsafeBufferPointer(start: output, count: Int(size)))
    }

    /// TurboJPEG's last error message for `handle` (or its global one).
    private static func turboJPEGError(_ turbojpeg: osprey_turbojpeg_functions, _ handle: tjhandle?) -> String {
        turbojpeg.tjGetErrorStr2(handle).map { String(cString: $0) } ?? "TurboJPEG failed"
    }
}
