/// The EXIF orientation (tag 0x0112, values 1–8): how stored pixels must be turned to display upright.
///
/// The case names say where the stored image's top row ends up, as `CGImagePropertyOrientation` does.
public enum ImageOrientation: Int, Sendable, Hashable, CaseIterable {
    /// 1: stored upright.
    case up = 1
    /// 2: mirrored left to right.
    case upMirrored = 2
    /// 3: rotated 180°.
    case down = 3
    /// 4: mirrored top to bottom.
    case downMirrored = 4
    /// 5: mirrored along the top-left to bottom-right diagonal (transposed).
    case leftMirrored = 5
    /// 6: must be rotated 90° clockwise to display.
    case right = 6
    /// 7: mirrored along the top-right to bottom-left diagonal (transversed).
    case rightMirrored = 7
    /// 8: must be rotated 90° counter-clockwise to display.
    case left = 8

    /// Reads an EXIF value; anything outside 1–8 (0 is common in the wild) means `.up`, as browsers treat it.
    public init(exifValue: Int) {
        self = ImageOrientation(rawValue: exifValue) ?? .up
    }

    /// Whether displaying the image swaps its width and height (orientations 5–8).
    public var swapsDimensions: Bool {
        switch self {
        case .leftMirrored, .right, .rightMirrored, .left: true
        case .up, .upMirrored, .down, .downMirrored: false
        }
    }
}
