public import OspreyCodecs

extension ImageProcessors {
    /// Lays an image (a logo, a copyright mark) over every frame: at `opacity`, placed by `anchor` and moved `offsetX`
    /// and `offsetY` pixels in from the edges it is anchored to, `scale` of the image's width wide (its own size when
    /// `nil`), never larger than the image (imgproxy's `watermark`). Its alpha is kept; the image keeps its own.
    public struct Watermark: ImageProcessing {
        /// The mark. Its first frame is used, upright.
        public var mark: Image
        /// Names the mark in ``identifier`` (a digest of its bytes, say): variants with different marks are cached
        /// apart.
        public var name: String
        /// How opaque the mark is laid, 0 to 1.
        public var opacity: Double
        /// Where on the image the mark goes.
        public var anchor: Anchor
        /// How far in from the edge it is anchored to, across, in pixels.
        public var offsetX: Int
        /// How far in from the edge it is anchored to, down, in pixels.
        public var offsetY: Int
        /// The mark's width as a fraction of the image's (0…1); `nil` for the mark's own size.
        public var scale: Double?
        /// Repeats the mark over the whole image, from its top-left corner, `offsetX` and `offsetY` pixels apart
        /// (imgproxy's `re` position); ``anchor`` is then unused. `false` by default.
        public var tiled: Bool

        /// Makes a watermark of `mark` (named `name` in the identifier, so that the cache key tells marks apart).
        public init(
            mark: Image, name: String, opacity: Double = 1, anchor: Anchor = .bottomRight, offsetX: Int = 0,
            offsetY: Int = 0, scale: Double? = nil, tiled: Bool = false
        ) {
            (self.mark, self.name, self.anchor) = (mark, name, anchor)
            self.opacity = min(max(opacity.isNaN ? 1 : opacity, 0), 1)
            (self.offsetX, self.offsetY) = (offsetX, offsetY)
            self.scale = scale.map { min(max($0, 0), 1) }
            self.tiled = tiled
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String {
            "watermark(\(name),opacity=\(opacity),anchor=\(anchor),offset=\(offsetX):\(offsetY),"
                + "scale=\(scale.map { "\($0)" } ?? "none")" + (tiled ? ",tiled)" : ")")
        }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            guard opacity > 0 else { return image }
            let (width, height) = image.uprightSize
            let upright = try Image(pixels: mark.mappingFrames { $0 }.frames[0].pixels)
            let markWidth = upright.uprightSize.width
            // The mark's size: the scale asked for, or its own; within the image either way.
            let wanted = scale.map { max(Int((Double(width) * $0).rounded()), 1) } ?? markWidth
            let fitted = try Resize(width: min(wanted, width), height: height, fit: .inside, upscale: true)
                .process(upright)
            let pixels = try fitted.frames[0].pixels.converted(to: .rgba8)
            let (ax, ay) = anchor.clamped
            func place(_ free: Int, _ fraction: Double, _ offset: Int) -> Int {
                let start = Int((Double(free) * fraction).rounded())
                let moved = fraction < 0.5 ? start + offset : fraction > 0.5 ? start - offset : start + offset
                return min(max(moved, 0), max(free, 0))
            }
            let alpha = Int((opacity * 256).rounded())
            if tiled {
                // Every position a tile starts at, the spacing at least nothing (a negative offset would overlap).
                let columns = Swift.stride(from: 0, to: width, by: pixels.width + max(offsetX, 0))
                let rows = Swift.stride(from: 0, to: height, by: pixels.height + max(offsetY, 0))
                return try image.mappingFrames { frame in
                    var output = try frame.converted(to: frame.format.hasAlpha ? .rgba8 : .rgb8)
                    for y in rows {
                        for x in columns { output.blend(pixels, x: x, y: y, opacity: alpha) }
                    }
                    return output
                }
            }
            let x = place(width - pixels.width, ax, offsetX)
            let y = place(height - pixels.height, ay, offsetY)
            return try image.mappingFrames { frame in
                try frame.blended(with: pixels, x: x, y: y, opacity: alpha)
            }
        }
    }
}

extension PixelBuffer {
    /// These pixels with `mark` (RGBA) laid over them at (`x`, `y`), its alpha scaled by `opacity` (0…256), in RGB or
    /// RGBA as these have alpha. Straight alpha: over an opaque pixel the colours mix by the mark's alpha; over a
    /// translucent one the alphas compose as "over" does.
    func blended(with mark: PixelBuffer, x: Int, y: Int, opacity: Int) throws -> PixelBuffer {
        var output = try converted(to: format.hasAlpha ? .rgba8 : .rgb8)
        output.blend(mark, x: x, y: y, opacity: opacity)
        return output
    }

    /// Lays `mark` (RGBA) over these pixels (RGB or RGBA) in place, as ``blended(with:x:y:opacity:)`` does; what
    /// falls outside is dropped.
    package mutating func blend(_ mark: PixelBuffer, x: Int, y: Int, opacity: Int) {
        let channels = format.bytesPerPixel
        let (columns, rows) = (min(mark.width, width - x), min(mark.height, height - y))
        guard columns > 0, rows > 0 else { return }
        let stride = bytesPerRow
        mark.withUnsafeBytes { source in
            withUnsafeMutableBytes { target in
                for row in 0..<rows {
                    for column in 0..<columns {
                        let m = (row * mark.bytesPerRow) + column * 4
                        let a = Int(source[m + 3]) * opacity / 256  // the mark's weight, 0…255
                        guard a > 0 else { continue }
                        let t = (y + row) * stride + (x + column) * channels
                        if channels == 3 {
                            for c in 0..<3 {
                                target[t + c] = UInt8((Int(source[m + c]) * a + Int(target[t + c]) * (255 - a)) / 255)
                            }
                        } else {
                            let below = Int(target[t + 3])
                            let over = a * 255 + below * (255 - a)  // the result's alpha, times 255
                            guard over > 0 else { continue }
                            for c in 0..<3 {
                                let mixed = Int(source[m + c]) * a * 255 + Int(target[t + c]) * below * (255 - a)
                                target[t + c] = UInt8(mixed / over)
                            }
                            target[t + 3] = UInt8(over / 255)
                        }
                    }
                }
            }
        }
    }
}
