import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import OspreyCodecs
import OspreyTesting
import Testing

/// The same thumbor URLs sent to the real thumbor (PyPI, as deployed: its HTTP loader, file storage on) and to
/// `osprey serve --thumbor-path /`, against one origin: for every row the output's width, height and format are
/// thumbor's, and the pixels agree (SSIM ≥ 0.9 of the luma, after flattening onto white) except where docs/migrating.md
/// lists a deliberate difference (the row says which).
@Suite(.serialized, .timeLimit(.minutes(5)))
struct ThumborSideBySideTests {
    /// A row: the path after `/unsafe/` (the source appended), the source, and the documented difference, if any.
    struct Row: Sendable, CustomStringConvertible {
        let path: String
        let source: String
        let difference: String?

        init(_ path: String, _ source: String = "photo.jpg", differs difference: String? = nil) {
            (self.path, self.source, self.difference) = (path, source, difference)
        }

        var description: String { path + source }
    }

    static let rows: [Row] = [
        Row("300x200/"), Row("200x300/"), Row("300x0/"), Row("0x200/"), Row("100x100/"), Row("1600x1200/"),
        Row("fit-in/300x300/"), Row("fit-in/100x400/"), Row("fit-in/2000x2000/"), Row("full-fit-in/300x300/"),
        Row("adaptive-fit-in/200x400/"), Row("adaptive-full-fit-in/400x200/"), Row("-300x200/"), Row("300x-200/"),
        Row("-300x-200/"), Row("300x200/left/top/"), Row("300x200/right/bottom/"), Row("200x300/center/middle/"),
        Row("300x200/smart/", differs: "smart"), Row("100x100:600x500/200x150/"), Row("50x50:850x650/fit-in/200x200/"),
        Row("trim/", "bordered.png"), Row("trim:bottom-right:10/fit-in/200x200/", "bordered.png"),
        Row("300x200/filters:format(webp)/"), Row("300x200/filters:format(png)/"), Row("300x200/filters:quality(40)/"),
        Row("fit-in/300x300/filters:fill(red)/"), Row("fit-in/300x300/filters:fill(blur)/", differs: "fill(blur)"),
        Row("fit-in/300x300/filters:fill(auto)/"), Row("fit-in/300x300/filters:fill(ffffff):format(png)/", "alpha.png"),
        Row("300x200/filters:background_color(ff0000)/", "alpha.png"), Row("300x200/filters:blur(5)/"),
        Row("300x200/filters:brightness(40)/"), Row("300x200/filters:contrast(40)/"),
        Row("300x200/filters:saturation(0.3)/"), Row("300x200/filters:rgb(20,-20,10)/"),
        Row("300x200/filters:grayscale()/"), Row("300x200/filters:round_corner(30,255,255,255)/"),
        Row("300x200/filters:rotate(90)/"), Row("300x200/filters:rotate(180)/"),
        Row("300x200/filters:sharpen(2,1,true)/", differs: "sharpen"), Row("300x200/filters:strip_exif()/"),
        Row("300x200/filters:strip_icc()/"), Row("2000x2000/filters:no_upscale()/"),
        Row("fit-in/2000x2000/filters:upscale()/"), Row("300x200/filters:focal(100x100:300x300)/"),
        Row("300x200/filters:proportion(0.5)/"), Row("300x200/filters:watermark(MARK,10,10,50)/"),
        Row("300x200/filters:watermark(MARK,-10,-10,0,30,30)/"), Row("300x200/filters:stretch()/"),
    ]

