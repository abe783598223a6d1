import Dispatch
import Foundation
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// Cancelling a load before, during and after each stage calls its completion once, with `cancelled`, delivers nothing
/// else, and leaves nothing running.
@Suite("ImageManager cancellation", .timeLimit(.minutes(2)))
struct ImageManagerCancellationTests {
    @Test(
        "cancelling while a job is held in a stage completes once, cancelled", arguments: ImageManager.Stage.allCases)
    func cancelDuringStage(_ stage: ImageManager.Stage) async throws {
        let gate = StageGate(stage)
        try await withManager(configure: { $0.stageObserver = gate.observer }) { harness in
            // Given an image on disk only (so the disk stage has something to read) and a processor
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            let url = harness.url("/a.png")
            if stage == .disk {
                try await harness.manager.store(
                    try ImageDecoder.decode(ManagerFixtures.png), data: ManagerFixtures.png, for: url)
                harness.cache.clearMemory()
            }
            let runs = RunCounter()
            var options: ImageRequest.Options = [.waitStoreCache]
            if stage != .disk { options.insert(.fromLoaderOnly) }
            let request = try ImageRequest(
                url: url, options: options, processors: [CropProcessor(width: 2, height: 2, runs: runs)])

            // When a load is cancelled while held in the stage
            let deliveries = Deliveries()
            let task = deliveries.load(harness.manager, request)
            await gate.reached()
            #expect(harness.manager.isRunning)
            task.cancel()
            #expect(!harness.manager.isRunning)
            gate.release()
            await harness.settle()

            // Then only the cancellation was delivered, and nothing after the stage ran
            #expect(deliveries.isCancelledOnce)
            #expect(deliveries.previews.isEmpty)
            #expect(task.isCancelled)
            let expectedRuns = stage == .store ? 1 : 0
            #expect(runs.value == expectedRuns)
            if stage == .disk || stage == .download {
                #expect(harness.server.requestCount("/a.png") == 0)
            }
        }
    }

    @Test("cancelling a memory hit before its callback runs, while queued, and during the transfer")
    func cancelBeforeQueuedAndDuringTransfer() async throws {
        try await withManager(downloading: { $0.maxConcurrentDownloads = 1 }) { harness in
            let gate = OriginGate()
            harness.server.route("/cached.png", .ok(ManagerFixtures.png))
            harness.server.route("/held.png", .ok(ManagerFixtures.png).held(by: gate))
            harness.server.route("/queued.png", .ok(ManagerFixtures.png))
            _ = try await harness.manager.image(for: harness.url("/cached.png"))

            // Before: a memory hit whose callback has not run yet (its queue is suspended)
            let queue = DispatchQueue(label: "suspended")
            queue.suspend()
            let memory = Deliveries()
            let memoryTask = memory.load(
                harness.manager, try ImageRequest(url: harness.url("/cached.png")), queue: queue)
            memoryTask.cancel()
            queue.resume()

            // During the transfer, and while queued behind it
            let held = Deliveries()
            let queued = Deliveries()
            let heldTask = held.load(harness.manager, try ImageRequest(url: harness.url("/held.png")))
            await harness.server.waitForRequests(to: "/held.png", count: 1)
            let queuedTask = queued.load(harness.manager, try ImageRequest(url: harness.url("/queued.png")))
            await harness.loader.waitForDownloads(3)
            #expect(harness.downloader.queuedCount == 1)
            queuedTask.cancel()
            heldTask.cancel()
            #expect(!harness.manager.isRunning)
            await harness.server.waitForAborts(on: "/held.png", count: 1)
            gate.open()
            await harness.settle()
            queue.sync {}

            #expect(memory.isCancelledOnce && held.isCancelledOnce && queued.isCancelledOnce)
            #expect(harness.server.requestCount("/queued.png") == 0)
        }
    }

    @Test("cancelling after the completion does nothing more")
    func cancelAfterCompletion() async throws {
        try await withManager { harness in
            harness.server.route("/a.png", .ok(ManagerFixtures.png))
            let deliveries = Deliveries()
            let task = deliveries.load(harness.manager, try ImageRequest(url: harness.url("/a.png")))
            await harness.settle()
            task.cancel()
            await harness.settle()

            #expect(deliveries.completions.count == 1)
            #expect(!task.isCancelled)
            #expect(task.isFinished)
        }
    }

    @Test("isRunning while loads are under way; cancelAll ends them all, each completing once, cancelled")
    func cancelAll() async throws {
        try await withManager { harness in
            let gate = OriginGate()
            harness.server.route("/a.png", .ok(ManagerFixtures.png).held(by: gate))
            let deliveries = Deliveries()
            #expect(!harness.manager.isRunning)
            let tasks = try (0..<3).map { index in
                deliveries.load(harness.manager, try ImageRequest(url: harness.url("/a.png?i=\(index)")))
            }
            let manager = harness.manager
            let url = harness.url("/a.png?async")
            let asyncLoad = Task { try await manager.image(for: url) }
            let stream = harness.manager.task(for: try ImageRequest(url: harness.url("/a.png?stream")))
            await harness.server.waitForRequests(to: "/a.png", count: 5)
            #expect(harness.manager.isRunning)
            #expect(harness.manager.runningCount == 5)

            harness.manager.cancelAll()

            #expect(!harness.manager.isRunning)
            let asyncError = await #expect(throws: ImageError.self) { try await asyncLoad.value }
            guard case .cancelled = asyncError else { throw ExpectedFailure(asyncError) }
            var streamEvents: [ImageTask.Event] = []
            for await event in stream.events { streamEvents.append(event) }
            gate.open()
            await harness.settle()
            #expect(deliveries.completions.count == 3)
            #expect(deliveries.completions.allSatisfy { if case .failure(.cancelled) = $0 { true } else { false } })
            #expect(tasks.allSatisfy { $0.isCancelled })
            #expect(streamEvents.count == 1)
            guard case .finished(.failure(.cancelled))? = streamEvents.first else { throw ExpectedFailure(nil) }
        }
    }

    @Test("cancelling the calling task cancels an async load; ending the event stream's iteration cancels its load")
    func structuredCancellation() async throws {
        try await withManager { harness in
            let gate = OriginGate()
            harness.server.route("/a.png", .ok(ManagerFixtures.png).held(by: gate))
            let manager = harness.manager
            let url = harness.url("/a.png")
            let load = Task { try await manager.image(for: url) }
            await harness.server.waitForRequests(to: "/a.png", count: 1)
            load.cancel()
            let error = await #expect(throws: ImageError.self) { try await load.value }
            guard case .cancelled = error else { throw ExpectedFailure(error) }

            let consumer = Task {
                let task = manager.task(for: try ImageRequest(url: url, options: [.fromLoaderOnly]))
                for await _ in task.events {}
                return task
            }
            await harness.server.waitForRequests(to: "/a.png", count: 2)
            consumer.cancel()
            let task = try await consumer.value
            #expect(task.isCancelled)
            #expect(!manager.isRunning)
            gate.open()
        }
    }
}
