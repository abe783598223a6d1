import Foundation
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// The decoding-size hint a request carries: the decoder scales from the header's size, whatever processor (or
/// caller) gives the hint.
@Suite("Decoding-size hints", .timeLimit(.minutes(2)))
struct DecodingSizeHintTests {
    /// Records the size of every image it is given, and passes the image on.
    final class SizeProbe: ImageProcessing, Sendable {
        private let sizes = Mutex<[ImageSize]>([])
        var identifier: String { "test.probe" }
        var seen: [ImageSize] { sizes.withLock { $0 } }

        func process(_ image: Image) throws -> Image {
            sizes.withLock { $0.append(ImageSize(width: image.width, height: image.height)) }
            return image
        }
    }

    @Test("a hint set on the request decodes a 1600 × 1200 JPEG at 1/8; without one, at full size")
    func aHintOnTheRequestScalesTheDecode() async throws {
        try await withManager { harness in
            harness.server.route("/big.jpg", .ok(try ManagerFixtures.jpeg(width: 1600, height: 1200)))
            let hinted = SizeProbe()
            var request = try ImageRequest(url: harness.url("/big.jpg"), processors: [hinted])
            request.decodingSizeHint = ImageProcessors.Downsample(width: 200)
            _ = try await harness.manager.image(for: request)
            #expect(hinted.seen == [ImageSize(width: 200, height: 150)])

            let plain = SizeProbe()
            _ = try await harness.manager.image(
                for: try ImageRequest(url: harness.url("/big.jpg"), processors: [plain]))
            #expect(plain.seen == [ImageSize(width: 1600, height: 1200)])
            #expect(harness.server.requestCount("/big.jpg") == 1)
        }
    }

    @Test func aLeadingDownsampleIsTheDefaultHintAndAnExplicitOneIsInTheKey() async throws {
        try await withManager { harness in
            let url = harness.url("/big.jpg")
            let downsample = ImageProcessors.Downsample(width: 200)
            let byProcessor = try ImageRequest(url: url, processors: [downsample])
            #expect(byProcessor.decodingSizeHint?.identifier == downsample.identifier)
            var none = byProcessor
            none.decodingSizeHint = nil
            #expect(none.decodingSizeHint == nil)
            var explicit = try ImageRequest(url: url)
            explicit.decodingSizeHint = downsample
            let keys = [byProcessor, none, explicit, try ImageRequest(url: url)].map {
                harness.manager.cacheKey(for: $0)
            }
            #expect(Set(keys).count == 4, "\(keys)")
            // A request's own target size wins over the hint, and the key does not name the hint then.
            var sized = explicit
            sized.targetSize = ImageSize(width: 800, height: 600)
            #expect(!harness.manager.cacheKey(for: sized).contains("hint="))
        }
    }
}
