import Foundation
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// Loads under a ``MemoryBudget``: what needs more than all of it is refused, what does not fit waits its turn.
@Suite("ImageManager memory budget", .timeLimit(.minutes(2)))
struct ImageManagerMemoryTests {
    /// A 200 × 100 PNG with an alpha channel: 80,000 bytes decoded.
    static let png = SyntheticImages.png(width: 200, height: 100)

    @Test("an image that alone needs more than the budget fails at once, and is not downloaded again")
    func tooLargeAlone() async throws {
        let budget = MemoryBudget(bytes: 79_999)
        try await withManager(configure: { $0.memoryBudget = budget }) { harness in
            harness.server.route("/big.png", .ok(Self.png))
            let url = harness.url("/big.png")
            let error = await #expect(throws: ImageError.self) { try await harness.manager.image(for: url) }
            guard case .insufficientMemory(.exceedsBudget(let required, 79_999))? = error else {
                throw ExpectedFailure(error)
            }
            #expect(required == 80_000)
            // A lasting failure: the next load fails without the origin.
            let again = await #expect(throws: ImageError.self) { try await harness.manager.image(for: url) }
            guard case .previouslyFailed(_, .insufficientMemory?)? = again else { throw ExpectedFailure(again) }
            #expect(harness.server.requestCount("/big.png") == 1)
            #expect(budget.usage.reserved == 0)
        }
    }

    @Test("a cache hit is decoded within the budget too, and is not downloaded when it is refused")
    func diskHitsAreBudgeted() async throws {
        try await withManager { harness in
            harness.server.route("/big.png", .ok(Self.png))
            let url = harness.url("/big.png")
            _ = try await harness.manager.image(for: url, options: [.waitStoreCache])
            harness.cache.clearMemory()
            var configuration = ImageManager.Configuration()
            configuration.memoryBudget = MemoryBudget(bytes: 1_000)
            let strict = ImageManager(cache: harness.cache, downloader: harness.loader, configuration: configuration)
            let error = await #expect(throws: ImageError.self) { try await strict.image(for: url) }
            guard case .insufficientMemory(.exceedsBudget)? = error else { throw ExpectedFailure(error) }
            #expect(harness.server.requestCount("/big.png") == 1)
        }
    }

    @Test("a decode that does not fit waits until the one before it has made its final image")
    func decodesWaitTheirTurn() async throws {
        // Room for one 80,000-byte decode, not two.
        let arrivals = ArrivalCounter()
        let budget = MemoryBudget(
            bytes: 120_000, maxWaiting: .max, maxWait: nil, held: { 0 }, onWaiting: { _ in arrivals.arrive() })
        let gate = StageGate(.process)
        try await withManager(
            configure: {
                $0.memoryBudget = budget
                $0.stageObserver = gate.observer
            }
        ) { harness in
            harness.server.route("/a.png", .ok(Self.png))
            harness.server.route("/b.png", .ok(SyntheticImages.png(width: 100, height: 200)))
            // Given one load held in processing, holding its reservation
            let (manager, a, b) = (harness.manager, harness.url("/a.png"), harness.url("/b.png"))
            let first = Task { try await manager.image(for: a) }
            await gate.reached()
            #expect(budget.usage.reserved == 80_000)

            // When another image is loaded, it downloads, then waits for memory
            let second = Task { try await manager.image(for: b) }
            await arrivals.wait(for: 1)
            #expect(budget.usage == MemoryBudget.Usage(capacity: 120_000, reserved: 80_000, waiting: 1))
            #expect(harness.server.requestCount("/b.png") == 1)

            // Then, the first done, the second decodes, and all the memory is given back
            gate.release()
            let (loadedA, loadedB) = (try await first.value, try await second.value)
            #expect(loadedA.image.width == 200 && loadedB.image.width == 100)
            #expect(budget.usage == MemoryBudget.Usage(capacity: 120_000, reserved: 0, waiting: 0))
        }
    }

    @Test("the reservation counts the processors' output: a resize to a small box adds little, a blur a full copy")
    func processorsAreCounted() throws {
        let estimate = DecodingEstimate(
            width: 1000, height: 800, channels: 3, frameCount: 1, imageBytes: 2_400_000, peakBytes: 2_400_000)
        let small = ImageJob.processingBytes(
            after: estimate, processors: [ImageProcessors.Resize(width: 100)], transforms: false)
        // 100 × 80 × 3 out, and the 5 × 5 block average (200 × 160 × 3) made first (a gap of 2: 1000 / 100 / 2).
        #expect(small == 100 * 80 * 3 + 200 * 160 * 3)
        let blurred = ImageJob.processingBytes(
            after: estimate, processors: [ImageProcessors.Blur(radius: 2)], transforms: false)
        #expect(blurred == 1000 * 800 * 4)
        // A chain holds a step's input and output at once.
        let chain = ImageJob.processingBytes(
            after: estimate, processors: [ImageProcessors.Blur(radius: 2), ImageProcessors.Grayscale()],
            transforms: true)
        #expect(chain == 2 * 1000 * 800 * 4)
        #expect(ImageJob.processingBytes(after: estimate, processors: [], transforms: false) == 0)
    }
}