    @Test(
        "≥ 40 thumbor URLs: thumbor's size and format, and pixels within SSIM 0.9, row by row",
        .requiresTestData,
        .enabled(
            if: PeerClientTests.python != nil || PeerClientTests.isRequired,
            "no .build/test-venv (scripts/test-venv.sh)"))
    func sideBySide() async throws {
        #expect(Self.rows.count >= 40)
        let python = try #require(PeerClientTests.python)
        let thumbor = URL(fileURLWithPath: python).deletingLastPathComponent().appendingPathComponent("thumbor").path
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route(
                "/photo.jpg", .ok(try TestData.bytes("valid/jpeg/photos/harvesters.jpeg"), contentType: "image/jpeg"))
            origin.route("/alpha.png", .ok(try Self.alphaPNG(), contentType: "image/png"))
            origin.route("/bordered.png", .ok(try Self.borderedPNG(), contentType: "image/png"))
            origin.route("/mark.png", .ok(try Self.markPNG(), contentType: "image/png"))
            try await withDirectory { directory in
                let configuration = directory + "/thumbor.conf"
                try """
                LOADER = 'thumbor.loaders.http_loader'
                STORAGE = 'thumbor.storages.file_storage'
                FILE_STORAGE_ROOT_PATH = '\(directory)/storage'
                RESULT_STORAGE = 'thumbor.result_storages.file_storage'
                RESULT_STORAGE_FILE_STORAGE_ROOT_PATH = '\(directory)/results'
                ALLOW_UNSAFE_URL = True
                NON_BLOCKING_SOCKETS = True
                """.write(toFile: configuration, atomically: true, encoding: .utf8)
                let peer = try PeerProcess(
                    thumbor, ["--fd", "3", "--conf", configuration, "-l", "error"], log: directory + "/thumbor.log")
                defer { peer.stop() }
                try await PeerClientTests.withServer(["--thumbor-path", "/", "--allow-unsigned"]) { get in
                    let client = HTTPClient(eventLoopGroupProvider: .singleton)
                    defer { _ = client.shutdown() }
                    var failures: [String] = []
                    for row in Self.rows {
                        let path =
                            "/unsafe/" + row.path.replacingOccurrences(of: "MARK", with: origin.url("/mark.png"))
                            + origin.url("/" + row.source)
                        let theirs = try await client.execute(
                            HTTPClientRequest(url: "http://127.0.0.1:\(peer.port)\(path)"), timeout: .seconds(60))
                        let theirBytes = Array(try await theirs.body.collect(upTo: 64 << 20).readableBytesView)
                        let (status, _, ourBytes) = try await get(path)
                        guard theirs.status.code == 200, status == 200 else {
                            failures.append("\(row): thumbor \(theirs.status.code), osprey \(status)")
                            continue
                        }
                        let theirImage = try ImageDecoder.decode(theirBytes)
                        let ourImage = try ImageDecoder.decode(ourBytes)
                        let theirFormat = ImageCoderRegistry.shared.format(of: theirBytes)
                        let ourFormat = ImageCoderRegistry.shared.format(of: ourBytes)
                        guard (ourImage.width, ourImage.height) == (theirImage.width, theirImage.height),
                            ourFormat == theirFormat
                        else {
                            failures.append(
                                "\(row): thumbor \(theirImage.width)x\(theirImage.height) \(theirFormat.name), "
                                    + "osprey \(ourImage.width)x\(ourImage.height) \(ourFormat.name)")
                            continue
                        }
                        let similarity = try Similarity.ssim(ourImage, theirImage)
                        if similarity < 0.9, row.difference == nil {
                            failures.append("\(row): SSIM \(similarity)")
                        }
                        print(
                            "side by side: \(row): \(ourImage.width)x\(ourImage.height) \(ourFormat.name), SSIM \(similarity)"
                        )
                    }
                    #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
                }
            }
        }
    }

    /// A 400×300 PNG with a transparent band round an opaque gradient.
    static func alphaPNG() throws -> [UInt8] {
        let pixels = try PixelBuffer(
            width: 400, height: 300, format: .rgba8,
            bytes: (0..<300).flatMap { y in
                (0..<400).flatMap { x -> [UInt8] in
                    let inside = (40..<360).contains(x) && (30..<270).contains(y)
                    return [UInt8(x * 255 / 400), UInt8(y * 255 / 300), 120, inside ? 255 : 0]
                }
            })
        return try ImageEncoder.encode(Image(pixels: pixels), as: .png)
    }

    /// A 600×400 PNG: a gradient with a 50-pixel white border.
    static func borderedPNG() throws -> [UInt8] {
        let pixels = try PixelBuffer(
            width: 600, height: 400, format: .rgb8,
            bytes: (0..<400).flatMap { y in
                (0..<600).flatMap { x -> [UInt8] in
                    guard (50..<550).contains(x), (50..<350).contains(y) else { return [255, 255, 255] }
                    return [UInt8(x * 255 / 600), 90, UInt8(y * 255 / 400)]
                }
            })
        return try ImageEncoder.encode(Image(pixels: pixels), as: .png)
    }

    /// A 60×40 semi-transparent red mark.
    static func markPNG() throws -> [UInt8] {
        let pixels = try PixelBuffer(
            width: 60, height: 40, format: .rgba8,
            bytes: Array([[UInt8]](repeating: [220, 30, 30, 200], count: 60 * 40).joined()))
        return try ImageEncoder.encode(Image(pixels: pixels), as: .png)
    }
}

