internal import COspreyCodecShims
internal import COspreyLibraryLoader

/// GIF through giflib, record by record, so that limits are checked before each frame is kept and every frame is
/// composited onto the logical screen as browsers do.
enum GIFDecoder {
    static func decode(_ bytes: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        try withGIFFile(bytes) { gif, giflib throws(CodecError) in
            var reader = GIFReader(gif: gif, giflib: giflib, options: options)
            return try reader.read()
        }
    }
}

/// The state of one GIF decode: the canvas, the frames so far, the pending graphic control block.
private struct GIFReader {
    let gif: UnsafeMutablePointer<GifFileType>
    let giflib: osprey_gif_functions
    let options: DecodingOptions
    var canvas: PixelBuffer?
    /// The canvas before the last frame was drawn, kept when that frame's disposal is "restore previous".
    var savedCanvas: PixelBuffer?
    var frames: [ImageFrame] = []
    var loopCount = 1
    /// A loop count read from a NETSCAPE2.0 block, taken when a frame follows it.
    var pendingLoopCount: Int?
    var control = GraphicsControlBlock(DisposalMode: 0, UserInputFlag: false, DelayTime: 0, TransparentColor: -1)
    /// How the last drawn frame must be disposed of before the next one, and where it was drawn.
    var pendingDisposal: (mode: Int32, rect: Rect)?

    struct Rect {
        var x: Int
        var y: Int
        var width: Int
        var height: Int
    }

    init(gif: UnsafeMutablePointer<GifFileType>, giflib: osprey_gif_functions, options: DecodingOptions) {
        self.gif = gif
        self.giflib = giflib
        self.options = options
    }

    mutating func read() throws(CodecError) -> Image {
        let screen = ImageSize(width: Int(gif.pointee.SWidth), height: Int(gif.pointee.SHeight))
        if screen.width > 0, screen.height > 0, screen.pixelCount > options.limits.maxPixelCount {
            throw .tooManyPixels(width: screen.width, height: screen.height, limit: options.limits.maxPixelCount)
        }
        loop: while true {
            var record = UNDEFINED_RECORD_TYPE
            guard giflib.DGifGetRecordType(gif, &record) == GIF_OK else {
                if options.allowsPartialImages, !frames.isEmpty { break loop }
                throw failure()
            }
            switch record {
            case IMAGE_DESC_RECORD_TYPE:
                try readFrame(screen: screen)
                if options.firstFrameOnly { break loop }
            case EXTENSION_RECORD_TYPE:
                try readExtension()
            case TERMINATE_RECORD_TYPE:
                break loop
            default:
                break
            }
        }
        guard !frames.isEmpty else { throw .malformed(format: .gif, reason: "no image in the file") }
        return try Image(frames: frames, loopCount: loopCount, orientation: .up, sourceFormat: .gif)
    }

    private mutating func readExtension() throws(CodecError) {
        var code: Int32 = 0
        var block: UnsafeMutablePointer<GifByteType>?
        guard giflib.DGifGetExtension(gif, &code, &block) == GIF_OK else { throw failure() }
        var isLoopBlock = false
        var first = true
        while let data = block {
            let length = Int(data[0])
            if code == GRAPHICS_EXT_FUNC_CODE, first {
                _ = giflib.DGifExtensionToGCB(length, data + 1, &control)
            } else if code == APPLICATION_EXT_FUNC_CODE, first, length == 11 {
                let identifier = String(decoding: UnsafeBufferPointer(start: data + 1, count: 11), as: UTF8.self)
                isLoopBlock = identifier == "NETSCAPE2.0" || identifier == "ANIMEXTS1.0"
            } else if isLoopBlock, length >= 3, data[1] == 1 {
                // NETSCAPE2.0: 0 plays forever; otherwise the count, as SDWebImage and Kingfisher report it. With
                // several blocks, the last one that precedes a frame counts (giflib attaches blocks to the image that
                // follows them; a block after the last image belongs to none).
                pendingLoopCount = Int(data[2]) | Int(data[3]) << 8
                isLoopBlock = false
            }
            first = false
            guard giflib.DGifGetExtensionNext(gif, &block) == GIF_OK else { throw failure() }
        }
    }

