import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

@Suite struct InfoCommandTests {
    @Test func printsFormatSizeAndFramesPerFile() async throws {
        try await withTemporaryDirectory { directory in
            let png = try write(SyntheticImages.png(width: 12, height: 7), to: directory + "/a.png")
            let gif = try write(try animation(as: .gif), to: directory + "/b.gif")

            let run = try await OspreyBinary.run(["info", png, gif])
            #expect(run.status == 0)
            #expect(
                run.standardOutput == "\(png): png 12x7, alpha\n\(gif): gif 4x3, 2 frames (100 250 ms), loops forever\n"
            )
            #expect(run.standardError.isEmpty)
        }
    }

    @Test func reportsOrientationAndTheDisplayedSize() async throws {
        try await withTemporaryDirectory { directory in
            // A 4×3 PNG whose eXIf says "rotate 90° clockwise": displayed 3×4.
            let tiff: [UInt8] = [0x4D, 0x4D, 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0]
            let plain = SyntheticImages.png(width: 4, height: 3)
            let rotated = Array(plain.dropLast(12)) + SyntheticImages.pngChunk("eXIf", tiff) + Array(plain.suffix(12))
            let file = try write(rotated, to: directory + "/r.png")

            #expect(
                try await OspreyBinary.run(["info", file]).standardOutput == "\(file): png 3x4, orientation 6, alpha\n")
        }
    }

    @Test func reportsTheColourProfile() async throws {
        try await withTemporaryDirectory { directory in
            var tagging = EncodingOptions()
            tagging.tagsSRGB = true
            let image = try ImageDecoder.decode(SyntheticImages.png(width: 5, height: 4))
            let file = try write(try ImageEncoder.encode(image, as: .jpeg, options: tagging), to: directory + "/t.jpg")

            #expect(
                try await OspreyBinary.run(["info", file]).standardOutput
                    == "\(file): jpeg 5x4, profile 'sRGB built-in' (rgb)\n")
            let json = try await OspreyBinary.run(["info", "--json", file]).standardOutput
            #expect(json.contains(#""profile":"sRGB built-in""#) && json.contains(#""colorSpace":"rgb""#))
        }
    }

    @Test("a profile that cannot be used is named as ignored, with the reason, as the decoder warns")
    func reportsAnIgnoredProfile() async throws {
        try await withTemporaryDirectory { directory in
            let image = try ImageDecoder.decode(SyntheticImages.png(width: 5, height: 4))
            let jpeg = try ImageEncoder.encode(image, as: .jpeg)
            // An APP2 ICC_PROFILE segment (1 of 1) whose payload is no profile, right after SOI.
            let payload = Array("ICC_PROFILE".utf8) + [0, 1, 1] + [UInt8](repeating: 0x5A, count: 200)
            let segment: [UInt8] = [0xFF, 0xE2, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)]
            let file = try write(
                Array(jpeg.prefix(2)) + segment + payload + Array(jpeg.dropFirst(2)), to: directory + "/d.jpg")

            let reason = "it is damaged or not an ICC profile Little CMS can read"
            #expect(
                try await OspreyBinary.run(["info", file]).standardOutput
                    == "\(file): jpeg 5x4, profile ignored (\(reason))\n")
            let json = try await OspreyBinary.run(["info", "--json", file]).standardOutput
            #expect(json.contains(#""profileIgnored":"\#(reason)""#) && !json.contains(#""profile":"#), "\(json)")
        }
    }

    @Test func aBadFileFailsWithStatus1OnStandardErrorAndTheOthersStillPrint() async throws {
        try await withTemporaryDirectory { directory in
            let png = try write(SyntheticImages.png(width: 2, height: 3), to: directory + "/a.png")
            let text = try write(Array("just text".utf8), to: directory + "/notes.png")

            let run = try await OspreyBinary.run(["info", directory + "/missing.jpg", text, png])
            #expect(run.status == 1)
            #expect(run.standardOutput == "\(png): png 2x3, alpha\n")
            #expect(run.standardError == "\(directory)/missing.jpg: no such file\n\(text): unsupported image format\n")
        }
    }

    @Test("--hashes adds the placeholders /info gives; --gps the position; the JSON is /info's document")
    func hashesAndCamera() async throws {
        try await withTemporaryDirectory { directory in
            var bytes: [UInt8] = []
            for y in 0..<200 { for x in 0..<300 { bytes += [UInt8(x * 255 / 299), 90, UInt8(y)] } }
            var image = Image(pixels: try PixelBuffer(width: 300, height: 200, format: .rgb8, bytes: bytes))
            image.metadata = ImageMetadata(exif: SyntheticEXIF.photo(littleEndian: true))
            var options = EncodingOptions()
            options.metadata = .all
            let file = try write(try ImageEncoder.encode(image, as: .jpeg, options: options), to: directory + "/p.jpg")
            let line = try await OspreyBinary.run(["info", "--json", "--hashes", file]).standardOutput
            let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(json["file"] as? String == file && json["width"] as? Int == 300)
            #expect((json["blurHash"] as? String)?.count == 28 && (json["perceptualHash"] as? String)?.count == 16)
            #expect((json["dominantColors"] as? [Any])?.isEmpty == false && json["thumbHash"] is String)
            let camera = try #require(json["exif"] as? [String: Any])
            #expect(camera["model"] as? String == "Fish Eye 9" && camera["gps"] == nil)
            let withGPS = try await OspreyBinary.run(["info", "--json", "--gps", file]).standardOutput
            #expect(withGPS.contains(#""gps":{"#) && !withGPS.contains("blurHash"))
            let text = try await OspreyBinary.run(["info", "--hashes", file]).standardOutput
            #expect(
                text.hasPrefix(
                    "\(file): jpeg 300x200, camera Osprey Optics Fish Eye 9, taken 2024-05-01T12:34:56+02:00"))
            #expect(text.contains(", blurhash ") && text.contains(", phash "))
        }
    }

    @Test func jsonPrintsOneObjectPerLine() async throws {
        try await withTemporaryDirectory { directory in
            let webp = try write(try animation(as: .webp), to: directory + "/c.webp")

            let run = try await OspreyBinary.run(["info", "--json", webp, directory + "/missing"])
            #expect(run.status == 1)
            let objects = try run.standardOutput.split(separator: "\n").map {
                try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
            }
            #expect(objects.count == 2)
            #expect(objects[0]["file"] as? String == webp)
            #expect(objects[0]["format"] as? String == "webp")
            #expect(objects[0]["width"] as? Int == 4)
            #expect(objects[0]["height"] as? Int == 3)
            #expect(objects[0]["frames"] as? Int == 2)
            #expect(objects[0]["loopCount"] as? Int == 0)
            #expect(objects[0]["orientation"] as? Int == 1)
            #expect(objects[0]["durations"] as? [Int] == [100, 250])
            #expect(objects[0]["error"] == nil)
            #expect(objects[1]["error"] as? String == "no such file")
            #expect(objects[1]["format"] == nil)
        }
    }
}

