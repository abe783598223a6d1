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

    @Test("a load cancelled during a large progressive decode ends cancelled, and the decode stops at a checkpoint")
    func cancellingALoadStopsItsDecode() async throws {
        let big = try Self.noisyProgressiveJPEG(width: 4000, height: 3000)
        let small = try ManagerFixtures.jpeg(width: 16, height: 16)
        // One decoding thread: a small image decodes only once the large decode has left it.
        try await withManager(configure: { $0.decodingConcurrency = 1 }) { harness in
            harness.server.route("/big.jpg", .ok(big, contentType: "image/jpeg"))
            let url = harness.url("/big.jpg")
            let manager = harness.manager
            var decoding = manager.decodingQueue.events().makeAsyncIterator()
            let load = Task { try await manager.image(for: url, options: [.cacheMemoryOnly]) }
            while let event = await decoding.next(), event != .started(url) {}
            load.cancel()
            let outcome = await load.result
            guard case .failure(let error) = outcome, case .cancelled? = error as? ImageError else {
                Issue.record("the load ended with \(outcome)")
                return
            }
            #expect(!manager.failedURLs.contains(url))
            // The one decoding thread is free again: the decode ended, and it ended at a checkpoint, cancelled,
            // instead of decoding the rest of its 12 megapixels.
            let smallRequest = ImageRequest(provider: ClosureDataProvider(cacheKey: "small") { small })
            let smallResult = try await manager.image(for: smallRequest)
            #expect(smallResult.image.width == 16)
            #expect(manager.decodeCounts.cancelledCount == 1)
        }
    }

    @Test("a load cancelled during a decode that cannot stop returns at once; the decode ends on its own")
    func cancellingALoadDoesNotWaitForADecoderWithoutCheckpoints() async throws {
        let gate = BlockingGate()
        let coders = ImageCoderRegistry()
        coders.register(GatedPixmapDecoder(gate: gate) as any ImageDecoding)
        let ppm = Array("P6\n2 1\n255\n".utf8) + [1, 2, 3, 4, 5, 6]
        try await withManager(configure: { $0.decoding.coders = coders }) { harness in
            harness.server.route("/a.ppm", .ok(ppm, contentType: "image/x-portable-pixmap"))
            let url = harness.url("/a.ppm")
            let manager = harness.manager
            let load = Task { try await manager.image(for: url) }
            gate.waitUntilEntered()
            load.cancel()
            // Returned while the decoder is still inside, held by the gate.
            let outcome = await load.result
            guard case .failure(let error) = outcome, case .cancelled? = error as? ImageError else {
                Issue.record("the load ended with \(outcome)")
                gate.open()
                return
            }
            #expect(gate.isInside)
            gate.open()
            // The next load of the URL starts a decode of its own: the abandoned one is not waited for.
            let again = try await manager.image(for: url)
            #expect(again.image.width == 2)
        }
    }
}

/// Holds a decoding thread until opened, and tells when one is held (a thread-blocking gate: the decoders are
/// synchronous).
final class BlockingGate: @unchecked Sendable {
    // @unchecked Sendable: its state is guarded by `condition`, a lock.
    private let condition = NSCondition()
    private var entered = false
    private var inside = false
    private var opened = false

    func pass() {
        condition.lock()
        (entered, inside) = (true, true)
        condition.broadcast()
        while !opened { condition.wait() }
        inside = false
        condition.unlock()
    }

    func waitUntilEntered() {
        condition.lock()
        while !entered { condition.wait() }
        condition.unlock()
    }

    var isInside: Bool {
        condition.lock()
        defer { condition.unlock() }
        return inside
    }

    func open() {
        condition.lock()
        opened = true
        condition.broadcast()
        condition.unlock()
    }
}

/// PPM, whose decode waits at a gate first: a decoder with no checkpoint a cancellation could stop.
struct GatedPixmapDecoder: ImageDecoding {
    let gate: BlockingGate
    private let ppm = PortablePixmapCoder()

    var format: ImageFormat { ppm.format }
    var signatureLength: Int { ppm.signatureLength }
    func recognizes(_ prefix: UnsafeRawBufferPointer) -> Bool { ppm.recognizes(prefix) }
    func header(of data: UnsafeRawBufferPointer) throws(CodecError) -> ImageHeader { try ppm.header(of: data) }
    func decode(_ data: UnsafeRawBufferPointer, options: DecodingOptions) throws(CodecError) -> Image {
        gate.pass()
        return try ppm.decode(data, options: options)
    }
}
