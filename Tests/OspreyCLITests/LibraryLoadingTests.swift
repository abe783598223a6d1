import Foundation
import OspreyCodecs
import Testing

/// No C library is opened before it is needed: libavif, libheif and libjxl when an image first needs one (their
/// loading and their dependencies' initialisers cost about 10 ms of every start-up), the classic codecs' libraries
/// likewise, libsqlite3 when a disk cache's index first opens, and liblcms2 when an image first carries a colour
/// profile. The dynamic loader's own log says what a process opened.
@Suite struct LibraryLoadingTests {
    /// The libraries the modern codecs bring in, as the loader names them.
    static let modern = [
        "libavif.so", "libheif.so", "libjxl.so", "libhwy.so", "libde265.so", "libdav1d.so", "libaom.so",
    ]

    /// What the dynamic loader opened while osprey ran `arguments` (its `LD_DEBUG=libs` log).
    static func openedLibraries(_ arguments: [String]) async throws -> (status: Int32, log: String) {
        let run = try await OspreyBinary.run(arguments, environment: ["LD_DEBUG": "libs"])
        let opened = run.standardError.split(separator: "\n").filter { $0.contains("calling init:") }
        return (run.status, opened.joined(separator: "\n"))
    }

    /// A small picture encoded as `format`, in a file of its own (removed by the caller).
    static func file(_ format: ImageFormat) throws -> String {
        let pixels = try PixelBuffer(
            width: 16, height: 8, format: .rgb8, bytes: (0..<(16 * 8 * 3)).map { UInt8($0 % 251) })
        let path = NSTemporaryDirectory() + "osprey-lazy-\(UUID().uuidString).\(format.name)"
        let bytes = try ImageEncoder.encode(Image(pixels: pixels), as: format)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// `untagged` (a JPEG) re-encoded with an sRGB profile, in `untagged + ".tagged.jpg"` (removed by the caller).
    static func taggedFile(from untagged: String) throws -> String {
        let tagged = untagged + ".tagged.jpg"
        var image = try ImageDecoder.decode(Array(try Data(contentsOf: URL(fileURLWithPath: untagged))))
        image.colorProfile = .sRGB
        try Data(try ImageEncoder.encode(image, as: .jpeg)).write(to: URL(fileURLWithPath: tagged))
        return tagged
    }

    @Test("--version and a JPEG open none of them; an AVIF opens libavif alone, a JPEG XL libjxl alone")
    func openedOnFirstUse() async throws {
        let version = try await Self.openedLibraries(["--version"])
        #expect(version.status == 0)
        #expect(version.log.contains("calling init:"), "the loader logged nothing: \(version.log)")
        for library in Self.modern { #expect(!version.log.contains(library), "\(library) at start-up") }

        let jpeg = try Self.file(.jpeg)
        let avif = try Self.file(.avif)
        let jxl = try Self.file(.jxl)
        defer { for path in [jpeg, avif, jxl] { try? FileManager.default.removeItem(atPath: path) } }

        let jpegRun = try await Self.openedLibraries(["info", jpeg])
        #expect(jpegRun.status == 0)
        for library in Self.modern { #expect(!jpegRun.log.contains(library), "\(library) for a JPEG") }

        let avifRun = try await Self.openedLibraries(["convert", avif, avif + ".png"])
        defer { try? FileManager.default.removeItem(atPath: avif + ".png") }
        #expect(avifRun.status == 0)
        #expect(avifRun.log.contains("libavif.so"))
        #expect(!avifRun.log.contains("libjxl.so") && !avifRun.log.contains("libheif.so"))

        let jxlRun = try await Self.openedLibraries(["convert", jxl, jxl + ".png"])
        defer { try? FileManager.default.removeItem(atPath: jxl + ".png") }
        #expect(jxlRun.status == 0)
        #expect(jxlRun.log.contains("libjxl.so"))
        #expect(!jxlRun.log.contains("libavif.so") && !jxlRun.log.contains("libheif.so"))
    }

    /// The classic codecs' libraries, as the loader names them.
    static let classic = [
        "libjpeg.so", "libturbojpeg.so", "libpng16.so", "libdeflate.so", "libwebp.so", "libwebpdemux.so",
        "libwebpmux.so", "libgif.so",
    ]

    /// Which of the classic libraries osprey opened while it ran `arguments`.
    static func classicOpened(_ arguments: [String]) async throws -> Set<String> {
        let run = try await openedLibraries(arguments)
        #expect(run.status == 0, "osprey \(arguments)")
        #expect(run.log.contains("calling init:"), "the loader logged nothing: \(run.log)")
        return Set(classic.filter { run.log.contains($0) })
    }

    @Test("each classic codec's library is opened by the first image that needs it; --version opens libwebp alone")
    func classicLibrariesOpenedOnFirstUse() async throws {
        // libwebp's headers carry no version, so --version asks the library; the others' versions are the headers'.
        #expect(try await Self.classicOpened(["--version"]) == ["libwebp.so"])

        let files = try [ImageFormat.jpeg, .png, .gif, .webp].map { try Self.file($0) }
        defer { for path in files { try? FileManager.default.removeItem(atPath: path) } }
        let (jpeg, png, gif, webp) = (files[0], files[1], files[2], files[3])
        #expect(try await Self.classicOpened(["info", jpeg]) == ["libjpeg.so"])
        #expect(try await Self.classicOpened(["info", gif]) == ["libgif.so"])
        #expect(try await Self.classicOpened(["info", webp]).isSuperset(of: ["libwebp.so", "libwebpdemux.so"]))
        #expect(try await !Self.classicOpened(["info", webp]).contains("libjpeg.so"))
        // A PNG decodes through libpng and, for the fast path, libdeflate; TurboJPEG is opened to encode a JPEG.
        let converted = png + ".jpg"
        defer { try? FileManager.default.removeItem(atPath: converted) }
        #expect(
            try await Self.classicOpened(["convert", png, converted]) == [
                "libpng16.so", "libdeflate.so", "libturbojpeg.so",
            ])
    }

    @Test("libsqlite3 is opened when a disk cache's index first opens, not by --version or the info of a file")
    func sqliteOpenedOnFirstUse() async throws {
        let jpeg = try Self.file(.jpeg)
        let cache = NSTemporaryDirectory() + "osprey-lazy-cache-\(UUID().uuidString)"
        defer { for path in [jpeg, cache] { try? FileManager.default.removeItem(atPath: path) } }
        for arguments in [["--version"], ["info", jpeg]] {
            let run = try await Self.openedLibraries(arguments)
            #expect(run.status == 0)
            #expect(!run.log.contains("libsqlite3.so"), "libsqlite3 opened by \(arguments)")
        }
        let cacheRun = try await Self.openedLibraries(["cache", "clean", "--cache-dir", cache])
        #expect(cacheRun.status == 0)
        #expect(cacheRun.log.contains("libsqlite3.so"), "\(cacheRun.log)")
    }

    @Test("liblcms2 is opened by the first image that carries a colour profile, not by --version or an untagged one")
    func lcmsOpenedOnFirstUse() async throws {
        let untagged = try Self.file(.jpeg)
        let tagged = try Self.taggedFile(from: untagged)
        defer { for path in [untagged, tagged] { try? FileManager.default.removeItem(atPath: path) } }
        #expect(ColorProfile(embeddedIn: Array(try Data(contentsOf: URL(fileURLWithPath: tagged)))) != nil)

        for arguments in [["--version"], ["info", untagged]] {
            let run = try await Self.openedLibraries(arguments)
            #expect(run.status == 0)
            #expect(!run.log.contains("liblcms2.so"), "liblcms2 opened by \(arguments)")
        }
        let taggedRun = try await Self.openedLibraries(["info", tagged])
        #expect(taggedRun.status == 0)
        #expect(taggedRun.log.contains("liblcms2.so"), "\(taggedRun.log)")
    }
}