/// What `info` and `convert` read: at most --max-bytes of anything, a header's worth of a large JPEG, any stream.
@Suite struct ReadingLimitTests {
    @Test("a 3 GiB file is refused from its size, in one line, exit 1; --max-bytes moves the bound")
    func aHugeFileIsRefusedUnread() async throws {
        try await withTemporaryDirectory { directory in
            // A sparse file: 3 GiB long, no disk used.
            let huge = directory + "/huge.png"
            #expect(
                FileManager.default.createFile(atPath: huge, contents: Data(SyntheticImages.png(width: 2, height: 2))))
            #expect(truncate(huge, 3 << 30) == 0)
            for command in [["info"], ["convert"]] {
                let arguments = command + [huge] + (command == ["convert"] ? [directory + "/out.png"] : [])
                let run = try await OspreyBinary.run(arguments)
                #expect(run.status == 1 && run.signal == nil, "\(command)")
                #expect(
                    run.standardError
                        == "\(huge): the file is \(3 << 30) bytes, over the limit of 67108864 (--max-bytes)\n")
            }
            let small = try write(SyntheticImages.png(width: 9, height: 5), to: directory + "/small.png")
            let limited = try await OspreyBinary.run(["info", "--max-bytes", "10", small])
            #expect(limited.status == 1 && limited.standardError.contains("over the limit of 10"))
            let enough = try await OspreyBinary.run(["info", "--max-bytes", "100000", small])
            #expect(enough.status == 0 && enough.standardOutput == "\(small): png 9x5, alpha\n")
            #expect(try await OspreyBinary.run(["info", "--max-bytes", "0", small]).status == 2)
        }
    }

    @Test("info reads a large JPEG's header only, and any stream whole")
    func headersAndStreams() async throws {
        try await withTemporaryDirectory { directory in
            // A JPEG followed by 5 MB of anything: its header is in the first megabyte.
            let jpeg = try ImageEncoder.encode(
                try ImageDecoder.decode(SyntheticImages.png(width: 30, height: 20)), as: .jpeg, quality: 80)
            let padded = try write(jpeg + [UInt8](repeating: 0xAB, count: 5_000_000), to: directory + "/big.jpg")
            let run = try await OspreyBinary.run(["info", padded])
            #expect(run.status == 0 && run.standardOutput == "\(padded): jpeg 30x20\n")

            let png = SyntheticImages.png(width: 7, height: 3)
            let file = try write(png, to: directory + "/p.png")
            let stdin = try await OspreyBinary.run(["info", "/dev/stdin"], inputFile: file)
            #expect(
                stdin.status == 0 && stdin.standardOutput == "/dev/stdin: png 7x3, alpha\n", "\(stdin.standardError)")
        }
    }

    @Test("a URL with a port outside 1–65535 is an error, not a crash")
    func anImpossiblePortIsAnError() async throws {
        for command in [["info"], ["convert"]] {
            let arguments = command + ["http://127.0.0.1:99999/x.jpg"] + (command == ["convert"] ? ["/tmp/x.png"] : [])
            let run = try await OspreyBinary.run(arguments)
            #expect(run.status == 1 && run.signal == nil, "\(command)")
            #expect(run.standardError.contains("the port is not between 1 and 65535"), "\(run.standardError)")
        }
    }
}

/// A 4×3 two-frame animation (100 ms, 250 ms, looping forever) encoded as `format`.
func animation(as format: ImageFormat) throws -> [UInt8] {
    let red = try PixelBuffer(
        width: 4, height: 3, format: .rgba8,
        bytes: [UInt8](repeating: 255, count: 48).enumerated().map {
            $0.offset % 4 == 1 || $0.offset % 4 == 2 ? 0 : 255
        })
    let blue = try PixelBuffer(
        width: 4, height: 3, format: .rgba8,
        bytes: [UInt8](repeating: 255, count: 48).enumerated().map {
            $0.offset % 4 == 0 || $0.offset % 4 == 1 ? 0 : 255
        })
    let image = try Image(
        frames: [
            ImageFrame(pixels: red, duration: .milliseconds(100)),
            ImageFrame(pixels: blue, duration: .milliseconds(250)),
        ],
        loopCount: 0)
    return try ImageEncoder.encode(image, as: format, quality: 90)
}

@discardableResult
func write(_ bytes: [UInt8], to path: String) throws -> String {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
}

func withTemporaryDirectory<Result>(_ body: (String) async throws -> Result) async throws -> Result {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("osprey-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory.path)
}
