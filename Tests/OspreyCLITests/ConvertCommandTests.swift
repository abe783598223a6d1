import Foundation
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@Suite struct ConvertCommandTests {
    @Test(
        "converts to the format the extension names",
        arguments: [("jpg", ImageFormat.jpeg), ("png", .png), ("webp", .webp), ("gif", .gif)])
    func byExtension(extension: String, format: ImageFormat) async throws {
        try await withTemporaryDirectory { directory in
            let input = try write(SyntheticImages.png(width: 20, height: 10), to: directory + "/in.png")
            let output = directory + "/out." + `extension`
            let run = try await OspreyBinary.run(["convert", input, output])
            #expect(run.status == 0)
            let image = try ImageDecoder.decode(try Data(contentsOf: URL(fileURLWithPath: output)))
            #expect(image.sourceFormat == format)
            #expect(image.width == 20 && image.height == 10)
        }
    }

    @Test func formatAndQualityOptions() async throws {
        try await withTemporaryDirectory { directory in
            let input = try write(SyntheticImages.png(width: 64, height: 64), to: directory + "/in.png")
            #expect(
                try await OspreyBinary.run([
                    "convert", input, directory + "/low.out", "--format", "jpeg", "--quality", "10",
                ])
                .status == 0)
            #expect(
                try await OspreyBinary.run([
                    "convert", input, directory + "/high.out", "--format", "jpeg", "--quality", "95",
                ])
                .status == 0)
            let low = try Data(contentsOf: URL(fileURLWithPath: directory + "/low.out"))
            let high = try Data(contentsOf: URL(fileURLWithPath: directory + "/high.out"))
            #expect(ImageFormat(sniffing: low) == .jpeg)
            #expect(low.count < high.count)
        }
    }

    /// A 128 × 96 picture of waves and gradients (thousands of colours), as RGB.
    static func waves() throws -> Image {
        var bytes: [UInt8] = []
        for y in 0..<96 {
            for x in 0..<128 {
                bytes += [UInt8(128 + 100 * sin(Double(x) / 3 + Double(y) / 11)), UInt8(x * 2), UInt8(y * 2)]
            }
        }
        return Image(pixels: try PixelBuffer(width: 128, height: 96, format: .rgb8, bytes: bytes))
    }

    @Test("--quality below 100 writes a PNG in a palette of at most 256 colours, as pngquant does; none, truecolour")
    func palettePNG() async throws {
        try await withTemporaryDirectory { directory in
            let source = try Self.waves()
            let input = try write(try ImageEncoder.encode(source, as: .png), to: directory + "/in.png")
            for (quality, colourType) in [("70", UInt8(3)), (nil, 2), ("100", 2)] {
                let output = directory + "/out-\(quality ?? "none").png"
                let run = try await OspreyBinary.run(
                    ["convert", input, output] + (quality.map { ["--quality", $0] } ?? []))
                #expect(run.status == 0, "\(run.standardError)")
                let written = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
                #expect(written[25] == colourType, "--quality \(quality ?? "none")")
                let decoded = try ImageDecoder.decode(written)
                if colourType == 2 { #expect(decoded.pixels == source.pixels) }
            }
        }
    }

    @Test("--effort 1-9 trades encode time for bytes in WebP; outside the scale it is a usage error")
    func effort() async throws {
        try await withTemporaryDirectory { directory in
            let input = try write(try ImageEncoder.encode(try Self.waves(), as: .png), to: directory + "/in.png")
            var sizes: [Int] = []
            for effort in ["1", "9"] {
                let output = directory + "/e\(effort).webp"
                let run = try await OspreyBinary.run(["convert", input, output, "--quality", "80", "--effort", effort])
                #expect(run.status == 0, "\(run.standardError)")
                sizes.append(try Data(contentsOf: URL(fileURLWithPath: output)).count)
            }
            #expect(sizes[1] < sizes[0], "\(sizes)")
            let refused = try await OspreyBinary.run(["convert", input, directory + "/x.webp", "--effort", "10"])
            #expect(refused.status == 2, "\(refused.standardError)")
            #expect(refused.standardError.contains("--effort must be between 1 and 9"))
        }
    }

    @Test("--quality auto:T writes the lowest quality that scores T; a target outside 1-100 is a usage error")
    func perceptualQuality() async throws {
        try await withTemporaryDirectory { directory in
            let source = try Self.waves()
            let input = try write(try ImageEncoder.encode(source, as: .png), to: directory + "/in.png")
            var sizes: [Int] = []
            for target in ["50", "75"] {
                let output = directory + "/auto\(target).webp"
                let run = try await OspreyBinary.run(["convert", input, output, "--quality", "auto:" + target])
                #expect(run.status == 0, "\(run.standardError)")
                let written = try Data(contentsOf: URL(fileURLWithPath: output))
                let score = try ImageQuality.ssimulacra2(reference: source, distorted: try ImageDecoder.decode(written))
                #expect(score >= Double(target)!, "auto:\(target) scores \(score)")
                sizes.append(written.count)
            }
            #expect(sizes[0] < sizes[1])
            #expect(
                try await OspreyBinary.run(["convert", input, directory + "/d.jpg", "--quality", "auto"]).status == 0)
            for bad in ["auto:0", "auto:101", "auto:", "automatic"] {
                let run = try await OspreyBinary.run(["convert", input, directory + "/e.jpg", "--quality", bad])
                #expect(run.status == 2, "--quality \(bad): \(run.standardError)")
            }
        }
    }

    @Test func aProfileThatCannotBeUsedIsReportedAndTheImageConverted() async throws {
        try await withTemporaryDirectory { directory in
            let jpeg = try ImageEncoder.encode(
                Image(pixels: try PixelBuffer(width: 8, height: 8, format: .rgb8)), as: .jpeg)
            // One APP2 ICC_PROFILE segment announcing two.
            let segment = [0xFF, 0xE2, 0x00, 0x14] + Array("ICC_PROFILE".utf8) + [0, 1, 2, 9, 9, 9, 9]
            let input = try write(Array(jpeg[0..<2]) + segment + jpeg[2...], to: directory + "/in.jpg")
            let run = try await OspreyBinary.run(["convert", input, directory + "/out.png"])
            #expect(run.status == 0)
            #expect(
                run.standardError.contains(
                    "warning: colour profile ignored: its APP2 ICC_PROFILE segments are incomplete or out of order"),
                "\(run.standardError)")
            #expect(FileManager.default.fileExists(atPath: directory + "/out.png"))
        }
    }

    @Test func keepsAnimations() async throws {
        try await withTemporaryDirectory { directory in
            let input = try write(try animation(as: .gif), to: directory + "/in.gif")
            #expect(try await OspreyBinary.run(["convert", input, directory + "/out.webp"]).status == 0)
            let image = try ImageDecoder.decode(try Data(contentsOf: URL(fileURLWithPath: directory + "/out.webp")))
            #expect(image.frames.map(\.duration) == [.milliseconds(100), .milliseconds(250)])
        }
    }

    @Test func errors() async throws {
        try await withTemporaryDirectory { directory in
            let text = try write(Array("hello".utf8), to: directory + "/a.png")
            let bad = try await OspreyBinary.run(["convert", text, directory + "/b.png"])
            #expect(bad.status == 1)
            #expect(bad.standardError == "\(text): unsupported image format\n")
            #expect(!FileManager.default.fileExists(atPath: directory + "/b.png"))

            let missing = try await OspreyBinary.run(["convert", directory + "/nope.png", directory + "/b.png"])
            #expect(missing.status == 1)
            #expect(missing.standardError == "\(directory)/nope.png: no such file\n")

            // Usage errors: unknown extension without --format, quality out of range.
            #expect(try await OspreyBinary.run(["convert", text, directory + "/b.bmp"]).status == 2)
            #expect(
                try await OspreyBinary.run(["convert", text, directory + "/b.jpg", "--quality", "101"]).status == 2)
        }
    }

    @Test(
        "a header whose memory estimate is Int.max is refused by the memory budget, with --resize too (no overflow trap)",
        .requiresTestData)
    func hostileEstimateWithResize() async throws {
        try await withTemporaryDirectory { directory in
            // 2147483586 × 1073741793 pixels: the estimate saturates at Int.max, and the downsample adds the image's bytes.
            let input = try #require(TestData.imagesDirectory) + "/invalid/jxl/fuzz/num_groups_overflow.fuzz"
            for resize in [[], ["--resize", "64x64"]] {
                let run = try await OspreyBinary.run(["convert", input, directory + "/o.jpg"] + resize)
                #expect(run.signal == nil && run.status == 1, "\(resize): \(run.status) \(run.standardError)")
                #expect(
                    run.standardError.contains("decoding needs about 9223372036854775807 bytes, more than the memory"))
                #expect(!FileManager.default.fileExists(atPath: directory + "/o.jpg"))
            }
        }
    }

    @Test(
        "P3 in: sRGB pixels and no profile by default, the profile and the stored pixels with --keep-profile",
        .requiresTestData)
    func profiles() async throws {
        try await withTemporaryDirectory { directory in
            let source = try TestData.bytes("valid/colour/P3-sRGB-color-bars.jpg")
            let input = try write(source, to: directory + "/p3.jpg")
            #expect(try await OspreyBinary.run(["convert", input, directory + "/srgb.png"]).status == 0)
            #expect(
                try await OspreyBinary.run(["convert", input, directory + "/p3.png", "--keep-profile"]).status == 0)

            let converted = try Array(Data(contentsOf: URL(fileURLWithPath: directory + "/srgb.png")))
            #expect(ColorProfile(embeddedIn: converted) == nil)
            #expect(try ImageDecoder.decode(converted).pixels == ImageDecoder.decode(source).pixels)

            let kept = try Array(Data(contentsOf: URL(fileURLWithPath: directory + "/p3.png")))
            #expect(ColorProfile(embeddedIn: kept) == ColorProfile(embeddedIn: source))
            var keeping = DecodingOptions()
            keeping.colorHandling = .keepProfile
            let stored = try ImageDecoder.decode(source, options: keeping)
            #expect(try ImageDecoder.decode(kept, options: keeping).pixels == stored.pixels)
            // Not sRGB: converting would have changed them.
            #expect(try stored.pixels != ImageDecoder.decode(source).pixels)
        }
    }

    @Test func metadata() async throws {
        try await withTemporaryDirectory { directory in
            let input = try write(try TaggedImages.jpeg(), to: directory + "/tagged.jpg")
            func written(_ arguments: [String]) async throws -> ImageMetadata {
                let output = directory + "/out.jpg"
                #expect(try await OspreyBinary.run(["convert", input, output] + arguments).status == 0)
                return ImageMetadata(embeddedIn: Array(try Data(contentsOf: URL(fileURLWithPath: output))))
            }
            await #expect(try written([]).isEmpty)
            let copyright = try await written(["--keep-metadata", "copyright"])
            #expect(TaggedImages.ifd0Tags(try #require(copyright.exif)) == [0x013B, 0x8298])
            let all = try await written(["--keep-metadata", "all"])
            #expect(TaggedImages.ifd0Tags(try #require(all.exif)) == [0x010F, 0x0112, 0x013B, 0x8298, 0x8825])
            #expect(
                try await OspreyBinary.run(["convert", input, directory + "/x.jpg", "--keep-metadata", "gps"]).status
                    == 2)
        }
    }

    @Test(
        "--original-jpeg writes the JPEG a JPEG XL was recompressed from, byte for byte (info tells); refuses other inputs",
        .requiresTestData)
    func originalJPEG() async throws {
        try await withTemporaryDirectory { directory in
            let source = try TestData.bytes("valid/jxl/misc/jxl-isobmff.jxl")
            let input = try write(source, to: directory + "/in.jxl")
            let run = try await OspreyBinary.run(["convert", input, directory + "/out.jpg", "--original-jpeg"])
            #expect(run.status == 0)
            let expected = try #require(try source.withUnsafeBytes { try JXLCoder.reconstructedJPEG(from: $0) })
            #expect(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/out.jpg"))) == expected)
            // `info` says so: in text, and in JSON.
            let info = try await OspreyBinary.run(["info", input])
            #expect(info.standardOutput.contains("recompressed from a JPEG (convert --original-jpeg writes it back)"))
            #expect(
                try await OspreyBinary.run(["info", "--json", input]).standardOutput.contains(#""originalJPEG":true"#))

            let plain = try write(
                try TestData.bytes("valid/jxl/misc/progressive_ac.jxl"), to: directory + "/plain.jxl")
            let refused = try await OspreyBinary.run(["convert", plain, directory + "/plain.jpg", "--original-jpeg"])
            #expect(refused.status == 1)
            #expect(refused.standardError.contains("no JPEG reconstruction data"))
            #expect(!(try await OspreyBinary.run(["info", "--json", plain]).standardOutput.contains("originalJPEG")))
            #expect(!FileManager.default.fileExists(atPath: directory + "/plain.jpg"))
            // Usage errors: a change of pixels asked for, or an output that is not a JPEG.
            let resized = ["convert", input, directory + "/x.jpg", "--original-jpeg", "--resize", "64x64"]
            #expect(try await OspreyBinary.run(resized).status == 2)
            #expect(
                try await OspreyBinary.run(["convert", input, directory + "/x.png", "--original-jpeg"]).status == 2)
        }
    }
}
