import ArgumentParser
import Osprey
import OspreyCodecs
import OspreyCommandLine

/// `--quality N` (0–100), or `--quality auto` / `auto:T`: the lowest quality whose output scores at least T on
/// SSIMULACRA 2 (``ImageOutput/Quality/defaultTarget`` without one).
enum QualityArgument: Equatable {
    case fixed(Int)
    case perceptual(target: Double)

    static func parse(_ text: String) throws -> QualityArgument {
        if text == "auto" { return .perceptual(target: ImageOutput.Quality.defaultTarget) }
        if text.hasPrefix("auto:") {
            let target = try DecimalArgument.number(String(text.dropFirst(5)))
            guard (1...100).contains(target) else {
                throw ValidationError("--quality auto:T needs a target score T between 1 and 100")
            }
            return .perceptual(target: target)
        }
        let quality = try DecimalArgument.integer(text)
        guard (0...100).contains(quality) else {
            throw ValidationError("--quality must be between 0 and 100, or auto[:T]")
        }
        return .fixed(quality)
    }

    /// `output` with this quality: the fixed one in its options, or the perceptual search.
    func applied(to output: ImageOutput) -> ImageOutput {
        var output = output
        switch self {
        case .fixed(let quality):
            output.options.quality = quality
            // PNG: a quality below 100 asks for a palette, as pngquant's --quality does.
            output.options.pngPaletteQuality = quality
        case .perceptual(let target): output.quality = .perceptual(target: target)
        }
        return output
    }

    static let help = """
        Quality 0-100 for JPEG, lossy WebP, AVIF and JPEG XL (default 85), or auto[:T]: the lowest quality whose \
        output scores at least T on SSIMULACRA 2 (default 70, high quality; 90 is visually lossless). For PNG, \
        below 100: a palette of at most 256 colours, as pngquant --quality 0-N (lossless without it).
        """
}
