import ArgumentParser
import FoundationEssentials
import Osprey
import OspreyCodecs
import OspreyCommandLine

/// `osprey convert IN OUT`: decodes an image and encodes it again, in the format `--format` or OUT's extension names.
struct ConvertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Re-encode an image as JPEG, PNG, WebP, GIF, AVIF or JPEG XL.",
        discussion: """
            The output format is --format, else OUT's extension (.jpg/.jpeg, .png, .webp, .gif, .avif, .jxl). Pixels are \
            written upright (EXIF orientation applied) and in sRGB (a colour profile converted; --keep-profile keeps it \
            instead), without EXIF or XMP unless --keep-metadata; animations stay animated in GIF, WebP, AVIF and JPEG \
            XL. --original-jpeg writes the JPEG a JPEG XL was recompressed from, byte for byte, instead. Exits 1 when \
            the input cannot be decoded or the output cannot be written.

            Examples:
              osprey convert photo.jpg photo.webp --quality 80
              osprey convert https://example.com/cat.png thumb.jpg --resize 256x256 --fit cover
              osprey convert photo.jxl photo.jpg --original-jpeg
            """
    )

    @Argument(help: "The image to read: a file, or an http/https URL (loaded through the disk cache).")
    var input: String

    @Argument(help: "The file to write (replaced if it exists).")
    var output: String

    @Option(help: "Output format: jpeg, png, webp, gif, avif or jxl. Default: from OUT's extension.")
    var format: OutputFormat?

    @Option(help: ArgumentHelp(QualityArgument.help), transform: QualityArgument.parse)
    var quality: QualityArgument?

    @Flag(help: "Encode WebP, AVIF or JPEG XL losslessly.")
    var lossless = false

    @Option(
        help: """
            WebP, AVIF and JPEG XL encoder effort, 1 (fastest) to 9 (smallest files). Default: each format's own \
            (WebP's method 4, AVIF's speed 8, JPEG XL's effort 4).
            """,
        transform: DecimalArgument.integer)
    var effort: Int?

    @Flag(
        help: """
            IN is a JPEG XL recompressed from a JPEG (cjxl's default for JPEG input): write that JPEG, byte for byte, \
            as it was (its own metadata and colour profile), instead of re-encoding the pixels.
            """)
    var originalJPEG = false

    @Option(help: "Fit the image to WxH (or W, or xH) pixels.", transform: ResizeSpec.parse)
    var resize: ResizeSpec?

    @Option(help: "How --resize fits: inside (keep all, default), cover (fill and crop) or fill (stretch).")
    var fit: FitArgument?

    @OptionGroup var limit: ByteLimitOption

    @OptionGroup var certificateAuthority: CertificateAuthorityOption

    @OptionGroup var metadata: MetadataOptions

    func validate() throws {
        if fit != nil && resize == nil { throw ValidationError("--fit needs --resize WxH") }
        if let effort, !(1...9).contains(effort) { throw ValidationError("--effort must be between 1 and 9") }
        if format == nil, OutputFormat(extensionOf: output) == nil {
            throw ValidationError("cannot tell the format from '\(output)': pass --format jpeg|png|webp|gif|avif|jxl")
        }
        if originalJPEG {
            if resize != nil || quality != nil || lossless || effort != nil {
                throw ValidationError(
                    "--original-jpeg writes the JPEG as it was: not with --resize, --quality, --lossless or --effort")
            }
            if (format ?? OutputFormat(extensionOf: output))?.imageFormat != .jpeg {
                throw ValidationError("--original-jpeg writes a JPEG: OUT must be .jpg/.jpeg or --format jpeg")
            }
        }
    }

    func run() async throws {
        let target = (format ?? OutputFormat(extensionOf: output) ?? OutputFormat(.png)).imageFormat
        var options = EncodingOptions()
        options.isLossless = lossless
        if let effort { options.setEffort(effort) }
        do {
            let reader = SourceReader(byteLimit: limit.maxBytes, certificateAuthorityFile: certificateAuthority.path)
            let read: Result<[UInt8], CommandError>
            do throws(CommandError) {
                read = .success(try await reader.bytes(of: input))
            } catch {
                read = .failure(error)
            }
            await reader.finish()
            let bytes = try read.get()
            if originalJPEG {
                let original = try bytes.withUnsafeBytes { data throws(CodecError) in
                    try JXLCoder.reconstructedJPEG(from: data)
                }
                guard let original else {
                    throw CommandError(message: "not a JPEG XL recompressed from a JPEG (no JPEG reconstruction data)")
                }
                try write(original)
                return
            }
            let downsample = resize.map { $0.processor(fit: fit?.fit ?? .inside) }
            // Within the process's memory budget, as the manager's decodes: an image that alone needs more than it
            // is refused before it is decoded.
            var decoding = DecodingOptions()
            decoding.colorHandling = metadata.colorHandling
            let estimate = try ImageDecoder.memoryEstimate(
                for: bytes, options: downsample?.decodingOptions(for: bytes, options: decoding) ?? decoding)
            // Saturating: a hostile header's estimate is Int.max, refused by the budget, not an overflow trap.
            let needed =
                downsample == nil
                ? estimate.peakBytes : ImageDecoder.saturating(sum: estimate.peakBytes, estimate.imageBytes)
            let reservation: MemoryBudget.Reservation
            do throws(MemoryBudget.Refusal) {
                reservation = try await MemoryBudget.shared.reserve(needed)
            } catch {
                throw CommandError(message: "\(error)")
            }
            defer { reservation.release() }
            // Decoded scaled where the format allows (JPEG, WebP), then resized.
            let decoded =
                try downsample?.decode(bytes, options: decoding) ?? ImageDecoder.decode(bytes, options: decoding)
            for warning in decoded.warnings { printError("\(input): warning: \(warning)") }
            let image = try downsample?.process(decoded) ?? decoded
            let output = ImageOutput(.format(target), options: metadata.applied(to: options))
            try write(try (quality?.applied(to: output) ?? output).encode(image).bytes)
        } catch let error as ExitCode {
            throw error
        } catch let error as CommandError {
            printError("\(input): \(error.message)")
            throw ExitCode(1)
        } catch let error as CodecError {
            printError("\(input): \(error.description)")
            throw ExitCode(1)
        } catch let error as ImageProcessingError {
            printError("\(input): \(error.description)")
            throw ExitCode(1)
        } catch {
            printError("\(output): cannot write: \(error)")
            throw ExitCode(1)
        }
    }

    /// Writes `encoded` to OUT (through a temporary file, leftovers of an earlier run removed); exits 1 on failure.
    private func write(_ encoded: [UInt8]) throws {
        OutputFile.removeLeftovers(in: OutputFile.directory(of: output))
        do throws(CommandError) {
            try OutputFile.write(encoded, to: output)
        } catch {
            printError("\(output): \(error.message)")
            throw ExitCode(1)
        }
    }
}

/// A format `convert` and `fetch` write: any format an encoder of the shared ``ImageCoderRegistry`` writes, by its
/// name or its file extension (`jpg` is JPEG).
struct OutputFormat: ExpressibleByArgument, Equatable {
    let imageFormat: ImageFormat

    init(_ format: ImageFormat) {
        imageFormat = format
    }

    init?(argument: String) {
        guard let format = ImageCoderRegistry.shared.encodableFormat(named: argument) else { return nil }
        imageFormat = format
    }

    /// The format `path`'s extension names, when an encoder writes it.
    init?(extensionOf path: String) {
        let pathExtension = URL(fileURLWithPath: path).pathExtension
        guard !pathExtension.isEmpty else { return nil }
        self.init(argument: pathExtension)
    }

    static var allValueStrings: [String] { ImageCoderRegistry.shared.encodableFormats.map(\.name) }
}
