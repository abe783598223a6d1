import Foundation
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import Osprey

/// SSIMULACRA 2 against its PyPI reference (`ssimulacra2`, a port of libjxl's tool) fed the very same pixels: corpus
/// photos re-encoded by Osprey as JPEG, WebP and AVIF from quality 10 to 95, each pair written losslessly for the
/// reference to read.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct ImageQualityReferenceTests {
    static let enabled = Testing.ConditionTrait.enabled(
        if: PeerPython.path != nil || PeerPython.isRequired, "no .build/test-venv (scripts/test-venv.sh)")

    static let distortions: [(ImageFormat, Int)] = [
        (.jpeg, 10), (.jpeg, 50), (.jpeg, 95), (.webp, 10), (.webp, 75), (.webp, 95), (.avif, 10), (.avif, 50),
        (.avif, 95),
    ]

    /// Three photos of the corpus, evenly spread, reduced (by Osprey) to fit 480 × 480.
    static func photos() throws -> [(String, Image)] {
        let entries = try TestData.manifest().entries.filter {
            $0.format == "jpeg" && $0.expected == .decodeOK && $0.width >= 480 && $0.height >= 320
                && $0.width * $0.height <= 12_000_000
        }.sorted { $0.path < $1.path }
        return try (0..<3).map { index in
            let entry = entries[index * entries.count / 3]
            let image = try ImageDecoder.decode(try TestData.bytes(entry.path))
            let reduced = try ImageProcessors.Resize(width: 480, height: 480).process(image)
            return (entry.path, Image(pixels: try reduced.frames[0].pixels.converted(to: .rgb8)))
        }
    }

    /// The corpus photos: still JPEG and WebP files of at least 500 × 400 pixels and 60 KB, reduced (by Osprey) to
    /// fit 480 × 480.
    static func allPhotos() throws -> [(String, Image)] {
        try TestData.manifest().entries.filter {
            ["jpeg", "webp"].contains($0.format) && $0.expected == .decodeOK && $0.frames == 1 && $0.width >= 500
                && $0.height >= 400 && $0.byteCount >= 60_000 && !$0.path.contains("cmyk")
        }.map { entry in
            let image = try ImageDecoder.decode(try TestData.bytes(entry.path))
            let reduced = try ImageProcessors.Resize(width: 480, height: 480).process(image)
            return (entry.path, Image(pixels: try reduced.frames[0].pixels.converted(to: .rgb8)))
        }
    }

    static let reference = #"""
        import sys
        from ssimulacra2 import compute_ssimulacra2
        for line in open(sys.argv[1] + "/pairs.txt"):
            reference, distorted = line.split()
            print(compute_ssimulacra2(reference, distorted))
        """#

    @Test(.requiresTestData, enabled)
    func agreesWithTheReference() async throws {
        let temporary = TemporaryDirectory()
        var pairs: [String] = []
        var ours: [(name: String, score: Double)] = []
        for (photoIndex, (path, photo)) in try Self.photos().enumerated() {
            let referenceFile = "\(temporary.path)/\(photoIndex).png"
            try Data(try ImageEncoder.encode(photo, as: .png)).write(to: URL(fileURLWithPath: referenceFile))
            let prepared = try ImageQuality.Reference(photo)
            for (format, quality) in Self.distortions {
                let distorted = try ImageDecoder.decode(try ImageEncoder.encode(photo, as: format, quality: quality))
                let file = "\(temporary.path)/\(photoIndex)-\(format.name)-\(quality).png"
                try Data(try ImageEncoder.encode(distorted, as: .png)).write(to: URL(fileURLWithPath: file))
                pairs.append("\(referenceFile) \(file)")
                ours.append(("\(path) as \(format.name) q\(quality)", try prepared.ssimulacra2(distorted)))
            }
        }
        try (pairs.joined(separator: "\n") + "\n").write(
            toFile: "\(temporary.path)/pairs.txt", atomically: true, encoding: .utf8)
        let run = try await PeerPython.run(Self.reference, arguments: [temporary.path])
        try #require(run.status == 0, "\(run.standardError)")
        let theirs = run.lines.compactMap(Double.init)
        try #require(theirs.count == ours.count)
        var worst = 0.0
        for (mine, reference) in zip(ours, theirs) {
            worst = max(worst, abs(mine.score - reference))
            #expect(abs(mine.score - reference) <= 1.0, "\(mine.name): \(mine.score) against \(reference)")
        }
        // The pairs span the scale: the worst far below 30, the best above 85.
        #expect(theirs.min()! < 30 && theirs.max()! > 85, "\(theirs)")
        print("ssimulacra2: \(ours.count) pairs, scores \(theirs.min()!)…\(theirs.max()!), worst difference \(worst)")
    }

    @Test(.requiresTestData, enabled)
    func perceptualQualityReachesItsTargetAsTheReferenceScoresIt() async throws {
        let temporary = TemporaryDirectory()
        let target = ImageOutput.Quality.defaultTarget
        var pairs: [String] = []
        var searches: [(name: String, quality: Int, encodes: Int)] = []
        for (photoIndex, (path, photo)) in try Self.allPhotos().enumerated() {
            let referenceFile = "\(temporary.path)/\(photoIndex).png"
            try Data(try ImageEncoder.encode(photo, as: .png)).write(to: URL(fileURLWithPath: referenceFile))
            for format in [ImageFormat.jpeg, .webp, .avif, .jxl] {
                let found = try ImageOutput.perceptualEncoding(
                    of: photo, as: format, options: EncodingOptions(), target: target)
                let file = "\(temporary.path)/\(photoIndex)-\(format.name).png"
                try Data(try ImageEncoder.encode(try ImageDecoder.decode(found.bytes), as: .png))
                    .write(to: URL(fileURLWithPath: file))
                pairs.append("\(referenceFile) \(file)")
                searches.append(("\(path) as \(format.name)", found.quality, found.encodes))
            }
        }
        try (pairs.joined(separator: "\n") + "\n").write(
            toFile: "\(temporary.path)/pairs.txt", atomically: true, encoding: .utf8)
        let run = try await PeerPython.run(Self.reference, arguments: [temporary.path])
        try #require(run.status == 0, "\(run.standardError)")
        let scores = run.lines.compactMap(Double.init)
        try #require(scores.count == searches.count)
        for (search, score) in zip(searches, scores) where search.quality < 100 {
            #expect(score >= target - 1, "\(search.name): q\(search.quality) scores \(score)")
        }
        // Most searches take four encodes or fewer, a probe included; none more than six and the probe.
        let quick = searches.filter { $0.encodes <= 4 }.count
        #expect(quick * 4 >= searches.count * 3, "\(searches.map { "\($0.name) \($0.encodes)" })")
        #expect(searches.allSatisfy { $0.encodes <= PerceptualSearch.attempts + 1 })
        print(
            "q=auto:\(target): \(searches.count) searches, \(quick) in four encodes or fewer, "
                + "encodes \(searches.map(\.encodes)), scores \(scores.map { ($0 * 10).rounded() / 10 })")
    }
}
