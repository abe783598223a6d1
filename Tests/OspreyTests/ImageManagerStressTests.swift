import Foundation
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// Many tasks loading and cancelling at once: every load ends exactly once and the counts add up. Also run under
/// ThreadSanitizer (`make test-tsan`).
@Suite("ImageManager stress", .timeLimit(.minutes(5)))
struct ImageManagerStressTests {
    /// What one task saw.
    struct Tally: Sendable {
        var callbackLoads: [(task: ImageTask, calls: RunCounter, cancellations: RunCounter)] = []
        var asyncOutcomes: (succeeded: Int, cancelled: Int, failed: Int) = (0, 0, 0)
    }

    @Test("16 tasks issue 10,000 loads and cancels over 200 URLs; every load ends exactly once")
    func loadsAndCancels() async throws {
        try await withManager(configure: { $0.decodingConcurrency = 2 }) { harness in
            // Given 200 URLs, one in ten missing
            for index in 0..<200 where index % 10 != 0 {
                harness.server.route("/s\(index).png", .ok(SyntheticImages.png(width: 4 + index % 7, height: 3)))
            }
            let urls = (0..<200).map { harness.url("/s\($0).png") }
            let manager = harness.manager
            let queue = DispatchQueue(label: "stress.callbacks")
            let tasks = 16
            let loadsPerTask = 10_000 / tasks

            // When 16 tasks each run 625 loads in every form, cancelling some at once and some a moment later
            let tallies = await withTaskGroup(of: Tally.self) { group in
                for worker in 0..<tasks {
                    group.addTask {
                        var random = SplitMix64(seed: UInt64(worker) &* 0x9E37_79B9 &+ 1)
                        var tally = Tally()
                        for step in 0..<loadsPerTask {
                            let url = urls[Int(random.next() % UInt64(urls.count))]
                            let options: ImageRequest.Options = random.next() % 4 == 0 ? [.retryFailed] : []
                            let request = try! ImageRequest(url: url, options: options)
                            if worker == 0, step % 100 == 99 { manager.cache.clearMemory() }
                            switch random.next() % 3 {
                            case 0, 1:
                                let (calls, cancellations) = (RunCounter(), RunCounter())
                                let task = manager.loadImage(with: request, callbackQueue: queue) { outcome in
                                    calls.increment()
                                    if case .failure(.cancelled) = outcome { cancellations.increment() }
                                }
                                switch random.next() % 3 {
                                case 0: task.cancel()
                                case 1:
                                    await Task.yield()
                                    task.cancel()
                                default: break
                                }
                                tally.callbackLoads.append((task, calls, cancellations))
                            default:
                                let load = Task { try await manager.image(for: request) }
                                if random.next() % 2 == 0 { load.cancel() }
                                do {
                                    _ = try await load.value
                                    tally.asyncOutcomes.succeeded += 1
                                } catch ImageError.cancelled {
                                    tally.asyncOutcomes.cancelled += 1
                                } catch {
                                    tally.asyncOutcomes.failed += 1
                                }
                            }
                        }
                        return tally
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            await harness.settle()
            queue.sync {}

            // Then every callback load was called exactly once: with `cancelled` when it was cancelled first
            let callbackLoads = tallies.flatMap(\.callbackLoads)
            let asyncLoads = tallies.reduce(0) {
                $0 + $1.asyncOutcomes.succeeded + $1.asyncOutcomes.cancelled + $1.asyncOutcomes.failed
            }
            #expect(callbackLoads.count + asyncLoads == 10_000)
            let wrong = callbackLoads.filter { load in
                load.calls.value != 1 || load.cancellations.value != (load.task.isCancelled ? 1 : 0)
            }
            #expect(wrong.count == 0, "\(wrong.count) loads ended other than exactly once")
            #expect(callbackLoads.allSatisfy { $0.task.isFinished })
            var cancelled = 0
            for load in callbackLoads where load.task.isCancelled { cancelled += 1 }
            #expect(
                cancelled > 0 && cancelled < callbackLoads.count,
                "\(cancelled) of \(callbackLoads.count) cancelled"
            )
            #expect(!manager.isRunning)
            #expect(manager.runningCount == 0)
            #expect(manager.state.withLock { $0.table.isIdle && $0.work.isEmpty && $0.tasks.isEmpty })
            // Each existing URL was downloaded at least once and far fewer times than it was asked for
            #expect(harness.server.requestCount() < 10_000)
        }
    }
}
