public import OspreyCodecs

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ImageProcessors {
    /// Mirrors an image left to right, top to bottom, or both.
    public struct Flip: ImageProcessing, Hashable {
        /// Mirror left to right.
        public var horizontally: Bool
        /// Mirror top to bottom.
        public var vertically: Bool

        /// Makes a flip, left to right by default.
        public init(horizontally: Bool = true, vertically: Bool = false) {
            self.horizontally = horizontally
            self.vertically = vertically
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String { "flip(horizontal=\(horizontally),vertical=\(vertically))" }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            let orientation: ImageOrientation =
                switch (horizontally, vertically) {
                case (false, false): .up
                case (true, false): .upMirrored
                case (false, true): .downMirrored
                case (true, true): .down
                }
            return try image.mappingFrames { try $0.applying(orientation) }
        }
    }

    /// Turns an image clockwise by a multiple of 90°.
    public struct Rotate: ImageProcessing, Hashable {
        /// Quarter turns clockwise, 0...3 (any integer is reduced to that; negative turns go anticlockwise).
        public var quarterTurns: Int

        /// Makes a rotation by `quarterTurns` quarter turns clockwise (negative ones anticlockwise).
        public init(quarterTurns: Int) {
            self.quarterTurns = ((quarterTurns % 4) + 4) % 4
        }

        /// A turn of `degrees` clockwise, which must be a multiple of 90.
        public init?(degrees: Int) {
            guard degrees % 90 == 0 else { return nil }
            self.init(quarterTurns: degrees / 90)
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String { "rotate(\(quarterTurns * 90))" }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            // EXIF's orientations name the turn that displays a stored image upright: 6 (.right) is a quarter
            // turn clockwise.
            // Reduced again here: the property is a `var`, set after `init` to anything.
            let orientation: ImageOrientation = [.up, .right, .down, .left][((quarterTurns % 4) + 4) % 4]
            return try image.mappingFrames { try $0.applying(orientation) }
        }
    }

    /// Keeps a rectangle of an image: given in pixels, or as a size placed by an anchor (Kingfisher's cropping
    /// processor). The part of the rectangle outside the image is dropped; a rectangle entirely outside throws.
    public struct Crop: ImageProcessing, Hashable {
        /// Which part of the image a crop keeps.
        public enum Region: Sendable, Hashable {
            /// The pixels from (`x`, `y`), `width` × `height`, in display coordinates.
            case rect(x: Int, y: Int, width: Int, height: Int)
            /// `width` × `height` pixels (at most the image's) placed by `anchor`: `.center` keeps the middle.
            case size(width: Int, height: Int, anchor: Anchor)
            /// imgproxy's `crop`: each side pixels when 1 or more, a fraction of the image's when less, the whole side
            /// when 0; placed by `anchor`, moved by the offsets away from the edge it is anchored to (pixels when 1 or
            /// more, else a fraction of the image's side).
            case gravity(width: Double, height: Double, anchor: Anchor, offsetX: Double, offsetY: Double)
            /// imgproxy's `crop` with a focus point: sides as in ``gravity(width:height:anchor:offsetX:offsetY:)``,
            /// centred on the point (`x`, `y`), fractions of the image, as near as the edges allow.
            case focus(width: Double, height: Double, x: Double, y: Double)
        }

        /// The part kept.
        public var region: Region

        /// Makes a crop that keeps `region`.
        public init(_ region: Region) {
            self.region = region
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String {
            switch region {
            case .rect(let x, let y, let width, let height): "crop(\(width)x\(height)+\(x)+\(y))"
            case .size(let width, let height, let anchor): "crop(\(width)x\(height),anchor=\(anchor))"
            case .gravity(let width, let height, let anchor, let offsetX, let offsetY):
                "crop(\(width)x\(height),anchor=\(anchor),offset=\(offsetX):\(offsetY))"
            case .focus(let width, let height, let x, let y): "crop(\(width)x\(height),focus=\(x):\(y))"
            }
        }

        /// A side of imgproxy's crop on a `length`-pixel side: pixels when 1 or more, a fraction when less, all of it
        /// when 0 (or not a number); within the side, at least 1.
        static func side(_ value: Double, of length: Int) -> Int {
            guard value.isFinite, value > 0 else { return length }
            let pixels = value >= 1 ? Int(saturating: value) : Int((Double(length) * value).rounded())
            return min(max(pixels, 1), length)
        }

        /// The rectangle kept of a `width` × `height` image.
        ///
        /// - Throws: ``ImageProcessingError`` when the rectangle is empty or entirely outside the image.
        public func rect(inWidth width: Int, height: Int) throws -> (x: Int, y: Int, width: Int, height: Int) {
            switch region {
            case .rect(let x, let y, let w, let h):
                // In saturating arithmetic: a rectangle near Int.max is outside, not a trap.
                let (left, top) = (max(x, 0), max(y, 0))
                let (right, bottom) = (min(x.addingClamped(w), width), min(y.addingClamped(h), height))
                guard w > 0, h > 0, right > left, bottom > top else {
                    throw ImageProcessingError(
                        processor: identifier, reason: "the rectangle is empty or outside the \(width)x\(height) image")
                }
                return (left, top, right - left, bottom - top)
            case .size(let w, let h, let anchor):
                guard w > 0, h > 0 else {
                    throw ImageProcessingError(processor: identifier, reason: "the width and height must be positive")
                }
                let (cw, ch) = (min(w, width), min(h, height))
                let (ax, ay) = anchor.clamped
                let x = Int((Double(width - cw) * ax).rounded())
                let y = Int((Double(height - ch) * ay).rounded())
                return (x, y, cw, ch)
            case .gravity(let w, let h, let anchor, let offsetX, let offsetY):
                let (cw, ch) = (Self.side(w, of: width), Self.side(h, of: height))
                let (ax, ay) = anchor.clamped
                let x = Resize.position(full: Double(width), window: Double(cw), anchor: ax, offset: offsetX)
                let y = Resize.position(full: Double(height), window: Double(ch), anchor: ay, offset: offsetY)
                return (Int(x.rounded()), Int(y.rounded()), cw, ch)
            case .focus(let w, let h, let fx, let fy):
                let (cw, ch) = (Self.side(w, of: width), Self.side(h, of: height))
                let point = Anchor(x: fx, y: fy).clamped
                func start(_ full: Int, _ window: Int, _ at: Double) -> Int {
                    min(max(Int((Double(full) * at).rounded()) - window / 2, 0), full - window)
                }
                return (start(width, cw, point.x), start(height, ch, point.y), cw, ch)
            }
        }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            let (w, h) = image.uprightSize
            let rect = try rect(inWidth: w, height: h)
            if rect == (0, 0, w, h) { return image }
            // What `cropped` copies from must lie inside every frame: checked here, where the copy is made.
            guard rect.x >= 0, rect.y >= 0, rect.width > 0, rect.height > 0, rect.x <= w - rect.width,
                rect.y <= h - rect.height
            else {
                throw ImageProcessingError(processor: identifier, reason: "the rectangle is outside the image")
            }
            return try image.mappingFrames {
                try $0.cropped(x: rect.x, y: rect.y, width: rect.width, height: rect.height)
            }
        }
    }
}