    private mutating func readFrame(screen: ImageSize) throws(CodecError) {
        guard giflib.DGifGetImageDesc(gif) == GIF_OK else { throw failure() }
        let description = gif.pointee.Image
        let rect = Rect(
            x: Int(description.Left), y: Int(description.Top),
            width: Int(description.Width), height: Int(description.Height))
        guard rect.width > 0, rect.height > 0 else { throw .malformed(format: .gif, reason: "empty frame") }
        if canvas == nil {
            // A zero logical screen: browsers size the canvas to the first frame.
            let size =
                screen.width > 0 && screen.height > 0
                ? screen : ImageSize(width: rect.x + rect.width, height: rect.y + rect.height)
            guard size.pixelCount <= options.limits.maxPixelCount else {
                throw .tooManyPixels(width: size.width, height: size.height, limit: options.limits.maxPixelCount)
            }
            canvas = try PixelBuffer(width: size.width, height: size.height, format: .rgba8)
        }
        // Take the canvas out of `self` while drawing: a second reference would make the first write copy it whole.
        guard var canvas else { return }
        self.canvas = nil
        let limits = options.limits
        guard frames.count < limits.maxFrameCount else {
            throw .tooManyFrames(count: frames.count + 1, limit: limits.maxFrameCount)
        }
        guard (frames.count + 1) * canvas.width * canvas.height <= limits.maxPixelCount else {
            throw .tooManyPixels(
                width: canvas.width, height: canvas.height * (frames.count + 1), limit: limits.maxPixelCount)
        }

        // Dispose of the previous frame, then remember the canvas if this one is to be undone afterwards.
        if let (mode, previous) = pendingDisposal {
            if mode == DISPOSE_BACKGROUND {
                clear(previous, in: &canvas)
            } else if mode == DISPOSE_PREVIOUS, let savedCanvas {
                canvas = savedCanvas
            }
        }
        savedCanvas = control.DisposalMode == DISPOSE_PREVIOUS ? canvas : nil

        let palette = Self.palette(
            description.ColorMap ?? gif.pointee.SColorMap, transparent: Int(control.TransparentColor))
        guard rect.width * rect.height <= limits.maxPixelCount else {
            throw .tooManyPixels(width: rect.width, height: rect.height, limit: limits.maxPixelCount)
        }
        let indices = try readIndices(count: rect.width * rect.height)
        let rows = Self.rowOrder(height: rect.height, interlaced: description.Interlace)
        indices.withUnsafeBufferPointer { indices in
            palette.withUnsafeBufferPointer { palette in
                for (stored, row) in rows.enumerated() where (stored + 1) * rect.width <= indices.count {
                    let line = UnsafeBufferPointer(
                        rebasing: indices[(stored * rect.width)..<((stored + 1) * rect.width)])
                    draw(line, row: rect.y + row, x: rect.x, palette: palette, into: &canvas)
                }
            }
        }
        self.canvas = canvas
        if let pendingLoopCount {
            loopCount = pendingLoopCount
            self.pendingLoopCount = nil
        }
        let centiseconds = Int(control.DelayTime)
        let delay: Duration = centiseconds <= 1 ? .milliseconds(100) : .milliseconds(centiseconds * 10)
        frames.append(ImageFrame(pixels: canvas, duration: delay))
        pendingDisposal = (control.DisposalMode, rect)
        control = GraphicsControlBlock(DisposalMode: 0, UserInputFlag: false, DelayTime: 0, TransparentColor: -1)
    }

