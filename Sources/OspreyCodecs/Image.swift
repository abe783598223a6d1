/// A decoded image: one frame, or several for an animation, all of the same size and pixel format.
///
/// `Image` is a value; copying one copies no pixels (see ``PixelBuffer``), so it is cheap to cache, send across tasks
/// and hand to C.
///
/// ```swift
/// let image = Image(pixels: try PixelBuffer(width: 2, height: 2, format: .rgba8), sourceFormat: .png)
/// image.cost        // 16 bytes of pixels
/// image.isAnimated  // false
/// ```
public struct Image: Sendable, Equatable {
    /// The frames in display order; never empty. A still image has exactly one.
    public let frames: [ImageFrame]
    /// How many times an animation plays: 0 means forever (GIF's NETSCAPE2.0 loop 0, WebP's loop 0); 1 means once.
    public let loopCount: Int
    /// How the stored pixels must be turned to display upright. Decoders that apply EXIF orientation to the pixels
    /// report `.up`; this is set when the caller asked to keep the stored orientation.
    public let orientation: ImageOrientation
    /// The format the image was decoded from, `.unknown` for an image made in memory.
    public let sourceFormat: ImageFormat
    /// The colour profile the pixels are in, when the decoder kept it (``ColorHandling/keepProfile``); `nil` for
    /// sRGB, which is what pixels without a profile are taken to be. Encoders embed it.
    public var colorProfile: ColorProfile?
    /// The EXIF and XMP the file carried (the orientation already applied to the pixels unless the decoder kept it).
    /// Encoders write it as ``EncodingOptions/metadata`` says: by default, none of it.
    public var metadata = ImageMetadata()

    /// What the decoder noticed and worked around (a colour profile it could not use): the image decoded, but not
    /// entirely as the file asked. The manager logs them; `osprey convert` prints them.
    public var warnings: [DecodingWarning] = []

    /// The image's size as stored in its file, upright, when the decoder made it smaller (DCT-scaled JPEG, scaled
    /// WebP, for a target size or a pixel budget); `nil` when it decoded at full size. A resize plans from it, so that
    /// a scaled decode gives the output size a full one would (859 × 300 / 1165 is 221, where 323 × 300 / 437, the
    /// 3/8-scaled decode's, would round to 222).
    public var storedSize: ImageSize?

    /// Makes an image from frames that all share the first frame's size and pixel format.
    ///
    /// - Throws: ``CodecError/invalidDimensions(width:height:)`` when `frames` is empty or the frames disagree.
    public init(
        frames: [ImageFrame],
        loopCount: Int = 0,
        orientation: ImageOrientation = .up,
        sourceFormat: ImageFormat = .unknown
    ) throws(CodecError) {
        guard let first = frames.first,
            frames.allSatisfy({
                $0.pixels.width == first.pixels.width && $0.pixels.height == first.pixels.height
                    && $0.pixels.format == first.pixels.format
            })
        else {
            throw CodecError.invalidDimensions(
                width: frames.first?.pixels.width ?? 0, height: frames.first?.pixels.height ?? 0)
        }
        self.frames = frames
        self.loopCount = max(loopCount, 0)
        self.orientation = orientation
        self.sourceFormat = sourceFormat
    }

    /// Makes a still image.
    public init(pixels: PixelBuffer, orientation: ImageOrientation = .up, sourceFormat: ImageFormat = .unknown) {
        self.frames = [ImageFrame(pixels: pixels)]
        self.loopCount = 0
        self.orientation = orientation
        self.sourceFormat = sourceFormat
    }

    /// The first frame's pixels: the whole image when it is still, the poster frame when animated.
    public var pixels: PixelBuffer { frames[0].pixels }
    /// Width in pixels, as stored (before ``orientation`` is applied).
    public var width: Int { pixels.width }
    /// Height in pixels, as stored (before ``orientation`` is applied).
    public var height: Int { pixels.height }
    /// The layout of every frame's pixels.
    public var pixelFormat: PixelFormat { pixels.format }
    /// Whether the image has more than one frame.
    public var isAnimated: Bool { frames.count > 1 }
    /// The sum of the frames' durations.
    public var duration: Duration { frames.reduce(.zero) { $0 + $1.duration } }
    /// Bytes of pixel storage across all frames, and of the metadata and profile carried: what a memory cache charges
    /// for holding this image.
    public var cost: Int {
        frames.reduce(0) { $0 + $1.pixels.byteCount } + (metadata.exif?.count ?? 0) + (metadata.xmp?.count ?? 0)
            + (colorProfile?.data.count ?? 0)
    }
}

extension Image {
    /// The image with its ``orientation`` applied to every frame's pixels, reporting `.up`; itself when it is
    /// upright already. The profile, the metadata and the loop count stay.
    func upright() throws(CodecError) -> Image {
        guard orientation != .up else { return self }
        let turned = try frames.map { frame throws(CodecError) in
            ImageFrame(pixels: try frame.pixels.applying(orientation), duration: frame.duration)
        }
        var image = try Image(frames: turned, loopCount: loopCount, orientation: .up, sourceFormat: sourceFormat)
        image.colorProfile = colorProfile
        image.metadata = metadata
        image.warnings = warnings
        return image
    }
}

/// Something a decoder worked around without failing the decode.
public enum DecodingWarning: Sendable, Hashable, CustomStringConvertible {
    /// The file's colour profile was not used — damaged, incomplete, absurd, or not fitting the pixels (an RGB
    /// profile on a gray image) — so its pixels are taken as sRGB, as if it had none.
    case colorProfileIgnored(reason: String)

    /// The value as logs and messages print it.
    public var description: String {
        switch self {
        case .colorProfileIgnored(let reason): "colour profile ignored: \(reason)"
        }
    }
}

/// One frame of an ``Image`` and how long it stays on screen.
public struct ImageFrame: Sendable, Equatable {
    /// The frame's pixels, already composited onto the full canvas.
    public var pixels: PixelBuffer
    /// How long the frame is shown; `.zero` for a still image.
    public var duration: Duration

    /// Makes a frame.
    public init(pixels: PixelBuffer, duration: Duration = .zero) {
        self.pixels = pixels
        self.duration = duration
    }
}
