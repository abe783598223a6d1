import ArgumentParser
import Osprey

/// `--resize WxH`, `W` or `xH`: a box, or one side with the other following the aspect ratio.
struct ResizeSpec: Equatable {
    var width: Int?
    var height: Int?

    init?(argument: String) {
        let parts = argument.lowercased().split(separator: "x", maxSplits: 1, omittingEmptySubsequences: false)
        func side(_ text: Substring) -> Int?? {
            if text.isEmpty { return .some(nil) }
            guard let value = DecimalText.integer(text), value > 0, value <= 65_535 else { return nil }
            return .some(value)
        }
        guard let first = parts.first, let width = side(first) else { return nil }
        let height: Int?? = parts.count == 2 ? side(parts[1]) : .some(nil)
        guard let height, width != nil || height != nil else { return nil }
        self.width = width
        self.height = height
    }

    /// Parses an option's value, or fails with a message naming the fix.
    static func parse(_ argument: String) throws -> ResizeSpec {
        guard let spec = ResizeSpec(argument: argument) else {
            throw ValidationError("--resize '\(argument)' is not a size: give WxH, W or xH, each side 1 to 65535")
        }
        return spec
    }

    /// The processor that makes an image fit this box: a downsample, so JPEG and WebP decode scaled.
    func processor(fit: ImageProcessors.Resize.Fit) -> ImageProcessors.Downsample {
        ImageProcessors.Downsample(width: width, height: height, fit: fit)
    }
}

/// `--fit`: the library's fits, by the same names (CSS `object-fit`'s).
enum FitArgument: String, ExpressibleByArgument, CaseIterable {
    case inside, cover, fill

    var fit: ImageProcessors.Resize.Fit {
        switch self {
        case .inside: .inside
        case .cover: .cover
        case .fill: .fill
        }
    }
}
