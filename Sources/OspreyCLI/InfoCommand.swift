import ArgumentParser
import FoundationEssentials
import Osprey
import OspreyCodecs
import OspreyCommandLine

/// `osprey info FILE...`: each image's format, displayed size, frames, loop count, orientation, frame durations, alpha,
/// bit depth, colour profile and camera EXIF; with `--hashes`, its placeholders too.
struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Print the format, size, frames, orientation and camera of image files, and their placeholders.",
        discussion: """
            Reads headers and containers only — no pixel is decoded (osprey convert checks that a file decodes) — \
            unless --hashes asks for the placeholders, which decode the image at a small scale. Sizes are as \
            displayed, after the EXIF orientation is applied. A file larger than --max-bytes is not read. Exits 0 \
            when every file was read, 1 when any could not be (the others are still printed).

            Examples:
              osprey info photo.jpg spinner.gif
              osprey info --json --hashes https://example.com/cat.webp
            """
    )

    @Argument(help: "Image files, or http/https URLs (loaded through the disk cache), to inspect.")
    var files: [String]

    @Flag(
        help: """
            Print one JSON object per file, as the proxy's /info answers: \
            {"file","format","contentType","bytes","width","height","orientation","frames","durations","loopCount",\
            "alpha","bitDepth","profile","colorSpace","profileIgnored","exif","originalJPEG"} ("profile": the \
            embedded colour profile's description; "exif": camera, lens, date taken, exposure, and "gps" with \
            --gps), or {"file","error"} for a file that could not be read.
            """)
    var json = false

    @Flag(
        help: """
            Decode each image (at a small scale) for its placeholders: "blurHash" (4x3 components), "thumbHash" \
            (base64), "averageColor", "dominantColors" ([{"color","weight"}]) and "perceptualHash" (64-bit pHash).
            """)
    var hashes = false

    @Flag(help: "Show the GPS position of a photo's EXIF (left out by default).")
    var gps = false

    @OptionGroup var limit: ByteLimitOption

    @OptionGroup var certificateAuthority: CertificateAuthorityOption

    func run() async throws {
        var failures = 0
        let reader = SourceReader(byteLimit: limit.maxBytes, certificateAuthorityFile: certificateAuthority.path)
        for file in files {
            let info: Result<Info, CommandError>
            do throws(CommandError) {
                info = .success(try await Self.info(of: file, reader: reader, hashes: hashes))
            } catch {
                info = .failure(error)
            }
            switch info {
            case .success(let info):
                print(json ? Self.jsonLine(file: file, info, gps: gps) : Self.textLine(file, info, gps: gps))
            case .failure(let error):
                failures += 1
                if json {
                    print(Self.jsonLine(ErrorLine(file: file, error: error.message)))
                } else {
                    printError("\(file): \(error.message)")
                }
            }
        }
        await reader.finish()
        if failures > 0 { throw ExitCode(1) }
    }

    /// What `info` reports about one image.
    struct Info {
        var image: ImageInfo
        /// Whether the file is a JPEG XL that holds the JPEG it was recompressed from (`convert --original-jpeg`).
        var hasOriginalJPEG: Bool
    }

    /// How much of a JPEG file `info` reads: its header (markers up to the first scan, APP segments included) lies in
    /// the first mebibyte of any file from a camera or a phone.
    static let jpegPrefixLength = 1 << 20

    /// What `source` says of itself (and its placeholders, when `hashes`). Without hashes a JPEG file is read only as
    /// far as its header (the first mebibyte); other formats list their frames through the file (GIF, WebP), and are
    /// read whole, up to the byte limit.
    static func info(of source: String, reader: SourceReader, hashes: Bool) async throws(CommandError) -> Info {
        if !hashes, let prefix = try reader.prefixOfFile(source, count: jpegPrefixLength),
            ImageFormat(sniffing: prefix.prefix(ImageFormat.signatureLength)) == .jpeg,
            case .success(let info) = inspect(prefix, byteCount: InputFile.regularFileSize(source))
        {
            return info
        }
        let data = try await reader.bytes(of: source)
        var info = try inspect(data).get()
        if hashes {
            do {
                // The smallest decode that still fills the 100 × 100 the placeholders read.
                let side = ImagePlaceholders.hashSide
                let reduce = ImageProcessors.Downsample(width: side, height: side)
                let image = try ImageDecoder.decode(
                    data, options: reduce.decodingOptions(for: data, options: DecodingOptions()))
                try info.image.addPlaceholders(ImagePlaceholders(try reduce.process(image)))
            } catch {
                throw CommandError(message: "cannot decode for the placeholders: \(error)")
            }
        }
        return info
    }

    /// What `data`'s header and container say, without decoding a pixel.
    static func inspect(_ data: [UInt8], byteCount: Int? = nil) -> Result<Info, CommandError> {
        Result { () throws(CommandError) -> Info in
            do throws(CodecError) {
                let image = try ImageInfo(data: data, byteCount: byteCount)
                return Info(
                    image: image,
                    hasOriginalJPEG: image.format == ImageFormat.jxl.name
                        && data.withUnsafeBytes { JXLCoder.containsJPEGReconstruction($0) })
            } catch {
                throw CommandError(message: error.description)
            }
        }
    }

    private static func textLine(_ file: String, _ info: Info, gps: Bool) -> String {
        let image = info.image
        var parts = ["\(image.format) \(image.width)x\(image.height)"]
        if image.frames > 1 {
            let loops = image.loopCount == 0 ? "loops forever" : "plays \(image.loopCount)×"
            parts.append(
                "\(image.frames) frames (\(image.durations.map(String.init).joined(separator: " ")) ms), \(loops)")
        }
        if image.orientation != 1 { parts.append("orientation \(image.orientation)") }
        if image.alpha { parts.append("alpha") }
        if image.bitDepth != 8 { parts.append("\(image.bitDepth)-bit") }
        if let profile = image.profile {
            parts.append(
                "profile \(profile.isEmpty ? "without a name" : "'\(profile)'") (\(image.colorSpace ?? "?"))")
        }
        if let reason = image.profileIgnored { parts.append("profile ignored (\(reason))") }
        if info.hasOriginalJPEG { parts.append("recompressed from a JPEG (convert --original-jpeg writes it back)") }
        if let camera = image.exif {
            let names = [camera.make, camera.model].compactMap { $0 }
            if !names.isEmpty { parts.append("camera \(names.joined(separator: " "))") }
            if let date = camera.dateTaken { parts.append("taken \(date)") }
            if gps, let position = camera.gps { parts.append("at \(position.latitude), \(position.longitude)") }
        }
        if let blurHash = image.blurHash, let thumbHash = image.thumbHash, let average = image.averageColor,
            let pHash = image.perceptualHash
        {
            let colours = (image.dominantColors ?? []).map(\.color).joined(separator: " ")
            parts.append(
                "blurhash \(blurHash), thumbhash \(thumbHash), average \(average), colours \(colours), phash \(pHash)")
        }
        return "\(file): " + parts.joined(separator: ", ")
    }

    /// The line of `osprey info --json`: the file, the document `/info` answers, and `originalJPEG` when true.
    private static func jsonLine(file: String, _ info: Info, gps: Bool) -> String {
        var fields = "{\"file\":" + jsonString(file)
        if info.hasOriginalJPEG { fields += ",\"originalJPEG\":true" }
        let document = info.image.json(includingGPS: gps)
        // The document is an object: its members follow the file's.
        return fields + (document.count > 2 ? "," : "") + String(decoding: document.dropFirst(), as: UTF8.self)
    }

    private static func jsonLine(_ line: ErrorLine) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a struct of two strings cannot fail.
        return String(decoding: (try? encoder.encode(line)) ?? Data(), as: UTF8.self)
    }

    /// `text` as a JSON string.
    private static func jsonString(_ text: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }
}

/// The line of `osprey info --json` for a file that could not be read.
private struct ErrorLine: Encodable {
    var file: String
    var error: String
}