/// SSIM of two images' luma (after flattening onto white), as scikit-image computes it by default: 7×7 uniform
/// windows, K1 0.01, K2 0.03, sample covariances, the mean over the windows that fit.
enum Similarity {
    static func ssim(_ a: Image, _ b: Image) throws -> Double {
        let (x, y) = (try luma(a), try luma(b))
        precondition(a.width == b.width && a.height == b.height)
        return ssim(x, y, width: a.width, height: a.height)
    }

    static func luma(_ image: Image) throws -> [Double] {
        let pixels = try image.pixels.converted(to: .rgba8)
        var values: [Double] = []
        values.reserveCapacity(pixels.width * pixels.height)
        for row in 0..<pixels.height {
            let bytes = pixels.row(row)
            for column in 0..<pixels.width {
                let base = bytes.startIndex + column * 4
                let alpha = Double(bytes[base + 3]) / 255
                func channel(_ offset: Int) -> Double { Double(bytes[base + offset]) * alpha + 255 * (1 - alpha) }
                values.append(0.299 * channel(0) + 0.587 * channel(1) + 0.114 * channel(2))
            }
        }
        return values
    }

    static func ssim(_ x: [Double], _ y: [Double], width: Int, height: Int) -> Double {
        let window = 7
        guard width >= window, height >= window else { return x == y ? 1 : 0 }
        // Summed-area tables of x, y, x², y² and xy.
        func table(_ value: (Int) -> Double) -> [Double] {
            var sums = [Double](repeating: 0, count: (width + 1) * (height + 1))
            for row in 0..<height {
                var running = 0.0
                for column in 0..<width {
                    running += value(row * width + column)
                    sums[(row + 1) * (width + 1) + column + 1] = sums[row * (width + 1) + column + 1] + running
                }
            }
            return sums
        }
        let sx = table { x[$0] }, sy = table { y[$0] }
        let sxx = table { x[$0] * x[$0] }, syy = table { y[$0] * y[$0] }, sxy = table { x[$0] * y[$0] }
        func sum(_ sums: [Double], _ row: Int, _ column: Int) -> Double {
            let w = width + 1
            return sums[(row + window) * w + column + window] - sums[row * w + column + window]
                - sums[(row + window) * w + column] + sums[row * w + column]
        }
        let n = Double(window * window)
        let (c1, c2) = ((0.01 * 255) * (0.01 * 255), (0.03 * 255) * (0.03 * 255))
        var total = 0.0
        var count = 0
        for row in 0...(height - window) {
            for column in 0...(width - window) {
                let (mx, my) = (sum(sx, row, column) / n, sum(sy, row, column) / n)
                let vx = (sum(sxx, row, column) - n * mx * mx) / (n - 1)
                let vy = (sum(syy, row, column) - n * my * my) / (n - 1)
                let cxy = (sum(sxy, row, column) - n * mx * my) / (n - 1)
                total += (2 * mx * my + c1) * (2 * cxy + c2) / ((mx * mx + my * my + c1) * (vx + vy + c2))
                count += 1
            }
        }
        return total / Double(count)
    }
}
