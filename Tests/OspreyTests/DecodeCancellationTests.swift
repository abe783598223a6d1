import Foundation
import OspreyCodecs
import OspreyTesting
import Testing

@testable import Osprey

@Suite("Cancelling a decode", .timeLimit(.minutes(2)))
struct DecodeCancellationTests {
    /// A progressive JPEG of noise, `width` x `height`: its full-size decode works through every scan of every row.
    static func noisyProgressiveJPEG(width: Int, height: Int) throws -> [UInt8] {
        var state: UInt32 = 0x9E37_79B9
        let bytes = (0..<(width * height * 3)).map { _ -> UInt8 in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        }
        let pixels = try PixelBuffer(width: width, height: height, format: .rgb8, bytes: bytes)
        var options = EncodingOptions()
        options.isProgressive = true
        options.quality = 95
        return try ImageEncoder.encode(Image(pixels: pixels), as: .jpeg, options: options)
    }

    @Test("a codec decode stops with CodecError.cancelled once its cancellation is set, before or during it")
    func codecCancellation() throws {
        let jpeg = try Self.noisyProgressiveJPEG(width: 64, height: 48)
        let cancellation = DecodingCancellation()
        var options = DecodingOptions()
        options.cancellation = cancellation
        #expect(try ImageDecoder.decode(jpeg, options: options).width == 64)
        cancellation.cancel()
        #expect(cancellation.isCancelled)
        #expect(throws: CodecError.cancelled) { try ImageDecoder.decode(jpeg, options: options) }
        // Options that differ only in which cancellation they carry are equal: it does not change what a decode makes.
        var other = options
        other.cancellation = DecodingCancellation()
        #expect(options == other && options.hashValue == other.hashValue)
    }

    @Test("a load cancelled during a large progressive decode ends at once, and the decode frees its thread")
    func cancellingALoadStopsItsDecode() async throws {
        let big = try Self.noisyProgressiveJPEG(width: 4000, height: 3000)
        let small = try ManagerFixtures.jpeg(width: 16, height: 16)
        // One decoding thread: a small image decodes only once the large decode has left it.
        try await withManager(configure: { $0.decodingConcurrency = 1 }) { harness in
            harness.server.route("/reference.jpg", .ok(big, contentType: "image/jpeg"))
            harness.server.route("/big.jpg", .ok(big, contentType: "image/jpeg"))
            let clock = ContinuousClock()
            let referenceStart = clock.now
            _ = try await harness.manager.image(for: harness.url("/reference.jpg"), options: [.cacheMemoryOnly])
            let fullLoad = clock.now - referenceStart

            let url = harness.url("/big.jpg")
            let manager = harness.manager
            var decoding = harness.manager.decodingQueue.events().makeAsyncIterator()
            let load = Task { try await manager.image(for: url, options: [.cacheMemoryOnly]) }
            while let event = await decoding.next(), event != .started(url) {}
            let cancelled = clock.now
            load.cancel()
            let outcome = await load.result
            let loadEnded = clock.now - cancelled
            let smallRequest = ImageRequest(provider: ClosureDataProvider(cacheKey: "small") { small })
            #expect(try await harness.manager.image(for: smallRequest).image.width == 16)
            let threadFree = clock.now - cancelled

            guard case .failure(let error) = outcome, case .cancelled? = error as? ImageError else {
                Issue.record("the load ended with \(outcome)")
                return
            }
            #expect(!harness.manager.failedURLs.contains(url))
            // A full load takes hundreds of milliseconds here, so these bounds tell a stopped decode from a finished one.
            #expect(fullLoad > .milliseconds(150), "a full load took \(fullLoad): too short to tell")
            #expect(loadEnded < .milliseconds(50), "the load ended \(loadEnded) after its cancel")
            #expect(threadFree < .milliseconds(50), "the decoding thread was free \(threadFree) after the cancel")
        }
    }
}
