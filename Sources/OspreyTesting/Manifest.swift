import Foundation
public import OspreyCodecs

/// The corpus's `MANIFEST.tsv`: what each file is and what a decoder must do with it.
public struct Manifest: Sendable {
    /// What a decoder must do with a file (the `expected` column).
    public enum Expectation: String, Sendable, CaseIterable {
        /// The file must decode.
        case decodeOK = "decode-ok"
        /// The file must fail with a thrown error, without crashing, hanging or running out of memory.
        case mustError = "must-error"
        /// Either outcome, but no crash, hang or unbounded allocation.
        case noCrash = "no-crash"
    }

    /// One file of the corpus.
    public struct Entry: Sendable {
        /// Path relative to the `images` folder, e.g. `valid/jpeg/baseline/testorig.jpg`.
        public let path: String
        /// The repository the file comes from.
        public let sourceRepository: String
        /// What the magic bytes say: `jpeg`, `png`, `gif`, `webp`, `empty`, `isobmff`, `bmp`, `tiff`, `ico`,
        /// `unknown`.
        public let format: String
        /// Decoded width, or the declared one for a file that does not decode (0 when unknown).
        public let width: Int
        /// Decoded height, or the declared one.
        public let height: Int
        /// Frames decoded (for APNG, the `acTL` count).
        public let frames: Int
        /// What a decoder must do.
        public let expected: Expectation
        /// What the reference C libraries did.
        public let referenceResult: String
        /// The `details` column as key/value pairs (`exif_orientation`, `loop`, `delays_ms`, ...).
        public let details: [String: String]
        /// File size in bytes.
        public let byteCount: Int
        /// SHA-256 of the file, lowercase hex.
        public let sha256: String
        /// Free-text notes.
        public let notes: String

        /// The ``ImageFormat`` the `format` column names; `.unknown` for every other value.
        public var imageFormat: ImageFormat {
            // ISOBMFF is AVIF by its major brand (`details` of the second manifest), or by its name in the first,
            // which gives no details for it.
            if format == "isobmff",
                details["brand"].map({ ["avif", "avis"].contains($0) }) ?? path.hasSuffix(".avif")
            {
                return .avif
            }
            if format == "isobmff",
                details["brand"].map({ ["heic", "heix", "heim", "heis", "mif1", "msf1"].contains($0) })
                    ?? path.hasSuffix(".heic")
            {
                return .heic
            }
            return ImageFormat.builtIn.first { $0.name == format } ?? .unknown
        }
    }

    /// Every file, in manifest order.
    public let entries: [Entry]
    /// The folder the entries' paths are relative to.
    public let imagesDirectory: String

    /// Parses the manifest at `path`; columns are found by their header names.
    public init(contentsOf path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true).map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
        guard !lines.isEmpty else { throw TestDataError.malformedManifest("empty") }
        let header = lines.removeFirst()
        func column(_ name: String) throws -> Int {
            guard let index = header.firstIndex(of: name) else {
                throw TestDataError.malformedManifest("no column '\(name)'")
            }
            return index
        }
        let columns = (
            path: try column("path"), repository: try column("source_repo"), format: try column("format"),
            width: try column("width"), height: try column("height"), frames: try column("frames"),
            expected: try column("expected"), reference: try column("reference_decoder_result"),
            details: try column("details"), bytes: try column("bytes"), sha256: try column("sha256"),
            notes: try column("notes")
        )
        entries = try lines.enumerated().map { number, fields in
            guard fields.count == header.count, var expected = Expectation(rawValue: fields[columns.expected]) else {
                throw TestDataError.malformedManifest("line \(number + 2) does not match the header")
            }
            var (width, height, frames) = (
                Int(fields[columns.width]) ?? 0, Int(fields[columns.height]) ?? 0, Int(fields[columns.frames]) ?? 0
            )
            if let verdict = Self.projectVerdicts[fields[columns.path]] {
                (expected, width, height, frames) = verdict
            }
            return Entry(
                path: fields[columns.path],
                sourceRepository: fields[columns.repository],
                format: fields[columns.format],
                width: width,
                height: height,
                frames: frames,
                expected: expected,
                referenceResult: fields[columns.reference],
                details: Self.parseDetails(fields[columns.details]),
                byteCount: Int(fields[columns.bytes]) ?? 0,
                sha256: fields[columns.sha256],
                notes: fields[columns.notes]
            )
        }
        imagesDirectory = URL(fileURLWithPath: path).deletingLastPathComponent().path
    }

    /// Files whose verdict Osprey's own support has changed, as the corpus README says it will: `kimono.avif` and
    /// `gradient-10b-displayp3-alpha.heic` sit under `invalid/unsupported-format/` with `must-error`, and decode
    /// (722 × 1024 and 64 × 64, one frame) now that AVIF and HEIC are read; and one whose verdict came from a tool
    /// rather than the library.
    static let projectVerdicts: [String: (Expectation, width: Int, height: Int, frames: Int)] = [
        "invalid/unsupported-format/kimono.avif": (.decodeOK, 722, 1024, 1),
        "invalid/unsupported-format/gradient-10b-displayp3-alpha.heic": (.decodeOK, 64, 64, 1),
        // A jxl-oxide fuzz finding (an overflow in the squeeze transform) that djxl 0.7 refuses, hence `must-error`;
        // libjxl 0.7's decoder API, which Osprey calls, decodes it to 16 × 7 pixels in every output type, with or
        // without extra channels (checked with a C program against the library directly). No crash either way.
        "invalid/jxl/fuzz/squeeze_tendency_overflow.fuzz": (.noCrash, 16, 7, 1),
    ]

    /// The bytes of `entry`'s file.
    public func bytes(of entry: Entry) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: imagesDirectory + "/" + entry.path)))
    }

    /// `key=value;key=value` → a dictionary; fields without `=` are kept with an empty value.
    private static func parseDetails(_ text: String) -> [String: String] {
        var details: [String: String] = [:]
        for field in text.split(separator: ";") {
            let parts = field.split(separator: "=", maxSplits: 1)
            details[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return details
    }
}
