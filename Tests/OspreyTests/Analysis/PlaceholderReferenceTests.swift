import Foundation
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

/// BlurHash, ThumbHash, the perceptual hash and the colours, each compared with its reference implementation fed the
/// very same pixels: PyPI `blurhash` (string equal), `thumbhash-python` (bytes equal), `imagehash.phash` (Hamming
/// distance at most 2; Osprey reduces and converts to grey as Pillow does, integer for integer, and finds 0),
/// the alpha-weighted mean (within 1 level), and scikit-learn's `KMeans` (k-means++, best of 10), whose every colour
/// holding 10 % of the pixels or more must have one of ours within ΔE2000 5 (PyPI `pyciede2000`) — or, where the
/// clusters are ties that k-means may settle either way (a linear gradient, blocks of equal size: at most one sample in
/// ten), ours must be at least as good a clustering by the squared error both minimise (within 0.01 %).
@Suite(.serialized, .timeLimit(.minutes(5)))
struct PlaceholderReferenceTests {
    static let enabled = Testing.ConditionTrait.enabled(
        if: PeerPython.path != nil || PeerPython.isRequired, "no .build/test-venv (scripts/test-venv.sh)")

    /// Pixels with alpha, tiny and extreme shapes, made here.
    static func syntheticSamples() throws -> [(String, PixelBuffer)] {
        func buffer(_ width: Int, _ height: Int, _ pixel: (Int, Int) -> [UInt8]) throws -> PixelBuffer {
            var bytes: [UInt8] = []
            for y in 0..<height { for x in 0..<width { bytes += pixel(x, y) } }
            return try PixelBuffer(width: width, height: height, format: .rgba8, bytes: bytes)
        }
        return [
            ("gradient-alpha", try buffer(90, 60) { x, y in [UInt8(x * 2), UInt8(y * 4), 200, UInt8(255 - x * 2)] }),
            ("one-pixel", try buffer(1, 1) { _, _ in [12, 200, 99, 255] }),
            ("strip", try buffer(100, 3) { x, _ in [UInt8(x * 2), 40, UInt8(255 - x * 2), 255] }),
            ("tall", try buffer(4, 97) { _, y in [UInt8(y), UInt8(y * 2), 7, y % 2 == 0 ? 255 : 100] }),
            ("transparent", try buffer(20, 20) { _, _ in [0, 0, 0, 0] }),
            ("two-colours", try buffer(64, 64) { x, _ in x < 40 ? [230, 30, 30, 255] : [20, 20, 220, 255] }),
        ]
    }

    /// 24 decodable files of the corpus, six per format, evenly spread, each reduced (by Osprey) to fit 100 × 100.
    static func corpusSamples() throws -> [(String, PixelBuffer)] {
        let manifest = try TestData.manifest()
        var samples: [(String, PixelBuffer)] = []
        for format in ["jpeg", "png", "gif", "webp"] {
            let entries = manifest.entries.filter {
                $0.format == format && $0.expected == .decodeOK && $0.width >= 16 && $0.height >= 16
                    && $0.width * $0.height <= 4_000_000
            }.sorted { $0.path < $1.path }
            for index in 0..<6 {
                let entry = entries[index * entries.count / 6]
                let image = try ImageDecoder.decode(try TestData.bytes(entry.path))
                let reduced = try ImageProcessors.Resize(width: 100, height: 100).process(image)
                samples.append((entry.path, try ImagePlaceholders(reduced).pixels))
            }
        }
        return samples
    }

    static let reference = #"""
        import sys, base64, json
        import numpy as np
        from PIL import Image
        import blurhash, imagehash
        from thumbhash.encode import rgba_to_thumbhash
        from sklearn.cluster import KMeans
        from pyciede2000 import ciede2000

