import Foundation
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// A manager's lifetime: shutdown() with loads in flight, loads after it, and withImageManager.
@Suite("ImageManager lifetime", .timeLimit(.minutes(2)))
struct ImageManagerLifetimeTests {
    @Test("shutdown with loads in flight ends each exactly once, cancelled; later loads fail at once")
    func shutdownWithLoadsInFlight() async throws {
        // The held responses send nothing until shutdown: a downloader that waits minutes, so that on a loaded
        // machine none times out (15 s by default) before the test gets to shut the manager down. All eight
        // downloads run at once (6 by default), so /0.png, which the test waits for, is never queued behind the
        // others, held forever (it was, when its load happened to start seventh or eighth: a 2-minute hang).
        try await withManager(downloading: {
            $0.timeout = .seconds(600)
            $0.maxConcurrentDownloads = 8
        }) { harness in
            let gate = OriginGate()
            defer { gate.open() }
            for index in 0..<8 {
                harness.server.route("/\(index).png", OriginResponse.ok(ManagerFixtures.png).held(by: gate))
            }
            let urls = (0..<8).map { harness.url("/\($0).png") }
            let manager = harness.manager
            let outcomes = try await withThrowingTaskGroup(of: Result<ImageResult, ImageError>.self) { group in
                for url in urls {
                    group.addTask {
                        do throws(ImageError) {
                            return .success(try await manager.image(for: url))
                        } catch {
                            return .failure(error)
                        }
                    }
                }
                await harness.server.waitForRequests(to: "/0.png", count: 1)
                await harness.manager.shutdown()
                var outcomes: [Result<ImageResult, ImageError>] = []
                for try await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
            #expect(outcomes.count == 8)
            for outcome in outcomes {
                guard case .failure(.cancelled) = outcome else {
                    Issue.record("expected a cancellation, got \(outcome)")
                    continue
                }
            }
            #expect(!harness.manager.isRunning)
            #expect(harness.manager.isShutDown)

            let requestsBefore = harness.server.requests(to: "/0.png").count
            do throws(ImageError) {
                _ = try await harness.manager.image(for: urls[0])
                Issue.record("a load after shutdown ran")
            } catch {
                guard case .cancelled = error else {
                    Issue.record("\(error)")
                    return
                }
            }
            do throws(ImageError) {
                _ = try await harness.manager.data(for: try! ImageRequest(url: urls[0]))
                Issue.record("a data load after shutdown ran")
            } catch {
                guard case .cancelled = error else {
                    Issue.record("\(error)")
                    return
                }
            }
            let called = Mutex<[Result<ImageResult, ImageError>]>([])
            let arrived = ArrivalCounter()
            _ = harness.manager.loadImage(with: urls[1]) { outcome in
                called.withLock { $0.append(outcome) }
                arrived.arrive()
            }
            await arrived.wait(for: 1)
            #expect(called.withLock { $0.count } == 1)
            #expect(harness.server.requests(to: "/0.png").count == requestsBefore)
            // A second shutdown returns too.
            await harness.manager.shutdown()
        }
    }

    @Test func withImageManagerShutsItsManagerDown() async throws {
        try await withOriginServer { server in
            server.route("/a.png", .ok(ManagerFixtures.png))
            let temporary = TemporaryDirectory()
            var cache = ImageCache.Configuration(namespace: "lifetime")
            cache.disk.baseDirectory = temporary.path
            cache.disk.cleaningInterval = nil
            let (width, manager) = try await withImageManager(cache: ImageCache(configuration: cache)) { manager in
                (try await manager.image(for: URL(string: server.url("/a.png"))!).image.width, manager)
            }
            #expect(width == 8)
            #expect(manager.isShutDown)
        }
    }
}
