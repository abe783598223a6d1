import ArgumentParser
import FoundationEssentials
import OspreyCodecs
import OspreyCommandLine

/// `osprey info FILE...`: each image's format, displayed size, frames, loop count, orientation and frame durations.
struct InfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Print the format, size, frames and orientation of image files.",
        discussion: """
            Reads headers and containers only — no pixel is decoded (osprey convert checks that a file decodes). \
            Sizes are as displayed, after the EXIF orientation is applied. A file larger than --max-bytes is not \
            read. Exits 0 when every file was read, 1 when any could not be (the others are still printed).

            Examples:
              osprey info photo.jpg spinner.gif
              osprey info --json https://example.com/cat.webp
            """
    )

    @Argument(help: "Image files, or http/https URLs (loaded through the disk cache), to inspect.")
    var files: [String]

    @Flag(
        help: """
            Print one JSON object per file: \
            {"file","format","width","height","frames","loopCount","orientation","durations","profile","colorSpace",\
            "profileIgnored"} ("profile": the embedded colour profile's description, when there is one; \
            "profileIgnored": why the one embedded cannot be used, when it cannot), or \
            {"file","error"} for a file that could not be read.
            """)
    var json = false

    @OptionGroup var limit: ByteLimitOption

    @OptionGroup var certificateAuthority: CertificateAuthorityOption

    func run() async throws {
        var failures = 0
        let reader = SourceReader(byteLimit: limit.maxBytes, certificateAuthorityFile: certificateAuthority.path)
        for file in files {
            let info: Result<Info, CommandError>
            do throws(CommandError) {
                info = .success(try await Self.info(of: file, reader: reader))
            } catch {
                info = .failure(error)
            }
            switch info {
            case .success(let info):
                print(json ? Self.jsonLine(InfoLine(file: file, info: info)) : Self.textLine(file, info))
            case .failure(let error):
                failures += 1
                if json {
                    print(Self.jsonLine(InfoLine(file: file, error: error.message)))
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
        let format: ImageFormat
        let size: ImageSize
        let frames: Int
        let loopCount: Int
        let orientation: ImageOrientation
        let durations: [Int]
        /// The embedded colour profile, when there is one.
        let profile: ColorProfile?
        /// Why the embedded colour profile cannot be used (damaged, or Little CMS cannot be opened), when it cannot.
        let profileIgnored: String?
        /// Whether the file is a JPEG XL that holds the JPEG it was recompressed from (`convert --original-jpeg`).
        let hasOriginalJPEG: Bool
    }

    /// How much of a JPEG file `info` reads: its header (markers up to the first scan, APP segments included) lies in
    /// the first mebibyte of any file from a camera or a phone.
    static let jpegPrefixLength = 1 << 20

    /// What `source` says of itself. A JPEG file is read only as far as its header (the first mebibyte); other
    /// formats list their frames through the file (GIF, WebP), and are read whole, up to the byte limit.
    static func info(of source: String, reader: SourceReader) async throws(CommandError) -> Info {
        if let prefix = try reader.prefixOfFile(source, count: jpegPrefixLength),
            ImageFormat(sniffing: prefix.prefix(ImageFormat.signatureLength)) == .jpeg,
            case .success(let info) = inspect(prefix)
        {
            return info
        }
        return try inspect(try await reader.bytes(of: source)).get()
    }

    /// What `data`'s header and container say, without decoding a pixel.
    static func inspect(_ data: [UInt8]) -> Result<Info, CommandError> {
        Result { () throws(CommandError) -> Info in
            do throws(CodecError) {
                let header = try ImageHeader(reading: data)
                let frames = try ImageHeader.frames(in: data)
                guard frames.count > 0 else {
                    throw CodecError.malformed(format: header.format, reason: "no complete frame in the file")
                }
                let profile = ColorProfile(embeddedIn: data)
                return Info(
                    format: header.format,
                    size: header.displaySize,
                    frames: frames.count,
                    loopCount: frames.loopCount,
                    orientation: header.orientation,
                    durations: frames.durations.map { Int($0 / .milliseconds(1)) },
                    profile: profile,
                    profileIgnored: profile == nil ? ColorProfile.reasonIgnored(embeddedIn: data) : nil,
                    hasOriginalJPEG: header.format == .jxl
                        && data.withUnsafeBytes { JXLCoder.containsJPEGReconstruction($0) }
                )
            } catch {
                throw CommandError(message: error.description)
            }
        }
    }

    private static func textLine(_ file: String, _ info: Info) -> String {
        var parts = ["\(info.format) \(info.size)"]
        if info.frames > 1 {
            let loops = info.loopCount == 0 ? "loops forever" : "plays \(info.loopCount)×"
            parts.append(
                "\(info.frames) frames (\(info.durations.map(String.init).joined(separator: " ")) ms), \(loops)")
        }
        if info.orientation != .up { parts.append("orientation \(info.orientation.rawValue)") }
        if let profile = info.profile {
            parts.append(
                "profile \(profile.name.map { "'\($0)'" } ?? "without a name") (\(profile.colorSpace.rawValue))")
        }
        if let reason = info.profileIgnored { parts.append("profile ignored (\(reason))") }
        if info.hasOriginalJPEG { parts.append("recompressed from a JPEG (convert --original-jpeg writes it back)") }
        return "\(file): " + parts.joined(separator: ", ")
    }

    private static func jsonLine(_ line: InfoLine) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a struct of strings, integers and arrays of integers cannot fail.
        return String(decoding: (try? encoder.encode(line)) ?? Data(), as: UTF8.self)
    }
}

/// One line of `osprey info --json`; absent fields are omitted.
private struct InfoLine: Encodable {
    var file: String
    var format: String?
    var width: Int?
    var height: Int?
    var frames: Int?
    var loopCount: Int?
    var orientation: Int?
    var durations: [Int]?
    /// The embedded colour profile's description, and the colour space it describes.
    var profile: String?
    var colorSpace: String?
    /// Why the embedded colour profile cannot be used, when it cannot.
    var profileIgnored: String?
    /// Present (true) when the file is a JPEG XL holding the JPEG it was recompressed from.
    var originalJPEG: Bool?
    var error: String?

    init(file: String, info: InfoCommand.Info) {
        self.file = file
        format = info.format.name
        width = info.size.width
        height = info.size.height
        frames = info.frames
        loopCount = info.loopCount
        orientation = info.orientation.rawValue
        durations = info.durations
        profile = info.profile.map { $0.name ?? "" }
        colorSpace = info.profile?.colorSpace.rawValue
        profileIgnored = info.profileIgnored
        originalJPEG = info.hasOriginalJPEG ? true : nil
    }

    init(file: String, error: String) {
        self.file = file
        self.error = error
    }
}
