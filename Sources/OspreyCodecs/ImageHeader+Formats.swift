internal import COspreyCodecShims
internal import COspreyLibraryLoader

extension ImageHeader {
    static func readJPEG(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader {
        _ = try SharedLibraries.jpeg  // opened here, so that a missing library is not reported as a malformed file
        var header = osprey_jpeg_header()
        let (status, message) = withMessageBuffer { message in
            osprey_jpeg_read_header(
                bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &header, message)
        }
        guard status == 0 else { throw .malformed(format: .jpeg, reason: message) }
        let orientation = EXIF.jpegPayload(in: bytes).flatMap(EXIF.orientation(in:)) ?? .up
        var result = try validated(.jpeg, Int(header.width), Int(header.height), orientation: orientation)
        result.channels = header.components == 1 ? 1 : 3  // CMYK and YCCK come out RGB
        result.storedChannels = Int(header.components)
        result.workingBytes = Int(clamping: header.coefficientBytes)
        result.bitDepth = Int(header.precision)
        return result
    }

    static func readPNG(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader {
        _ = try SharedLibraries.png  // as libjpeg is in readJPEG
        var header = osprey_png_header()
        let (status, message) = withMessageBuffer { message in
            osprey_png_read_header(
                bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &header, message)
        }
        guard status == 0 else { throw .malformed(format: .png, reason: message) }
        let orientation = EXIF.pngPayload(in: bytes).flatMap(EXIF.orientation(in:)) ?? .up
        var result = try validated(.png, Int(header.width), Int(header.height), orientation: orientation)
        // The decoder's 8-bit output: gray, gray and alpha, RGB or RGBA, a tRNS chunk adding alpha.
        let transparency = PNGChunks.contains("tRNS", in: bytes) ? 1 : 0
        switch header.colorType {
        case 0: result.channels = 1 + transparency  // gray
        case 4: result.channels = 2  // gray and alpha
        case 2, 3: result.channels = 3 + transparency  // RGB, palette
        default: result.channels = 4
        }
        result.hasAlpha = result.channels == 2 || result.channels == 4
        // A palette's entries are 8-bit whatever the depth of its indices.
        result.bitDepth = header.colorType == 3 ? 8 : Int(header.bitDepth)
        return result
    }

    static func readWebP(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader {
        let libwebp = try SharedLibraries.webp
        var features = WebPBitstreamFeatures()
        let status = libwebp.getFeatures(
            bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &features)
        guard status == VP8_STATUS_OK else {
            throw .malformed(format: .webp, reason: webPStatusDescription(status))
        }
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { throw .truncated(format: .webp) }
        let orientation = try WebPDecoder.Container(base, count: bytes.count).orientation
        var result = try validated(.webp, Int(features.width), Int(features.height), orientation: orientation)
        result.channels = features.has_alpha != 0 || features.has_animation != 0 ? 4 : 3
        result.hasAlpha = features.has_alpha != 0
        return result
    }

    static func readGIF(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader {
        // DGifOpen reads the signature and the logical screen descriptor, nothing more.
        var header = try withGIFFile(bytes) { gif, _ throws(CodecError) in
            try validated(.gif, Int(gif.pointee.SWidth), Int(gif.pointee.SHeight))
        }
        var blocks = GIFBlocks(bytes)
        _ = blocks.frames()
        header.hasAlpha = blocks.hasTransparency
        return header
    }

    private static func validated(
        _ format: ImageFormat, _ width: Int, _ height: Int, orientation: ImageOrientation = .up
    ) throws(CodecError) -> ImageHeader {
        guard width > 0, height > 0 else { throw .invalidDimensions(width: width, height: height) }
        return ImageHeader(format: format, width: width, height: height, orientation: orientation)
    }
}

/// Calls a shim with a message buffer of `OSPREY_MESSAGE_CAPACITY` bytes and returns its status and message.
func withMessageBuffer(_ body: (UnsafeMutablePointer<CChar>) -> Int32) -> (Int32, String) {
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(OSPREY_MESSAGE_CAPACITY)) { buffer in
        buffer.initialize(repeating: 0)
        let status = body(buffer.baseAddress!)
        return (status, String(cString: buffer.baseAddress!))
    }
}

/// A cursor over bytes in memory, for C libraries that pull their input through a read callback.
struct MemorySource {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    /// Copies up to `count` bytes to `destination` and returns how many were copied.
    mutating func read(into destination: UnsafeMutableRawPointer, count: Int) -> Int {
        let available = min(count, bytes.count - offset)
        guard available > 0, let base = bytes.baseAddress else { return 0 }
        destination.copyMemory(from: base + offset, byteCount: available)
        offset += available
        return available
    }
}

/// Opens `bytes` with giflib (which reads the signature and the logical screen descriptor), runs `body` with the open
/// file and giflib's functions, and closes it.
func withGIFFile<Result>(
    _ bytes: UnsafeRawBufferPointer,
    _ body: (UnsafeMutablePointer<GifFileType>, osprey_gif_functions) throws(CodecError) -> Result
) throws(CodecError) -> Result {
    let giflib = try SharedLibraries.gif
    var source = MemorySource(bytes: bytes)
    return try withUnsafeMutablePointer(to: &source) { source throws(CodecError) -> Result in
        var errorCode: Int32 = 0
        guard let gif = giflib.DGifOpen(source, readFromMemorySource, &errorCode) else {
            throw .malformed(format: .gif, reason: gifErrorDescription(errorCode))
        }
        defer { _ = giflib.DGifCloseFile(gif, nil) }
        return try body(gif, giflib)
    }
}

/// giflib's InputFunc over a ``MemorySource`` stored in `UserData`.
private func readFromMemorySource(
    _ gif: UnsafeMutablePointer<GifFileType>?,
    _ destination: UnsafeMutablePointer<GifByteType>?,
    _ count: Int32
) -> Int32 {
    guard let gif, let destination, count > 0,
        let source = gif.pointee.UserData?.assumingMemoryBound(to: MemorySource.self)
    else { return 0 }
    return Int32(source.pointee.read(into: destination, count: Int(count)))
}

func gifErrorDescription(_ code: Int32) -> String {
    (try? SharedLibraries.gif)?.GifErrorString(code).map { String(cString: $0) } ?? "giflib error \(code)"
}

func webPStatusDescription(_ status: VP8StatusCode) -> String {
    switch status {
    case VP8_STATUS_OUT_OF_MEMORY: "out of memory"
    case VP8_STATUS_INVALID_PARAM: "invalid parameter"
    case VP8_STATUS_BITSTREAM_ERROR: "bitstream error"
    case VP8_STATUS_UNSUPPORTED_FEATURE: "unsupported feature"
    case VP8_STATUS_SUSPENDED: "suspended"
    case VP8_STATUS_USER_ABORT: "aborted"
    case VP8_STATUS_NOT_ENOUGH_DATA: "not enough data"
    default: "status \(status.rawValue)"
    }
}