extension Int {
    /// `self + other`, or the bound it passes.
    func addingClamped(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}

extension PixelBuffer {
    /// The pixels of a rectangle inside the buffer, tightly packed.
    func cropped(x: Int, y: Int, width: Int, height: Int) throws(CodecError) -> PixelBuffer {
        var output = try PixelBuffer(width: width, height: height, format: format)
        let (bytesPerPixel, sourceStride, targetStride) = (format.bytesPerPixel, bytesPerRow, output.bytesPerRow)
        withUnsafeBytes { source in
            output.withUnsafeMutableBytes { target in
                for row in 0..<height {
                    memcpy(
                        target.baseAddress! + row * targetStride,
                        source.baseAddress! + (y + row) * sourceStride + x * bytesPerPixel, width * bytesPerPixel)
                }
            }
        }
        return output
    }
}

extension ImageProcessing where Self == ImageProcessors.Flip {
    /// Mirrors left to right (`horizontally`, the default), top to bottom, or both.
    public static func flip(horizontally: Bool = true, vertically: Bool = false) -> Self {
        ImageProcessors.Flip(horizontally: horizontally, vertically: vertically)
    }
}

extension ImageProcessing where Self == ImageProcessors.Rotate {
    /// Turns clockwise by `quarterTurns` × 90°.
    public static func rotate(quarterTurns: Int) -> Self {
        ImageProcessors.Rotate(quarterTurns: quarterTurns)
    }
}

extension ImageProcessing where Self == ImageProcessors.Crop {
    /// Keeps the rectangle from (`x`, `y`), `width` × `height`.
    public static func crop(x: Int, y: Int, width: Int, height: Int) -> Self {
        ImageProcessors.Crop(.rect(x: x, y: y, width: width, height: height))
    }

    /// Keeps `width` × `height` pixels placed by `anchor` (the middle by default).
    public static func crop(width: Int, height: Int, anchor: Anchor = .center) -> Self {
        ImageProcessors.Crop(.size(width: width, height: height, anchor: anchor))
    }
}
