import Foundation
import Osprey
import OspreyCodecs

/// A processor of one's own beside the built-in ones: `Sepia` tones an image, and goes through the manager like any
/// processor — its identifier in the cache key, run on the manager's processing threads, cached as a variant.
///
/// ```sh
/// swift run CustomProcessorsExample photo.jpg photo-sepia.jpg
/// ```
struct Sepia: ImageProcessing {
    /// 0 (unchanged) to 1 (full sepia).
    var intensity: Double

    /// Every parameter that changes the output, canonically: it becomes part of the cache key.
    var identifier: String { "sepia(\(intensity))" }

    func process(_ image: Image) throws -> Image {
        let frames = try image.frames.map { frame in
            ImageFrame(pixels: try toned(frame.pixels), duration: frame.duration)
        }
        return try Image(frames: frames, loopCount: image.loopCount, sourceFormat: image.sourceFormat)
    }

    /// The pixels toned, as RGB or RGBA (alpha kept).
    private func toned(_ pixels: PixelBuffer) throws -> PixelBuffer {
        let source = try pixels.converted(to: pixels.format.hasAlpha ? .rgba8 : .rgb8)
        let channels = source.format.bytesPerPixel
        var bytes = [UInt8](repeating: 0, count: source.width * source.height * channels)
        source.withUnsafeBytes { input in
            for y in 0..<source.height {
                for x in 0..<source.width {
                    let from = y * source.bytesPerRow + x * channels
                    let to = (y * source.width + x) * channels
                    let (r, g, b) = (Double(input[from]), Double(input[from + 1]), Double(input[from + 2]))
                    let toned = (
                        0.393 * r + 0.769 * g + 0.189 * b, 0.349 * r + 0.686 * g + 0.168 * b,
                        0.272 * r + 0.534 * g + 0.131 * b
                    )
                    bytes[to] = Self.clamped(r + (toned.0 - r) * intensity)
                    bytes[to + 1] = Self.clamped(g + (toned.1 - g) * intensity)
                    bytes[to + 2] = Self.clamped(b + (toned.2 - b) * intensity)
                    if channels == 4 { bytes[to + 3] = input[from + 3] }
                }
            }
        }
        return try PixelBuffer(width: source.width, height: source.height, format: source.format, bytes: bytes)
    }

    private static func clamped(_ value: Double) -> UInt8 { UInt8(max(0, min(255, value.rounded()))) }
}

@main
struct CustomProcessorsExample {
    static func main() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 3 else {
            FileHandle.standardError.write(Data("usage: CustomProcessorsExample INPUT OUTPUT.jpg\n".utf8))
            exit(2)
        }
        // A local file through the pipeline: a provider request (URLs refuse every scheme but http and https).
        let request = ImageRequest(
            provider: LocalFileDataProvider(path: arguments[1]),
            processors: [.resize(width: 800), Sepia(intensity: 0.9)])
        let result = try await withImageManager { manager in
            try await manager.encodedImage(for: request, as: ImageOutput(.format(.jpeg)))
        }
        try Data(result.encoded.bytes).write(to: URL(fileURLWithPath: arguments[2]))
        print("\(arguments[2]): \(result.encoded.bytes.count) bytes")
    }
}