    /// Reads the frame's LZW data through giflib (the sub-blocks) and decodes it with our decoder: `count` colour
    /// indices, rows in file order. A stream that ends early is truncation (kept with allowsPartialImages).
    private func readIndices(count: Int) throws(CodecError) -> [UInt8] {
        var codeSize: Int32 = 0
        var block: UnsafeMutablePointer<GifByteType>?
        var compressed: [UInt8] = []
        var complete = giflib.DGifGetCode(gif, &codeSize, &block) == GIF_OK
        while complete, let data = block {
            compressed.append(contentsOf: UnsafeBufferPointer(start: data + 1, count: Int(data[0])))
            complete = giflib.DGifGetCodeNext(gif, &block) == GIF_OK
        }
        var sawEnd: Int32 = 0
        var decoded: Int64 = 0
        // Uninitialised: the decoder writes every index it reports, and only those are kept.
        let indices = [UInt8](unsafeUninitializedCapacity: count) { output, initialized in
            decoded = compressed.withUnsafeBufferPointer { data in
                osprey_gif_lzw_decode(data.baseAddress, data.count, codeSize, output.baseAddress, output.count, &sawEnd)
            }
            initialized = max(Int(decoded), 0)
        }
        guard decoded >= 0 else { throw .malformed(format: .gif, reason: "invalid LZW code") }
        if decoded < count || !complete {
            guard options.allowsPartialImages else {
                throw complete ? .malformed(format: .gif, reason: "too few pixels") : .truncated(format: .gif)
            }
        }
        return indices
    }

    /// The frame rows in the order the file stores them: 0…h-1, or GIF's four interlace passes.
    private static func rowOrder(height: Int, interlaced: Bool) -> [Int] {
        guard interlaced else { return Array(0..<height) }
        return [(0, 8), (4, 8), (2, 4), (1, 2)].flatMap { start, step in
            Array(stride(from: start, to: height, by: step))
        }
    }

    /// RGBA for each of the 256 indices: the colour map's colours, transparent for the transparent index and for
    /// indices past the map.
    private static func palette(_ map: UnsafeMutablePointer<ColorMapObject>?, transparent: Int) -> [UInt32] {
        var palette = [UInt32](repeating: 0, count: 256)
        if let map, let colors = map.pointee.Colors {
            for index in 0..<min(Int(map.pointee.ColorCount), 256) {
                let color = colors[index]
                palette[index] = UInt32(color.Red) | UInt32(color.Green) << 8 | UInt32(color.Blue) << 16 | 0xFF00_0000
            }
        }
        if (0..<256).contains(transparent) { palette[transparent] = 0 }
        return palette
    }

    /// Draws one frame row onto the canvas, clipped to it; transparent pixels leave the canvas as it was.
    private func draw(
        _ line: UnsafeBufferPointer<UInt8>, row y: Int, x: Int, palette: UnsafeBufferPointer<UInt32>,
        into canvas: inout PixelBuffer
    ) {
        guard (0..<canvas.height).contains(y) else { return }
        let start = max(x, 0)
        let end = min(x + line.count, canvas.width)
        guard start < end else { return }
        let stride = canvas.bytesPerRow
        canvas.withUnsafeMutableBytes { pixels in
            let target = (pixels.baseAddress! + y * stride).assumingMemoryBound(to: UInt32.self)
            for column in start..<end {
                let color = palette[Int(line[column - x])]
                if color >> 24 != 0 { target[column] = color.littleEndian }
            }
        }
    }

    /// Clears `rect` (clipped) to transparent: "restore to background", as browsers implement it.
    private func clear(_ rect: Rect, in canvas: inout PixelBuffer) {
        // A frame may lie partly or wholly outside the canvas: clip before forming any range.
        let (left, right) = (max(rect.x, 0), min(rect.x + rect.width, canvas.width))
        let (top, bottom) = (max(rect.y, 0), min(rect.y + rect.height, canvas.height))
        guard left < right, top < bottom else { return }
        let stride = canvas.bytesPerRow
        canvas.withUnsafeMutableBytes { pixels in
            for y in top..<bottom {
                (pixels.baseAddress! + y * stride + left * 4).initializeMemory(
                    as: UInt8.self, repeating: 0, count: (right - left) * 4)
            }
        }
    }

    private func failure() -> CodecError {
        let code = gif.pointee.Error
        if code == D_GIF_ERR_READ_FAILED { return .truncated(format: .gif) }
        return .malformed(format: .gif, reason: gifErrorDescription(code))
    }
}
