import Foundation
import OspreyCodecs
import Testing

/// Whether this process may make a mount namespace and bind-mount in it.
private let canHideLibraries: Bool = {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { return false }
    let probe = try? OspreyBinary.runBlocking(
        "/usr/bin/unshare", ["--mount", "sh", "-c", "mount --bind /dev/null /dev/null"])
    return probe?.status == 0
}()

/// What osprey does on a machine without one of its C libraries: each test hides a library from one process (a bind
/// mount of /dev/null over its file, in a mount namespace of the process's own, made by `unshare`), so that the
/// loader's `dlopen` fails as it would were the package not installed. Where this machine cannot make a mount
/// namespace (an unprivileged container), the suite is skipped, and says so.
@Suite(.enabled(if: canHideLibraries, "unshare --mount is not permitted here"))
struct MissingLibraryTests {
    /// The dynamic loader's cache of shared objects (`ldconfig -p`), read once.
    static let loaderCache = (try? OspreyBinary.runBlocking("/sbin/ldconfig", ["-p"]).standardOutput) ?? ""

    /// The file the dynamic loader opens for the shared object `name` (`libgif.so.7`), symbolic links resolved.
    static func file(of name: String) throws -> String {
        let line = loaderCache.split(separator: "\n").first {
            $0.trimmingCharacters(in: .whitespaces).hasPrefix(name + " ")
        }
        let path = try #require(line?.components(separatedBy: " => ").last, "\(name) is not in the loader's cache")
        return URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }

    /// Runs `osprey arguments...` with the shared objects `libraries` hidden.
    static func run(without libraries: [String], _ arguments: [String]) async throws -> OspreyBinary.Run {
        let hidden = try libraries.map { try file(of: $0) }
        let script = hidden.map { "mount --bind /dev/null '\($0)' && " }.joined() + "exec \"$0\" \"$@\""
        return try await OspreyBinary.run(
            "/usr/bin/unshare", ["--mount", "sh", "-c", script, try OspreyBinary.path] + arguments)
    }

    @Test("without giflib, GIF is unavailable and says why, while JPEG works")
    func withoutGiflib() async throws {
        let gif = try LibraryLoadingTests.file(.gif)
        let jpeg = try LibraryLoadingTests.file(.jpeg)
        defer { for path in [gif, jpeg, jpeg + ".gif"] { try? FileManager.default.removeItem(atPath: path) } }

        let info = try await Self.run(without: ["libgif.so.7"], ["info", gif])
        #expect(info.status == 1)
        #expect(info.standardError.contains("GIF is not available: giflib is not installed"), "\(info.standardError)")
        let encode = try await Self.run(without: ["libgif.so.7"], ["convert", jpeg, jpeg + ".gif"])
        #expect(encode.status == 1)
        #expect(encode.standardError.contains("GIF is not available"), "\(encode.standardError)")
        #expect(!FileManager.default.fileExists(atPath: jpeg + ".gif"))
        let other = try await Self.run(without: ["libgif.so.7"], ["info", jpeg])
        #expect(other.status == 0, "\(other.standardError)")
        #expect(other.standardOutput.contains("jpeg"))
    }

    @Test("without libimagequant, a palette PNG is refused and says why, while a lossless PNG is written")
    func withoutLibimagequant() async throws {
        let jpeg = try LibraryLoadingTests.file(.jpeg)
        defer {
            for path in [jpeg, jpeg + ".q.png", jpeg + ".png"] { try? FileManager.default.removeItem(atPath: path) }
        }

        let palette = try await Self.run(
            without: ["libimagequant.so.0"], ["convert", jpeg, jpeg + ".q.png", "--quality", "60"])
        #expect(palette.status == 1)
        #expect(palette.standardError.contains("libimagequant is not installed"), "\(palette.standardError)")
        #expect(!FileManager.default.fileExists(atPath: jpeg + ".q.png"))
        let lossless = try await Self.run(without: ["libimagequant.so.0"], ["convert", jpeg, jpeg + ".png"])
        #expect(lossless.status == 0, "\(lossless.standardError)")
    }

