import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

/// `EncodingOptions.setEffort(_:)`: one scale for the WebP, AVIF and JPEG XL encoders' effort.
@Suite struct EncoderEffortTests {
    @Test func theScaleSetsEachEncodersOwnSetting() {
        var options = EncodingOptions()
        var seen: [(Int, Int, Int)] = []
        for effort in 1...9 {
            options.setEffort(effort)
            seen.append((options.webpMethod, options.avifSpeed, options.jxlEffort))
        }
        #expect(seen.map(\.0) == [0, 0, 1, 2, 3, 3, 4, 5, 6])
        #expect(seen.map(\.1) == [9, 8, 7, 6, 5, 4, 3, 2, 1])
        #expect(seen.map(\.2) == Array(1...9))
        options.setEffort(42)
        #expect((options.webpMethod, options.avifSpeed, options.jxlEffort) == (6, 1, 9))
        options.setEffort(-1)
        #expect((options.webpMethod, options.avifSpeed, options.jxlEffort) == (0, 9, 1))
    }

    @Test("more effort writes fewer bytes of a photo for WebP and JPEG XL, at the same quality", .requiresTestData)
    func effortShrinksTheFile() throws {
        let photo = try ImageDecoder.decode(try TestData.bytes("valid/png/photos/hibiscus.primitive.png"))
        for format in [ImageFormat.webp, .jxl] {
            var sizes: [Int] = []
            for effort in [1, 9] {
                var options = EncodingOptions()
                options.quality = 80
                options.setEffort(effort)
                sizes.append(try ImageEncoder.encode(photo, as: format, options: options).count)
            }
            #expect(sizes[1] < sizes[0], "\(format): \(sizes)")
        }
    }
}
