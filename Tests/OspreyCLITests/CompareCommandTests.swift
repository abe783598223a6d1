import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

/// `osprey compare`: the score as the last field, JSON, and the errors.
struct CompareCommandTests {
    @Test func printsTheScoreAsTheLastFieldOfItsLine() async throws {
        try await withDirectory { directory in
            var bytes: [UInt8] = []
            for y in 0..<48 { for x in 0..<64 { bytes += [UInt8(x * 4), UInt8(y * 5), UInt8((x ^ y) * 3 % 256)] } }
            let image = Image(pixels: try PixelBuffer(width: 64, height: 48, format: .rgb8, bytes: bytes))
            try Data(try ImageEncoder.encode(image, as: .png)).write(to: URL(fileURLWithPath: directory + "/a.png"))
            try Data(try ImageEncoder.encode(image, as: .jpeg, quality: 30))
                .write(to: URL(fileURLWithPath: directory + "/a.jpg"))

            let same = try await OspreyBinary.run(["compare", directory + "/a.png", directory + "/a.png"])
            #expect(same.status == 0, "\(same.standardError)")
            #expect(same.standardOutput == "\(directory)/a.png \(directory)/a.png: ssimulacra2 100.00000000\n")

            let lossy = try await OspreyBinary.run(["compare", directory + "/a.png", directory + "/a.jpg"])
            let score = try #require(Double(lossy.standardOutput.split(separator: " ").last!.dropLast()))
            #expect(score > 0 && score < 90, "\(lossy.standardOutput)")

            let json = try await OspreyBinary.run(["compare", "--json", directory + "/a.png", directory + "/a.jpg"])
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
            #expect(object["ssimulacra2"] as? Double == score)
            #expect(object["reference"] as? String == directory + "/a.png")
        }
    }

    @Test func imagesOfAnotherSizeOrUnreadableAreErrors() async throws {
        try await withDirectory { directory in
            let small = Image(pixels: try PixelBuffer(width: 20, height: 10, format: .rgb8))
            let large = Image(pixels: try PixelBuffer(width: 20, height: 11, format: .rgb8))
            try Data(try ImageEncoder.encode(small, as: .png)).write(to: URL(fileURLWithPath: directory + "/s.png"))
            try Data(try ImageEncoder.encode(large, as: .png)).write(to: URL(fileURLWithPath: directory + "/l.png"))
            let sizes = try await OspreyBinary.run(["compare", directory + "/s.png", directory + "/l.png"])
            #expect(sizes.status == 1)
            #expect(sizes.standardError == "osprey compare: the images differ in size: 20x10 and 20x11\n")
            let missing = try await OspreyBinary.run(["compare", "--json", directory + "/s.png", directory + "/n.png"])
            #expect(missing.status == 1)
            #expect(missing.standardOutput.contains(#""error":"\#(directory)/n.png: "#), "\(missing.standardOutput)")
        }
    }
}