        def lab(hex_colour):
            rgb = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
            linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
            m = [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
            xyz = [sum(m[r][c] * linear[c] for c in range(3)) for r in range(3)]
            white = (0.95047, 1.0, 1.08883)
            f = [t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116 for t in (v / w for v, w in zip(xyz, white))]
            return (min(max(116 * f[1] - 16, 0), 100), 500 * (f[0] - f[1]), 200 * (f[1] - f[2]))

        directory = sys.argv[1]
        for line in open(directory + "/samples.json"):
            sample = json.loads(line)
            w, h = sample["width"], sample["height"]
            raw = open(directory + "/" + sample["file"], "rb").read()
            pixels = np.frombuffer(raw, dtype=np.uint8).reshape(h, w, 4)
            result = {"name": sample["name"]}
            result["blurhash"] = blurhash.encode(pixels[:, :, :3].tolist(), 4, 3)
            result["thumbhash"] = base64.b64encode(rgba_to_thumbhash(w, h, list(raw))).decode()
            result["phash"] = str(imagehash.phash(Image.fromarray(np.ascontiguousarray(pixels[:, :, :3]), "RGB")))
            alpha = pixels[:, :, 3].astype(np.float64)
            if alpha.sum() > 0:
                result["average"] = [float((pixels[:, :, c] * alpha).sum() / alpha.sum()) for c in range(3)]
            opaque = pixels[pixels[:, :, 3] >= 128][:, :3].astype(np.float64)
            worst = 0.0
            if len(opaque) >= 5 and len(np.unique(opaque, axis=0)) >= 5:
                model = KMeans(n_clusters=5, n_init=10, random_state=0).fit(opaque)
                centres, labels = model.cluster_centers_, model.labels_
                shares = np.bincount(labels, minlength=len(centres)) / len(opaque)
                ours = [lab(colour) for colour in sample["dominant"]]
                for centre, share in zip(centres, shares):
                    if share < 0.10:
                        continue
                    theirs = lab("#%02x%02x%02x" % tuple(int(round(c)) for c in centre))
                    worst = max(worst, min(ciede2000(theirs, mine)["delta_E_00"] for mine in ours))
                mine = np.array([[int(c[i:i + 2], 16) for i in (1, 3, 5)] for c in sample["dominant"]], dtype=np.float64)
                def squared_error(palette):
                    return float(((opaque[:, None, :] - palette[None, :, :]) ** 2).sum(axis=2).min(axis=1).sum())
                result["errors"] = [squared_error(mine), squared_error(centres)]
            result["worstDeltaE"] = worst
            print(json.dumps(result))
        """#

    @Test(.requiresTestData, enabled, .timeLimit(.minutes(5)))
    func matchesTheReferences() async throws {
        let samples = try Self.syntheticSamples() + Self.corpusSamples()
        let temporary = TemporaryDirectory()
        let directory = temporary.path
        do {
            var lines: [String] = []
            var ours: [String: (blurHash: String, thumbHash: String, pHash: String, average: String)] = [:]
            for (index, (name, pixels)) in samples.enumerated() {
                let placeholders = try ImagePlaceholders(pixels: pixels)
                var raw: [UInt8] = []
                pixels.withUnsafeBytes { bytes in
                    for y in 0..<pixels.height {
                        raw += bytes[(y * pixels.bytesPerRow)..<(y * pixels.bytesPerRow + pixels.width * 4)]
                    }
                }
                try Data(raw).write(to: URL(fileURLWithPath: "\(directory)/\(index).rgba"))
                let dominant = placeholders.dominantColors(count: 5).map(\.color)
                let sample: [String: Any] = [
                    "name": name, "file": "\(index).rgba", "width": pixels.width, "height": pixels.height,
                    "dominant": dominant,
                ]
                lines.append(String(decoding: try JSONSerialization.data(withJSONObject: sample), as: UTF8.self))
                ours[name] = (
                    try placeholders.blurHash(), try placeholders.thumbHash(), placeholders.perceptualHash,
                    placeholders.averageColor
                )
            }
            try (lines.joined(separator: "\n") + "\n").write(
                toFile: "\(directory)/samples.json", atomically: true, encoding: .utf8)
            let run = try await PeerPython.run(Self.reference, arguments: [directory])
            try #require(run.status == 0, "\(run.standardError)")
            #expect(run.lines.count == samples.count)
            var worstHamming = 0
            var paletteMatches = 0
            for line in run.lines {
                let result = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let name = try #require(result["name"] as? String)
                let mine = try #require(ours[name])
                #expect(mine.blurHash == result["blurhash"] as? String, "BlurHash of \(name)")
                #expect(mine.thumbHash == result["thumbhash"] as? String, "ThumbHash of \(name)")
                let theirText = try #require(result["phash"] as? String)
                let theirs = try #require(UInt64(theirText, radix: 16))
                let distance = (try #require(UInt64(mine.pHash, radix: 16)) ^ theirs).nonzeroBitCount
                worstHamming = max(worstHamming, distance)
                #expect(distance <= 2, "pHash of \(name): \(mine.pHash) vs \(String(theirs, radix: 16))")
                if let average = result["average"] as? [Double] {
                    let levels = [1, 3, 5].map { Int(mine.average.dropFirst($0).prefix(2), radix: 16)! }
                    for (level, reference) in zip(levels, average) {
                        #expect(abs(Double(level) - reference) <= 1, "average colour of \(name): \(mine.average)")
                    }
                }
                let deltaE = try #require(result["worstDeltaE"] as? Double)
                if deltaE <= 5 {
                    paletteMatches += 1
                } else {
                    // Another optimum: at least as good a clustering, by the squared error k-means minimises.
                    let errors = try #require(result["errors"] as? [Double])
                    #expect(
                        errors[0] <= errors[1] * 1.0001,
                        "dominant colours of \(name): ΔE2000 \(deltaE), squared error \(errors[0]) against \(errors[1])"
                    )
                }
            }
            // The other optima are rare: images whose clusters are ties (a linear gradient, blocks of equal size).
            #expect(paletteMatches >= samples.count * 9 / 10)
            print(
                "placeholders: \(samples.count) samples, worst pHash distance \(worstHamming), "
                    + "\(paletteMatches) palettes within ΔE2000 5")
        }
    }

    @Test func blurHashRefusesComponentsOutsideOneToNine() throws {
        let placeholders = try ImagePlaceholders(
            pixels: try PixelBuffer(width: 2, height: 2, format: .rgba8, bytes: [UInt8](repeating: 255, count: 16)))
        #expect(throws: ImageProcessingError.self) { try placeholders.blurHash(componentsX: 0, componentsY: 3) }
        #expect(throws: ImageProcessingError.self) { try placeholders.blurHash(componentsX: 4, componentsY: 10) }
        // A white image: the DC is white, no AC at all.
        #expect(try placeholders.blurHash(componentsX: 1, componentsY: 1) == "00TSUA")  // as PyPI blurhash gives
        #expect(placeholders.averageColor == "#ffffff")
        #expect(placeholders.dominantColors().map(\.color) == ["#ffffff"])
    }

    @Test func largeImagesAreReducedBeforeHashing() throws {
        var bytes: [UInt8] = []
        for y in 0..<400 { for x in 0..<600 { bytes += [UInt8(x % 256), UInt8(y % 256), 128, 255] } }
        let large = try ImagePlaceholders(
            pixels: try PixelBuffer(width: 600, height: 400, format: .rgba8, bytes: bytes))
        let reduced = try ImageProcessors.Resize(width: 100, height: 100).process(Image(pixels: large.pixels))
        let small = try ImagePlaceholders(reduced)
        #expect(try large.blurHash() == small.blurHash())
        #expect(try large.thumbHash() == small.thumbHash())
        #expect(try large.thumbHashBytes().count <= 25)
    }
}