    @Test("without libwebpdemux, a WebP is refused (its orientation and frames cannot be read), saying why")
    func withoutLibwebpdemux() async throws {
        let webp = try LibraryLoadingTests.file(.webp)
        defer { try? FileManager.default.removeItem(atPath: webp) }
        for arguments in [["info", webp], ["convert", webp, webp + ".png"]] {
            let run = try await Self.run(without: ["libwebpdemux.so.2"], arguments)
            #expect(run.status == 1, "\(arguments)")
            #expect(
                run.standardError.contains("WEBP is not available: libwebpdemux is not installed"),
                "\(run.standardError)")
        }
        #expect(!FileManager.default.fileExists(atPath: webp + ".png"))
    }

    @Test("without libdeflate, PNGs are read and palette PNGs written through libpng and zlib, to the same pixels")
    func withoutLibdeflate() async throws {
        let png = try LibraryLoadingTests.file(.png)
        let outputs = [".a.png", ".b.png", ".qa.png", ".qb.png"].map { png + $0 }
        defer {
            for path in [png] + outputs { try? FileManager.default.removeItem(atPath: path) }
        }
        for (arguments, first, second) in [
            ([String](), outputs[0], outputs[1]), (["--quality", "60"], outputs[2], outputs[3]),
        ] {
            let with = try await OspreyBinary.run(["convert", png, first] + arguments)
            let without = try await Self.run(without: ["libdeflate.so.0"], ["convert", png, second] + arguments)
            #expect(with.status == 0 && without.status == 0, "\(without.standardError)")
            let one = try ImageDecoder.decode(Array(try Data(contentsOf: URL(fileURLWithPath: first))))
            let other = try ImageDecoder.decode(Array(try Data(contentsOf: URL(fileURLWithPath: second))))
            #expect(one.pixels.withUnsafeBytes { Array($0) } == other.pixels.withUnsafeBytes { Array($0) })
        }
    }

    @Test("without libwebp, --version says it is not available, and why; the other lines are unchanged")
    func versionWithoutLibwebp() async throws {
        let run = try await Self.run(without: ["libwebp.so.7"], ["--version"])
        #expect(run.status == 0)
        #expect(
            run.standardOutput.contains("  libwebp not available: libwebp is not installed"), "\(run.standardOutput)")
        #expect(run.standardOutput.contains("  libjpeg-turbo "))
    }

    @Test(
        "without Little CMS, a tagged image decodes untagged with a warning, and info says why its profile is ignored")
    func withoutLittleCMS() async throws {
        let untagged = try LibraryLoadingTests.file(.jpeg)
        let tagged = try LibraryLoadingTests.taggedFile(from: untagged)
        defer { for path in [untagged, tagged] { try? FileManager.default.removeItem(atPath: path) } }

        let converted = tagged + ".png"
        defer { try? FileManager.default.removeItem(atPath: converted) }
        let run = try await Self.run(without: ["liblcms2.so.2"], ["convert", tagged, converted])
        #expect(run.status == 0, "\(run.standardError)")
        #expect(
            run.standardError.contains(
                "colour profile ignored: Little CMS cannot be opened: liblcms2 is not installed"),
            "\(run.standardError)")
        #expect(ColorProfile(embeddedIn: Array(try Data(contentsOf: URL(fileURLWithPath: converted)))) == nil)
        let info = try await Self.run(without: ["liblcms2.so.2"], ["info", tagged])
        #expect(info.status == 0, "\(info.standardError)")
        #expect(
            info.standardOutput.contains("profile ignored (Little CMS cannot be opened: liblcms2 is not installed"),
            "\(info.standardOutput)")
    }

    @Test("without SQLite, the cache commands fail, saying why, rather than report an empty cache")
    func withoutSQLite() async throws {
        let cache = NSTemporaryDirectory() + "osprey-no-sqlite-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        #expect(try await OspreyBinary.run(["cache", "clean", "--cache-dir", cache]).status == 0)  // makes the index
        for command in ["info", "ls", "clean", "clear"] {
            let run = try await Self.run(without: ["libsqlite3.so.0"], ["cache", command, "--cache-dir", cache])
            #expect(run.status == 1, "cache \(command)")
            #expect(run.standardOutput.isEmpty, "cache \(command): \(run.standardOutput)")
            #expect(run.standardError.contains("libsqlite3 is not installed"), "\(run.standardError)")
            #expect(run.standardError.contains("osprey: cannot"), "\(run.standardError)")
        }
    }
}
