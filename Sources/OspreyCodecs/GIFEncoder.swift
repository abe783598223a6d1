internal import COspreyLibraryLoader
import Synchronization

/// giflib's median cut (`GifQuantizeBuffer`) sorts with a comparator that reads a global, the colour axis being split:
/// two quantisations at once read each other's axis and come out with other palettes. One at a time, process-wide.
private let quantizing = Mutex(())

/// GIF through giflib: each frame quantised to its own palette of up to 256 colours (giflib's median cut), one index
/// kept for transparency when a frame has any; animations carry their delays and a NETSCAPE2.0 loop block.
enum GIFEncoder {
    static func encode(_ frames: [ImageFrame], loopCount: Int) throws(CodecError) -> [UInt8] {
        let canvas = frames[0].pixels
        guard canvas.width <= 65_535, canvas.height <= 65_535 else {
            throw .encodingFailed(format: .gif, reason: "GIF images are at most 65535x65535")
        }
        let giflib = try SharedLibraries.gif
        var output: [UInt8] = []
        return try withUnsafeMutablePointer(to: &output) { output throws(CodecError) -> [UInt8] in
            var error: Int32 = 0
            guard let gif = giflib.EGifOpen(output, appendToOutput, &error) else {
                throw .encodingFailed(format: .gif, reason: gifErrorDescription(error))
            }
            var closed = false
            defer { if !closed { _ = giflib.EGifCloseFile(gif, nil) } }
            giflib.EGifSetGifVersion(gif, true)
            guard giflib.EGifPutScreenDesc(gif, Int32(canvas.width), Int32(canvas.height), 8, 0, nil) == GIF_OK else {
                throw failure(gif)
            }
            let animated = frames.count > 1
            if animated, loopCount != 1 {
                try putLoopBlock(gif, count: min(loopCount, 65_535))
            }
            // Frames are whole canvases: each replaces the last, so transparent areas must not show the one before.
            let transparent = frames.contains { $0.pixels.hasTransparentPixels }
            for frame in frames {
                try putFrame(
                    gif, frame, animated: animated, disposal: transparent ? DISPOSE_BACKGROUND : DISPOSE_DO_NOT)
            }
            closed = true
            guard giflib.EGifCloseFile(gif, &error) == GIF_OK else {
                throw .encodingFailed(format: .gif, reason: gifErrorDescription(error))
            }
            return output.pointee
        }
    }

    private static func putLoopBlock(_ gif: UnsafeMutablePointer<GifFileType>, count: Int) throws(CodecError) {
        let identifier = Array("NETSCAPE2.0".utf8)
        let loop: [UInt8] = [1, UInt8(count & 0xFF), UInt8(count >> 8)]
        let giflib = try SharedLibraries.gif
        guard giflib.EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE) == GIF_OK,
            identifier.withUnsafeBytes({ giflib.EGifPutExtensionBlock(gif, 11, $0.baseAddress) }) == GIF_OK,
            loop.withUnsafeBytes({ giflib.EGifPutExtensionBlock(gif, 3, $0.baseAddress) }) == GIF_OK,
            giflib.EGifPutExtensionTrailer(gif) == GIF_OK
        else { throw failure(gif) }
    }

    private static func putFrame(
        _ gif: UnsafeMutablePointer<GifFileType>, _ frame: ImageFrame, animated: Bool, disposal: Int32
    ) throws(CodecError) {
        let giflib = try SharedLibraries.gif
        let rgba = try frame.pixels.converted(to: .rgba8)
        let (width, height) = (rgba.width, rgba.height)
        let count = width * height
        var red = [UInt8](repeating: 0, count: count)
        var green = [UInt8](repeating: 0, count: count)
        var blue = [UInt8](repeating: 0, count: count)
        var isTransparent = [Bool](repeating: false, count: count)
        rgba.withUnsafeBytes { bytes in
            for index in 0..<count {
                red[index] = bytes[index * 4]
                green[index] = bytes[index * 4 + 1]
                blue[index] = bytes[index * 4 + 2]
                isTransparent[index] = bytes[index * 4 + 3] < 128
            }
        }
        let hasTransparency = isTransparent.contains(true)
        var colorCount: Int32 = hasTransparency ? 255 : 256
        var indices = [GifByteType](repeating: 0, count: count)
        var colors = [GifColorType](repeating: GifColorType(Red: 0, Green: 0, Blue: 0), count: 256)
        let quantized = quantizing.withLock { _ in
            giflib.GifQuantizeBuffer(UInt32(width), UInt32(height), &colorCount, &red, &green, &blue, &indices, &colors)
        }
        guard quantized == GIF_OK else { throw .encodingFailed(format: .gif, reason: "cannot quantise the colours") }
        if hasTransparency {
            for index in 0..<count where isTransparent[index] { indices[index] = 255 }
        }
        // Colour tables have a power-of-two size: pad to 256 entries.
        guard let map = giflib.GifMakeMapObject(256, &colors) else {
            throw .encodingFailed(format: .gif, reason: "out of memory for the colour table")
        }
        defer { giflib.GifFreeMapObject(map) }

        if animated || hasTransparency {
            let milliseconds = Int(frame.duration / .milliseconds(1))
            var control = GraphicsControlBlock(
                DisposalMode: animated ? disposal : DISPOSAL_UNSPECIFIED, UserInputFlag: false,
                DelayTime: Int32(animated ? max(2, (milliseconds + 5) / 10) : 0),
                TransparentColor: hasTransparency ? 255 : NO_TRANSPARENT_COLOR)
            var extensionBytes = [GifByteType](repeating: 0, count: 4)
            let length = giflib.EGifGCBToExtension(&control, &extensionBytes)
            guard giflib.EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, Int32(length), extensionBytes) == GIF_OK else {
                throw failure(gif)
            }
        }
        guard giflib.EGifPutImageDesc(gif, 0, 0, Int32(width), Int32(height), false, map) == GIF_OK else {
            throw failure(gif)
        }
        for y in 0..<height {
            let status = indices.withUnsafeMutableBufferPointer { buffer in
                giflib.EGifPutLine(gif, buffer.baseAddress! + y * width, Int32(width))
            }
            guard status == GIF_OK else { throw failure(gif) }
        }
    }

    private static func failure(_ gif: UnsafeMutablePointer<GifFileType>) -> CodecError {
        .encodingFailed(format: .gif, reason: gifErrorDescription(gif.pointee.Error))
    }
}

/// giflib's OutputFunc: appends to the `[UInt8]` in `UserData`.
private func appendToOutput(
    _ gif: UnsafeMutablePointer<GifFileType>?, _ bytes: UnsafePointer<GifByteType>?, _ count: Int32
) -> Int32 {
    guard let gif, let bytes, count > 0, let output = gif.pointee.UserData?.assumingMemoryBound(to: [UInt8].self) else {
        return 0
    }
    output.pointee.append(contentsOf: UnsafeBufferPointer(start: bytes, count: Int(count)))
    return count
}
