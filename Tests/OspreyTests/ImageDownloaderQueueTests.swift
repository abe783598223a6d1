import Foundation
import Osprey
import OspreyTesting
import Testing

/// The downloader's queue against the real origin: the limit, the order, priorities, suspending, cancelling all.
extension ImageDownloaderTests {
    // MARK: Queue

    @Test func theOriginNeverSeesMoreThanTheLimitInFlightEvenWhenItChanges() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                #expect(downloader.maxConcurrentDownloads == 6)
                for (path, limit) in [("/limit6.jpg", 6), ("/limit2.jpg", 2)] {
                    downloader.maxConcurrentDownloads = limit
                    let gate = OriginGate()
                    server.route(path, .ok(Self.body).held(by: gate))
                    let tasks = (0..<20).map { index in
                        downloader.download(request(server, "\(path)?i=\(index)"), progress: nil)
                    }
                    await server.waitForRequests(to: path, count: limit)
                    #expect(downloader.runningCount == limit)
                    #expect(downloader.queuedCount == 20 - limit)
                    gate.open()
                    for task in tasks { _ = try await task.response }
                    #expect(server.requestCount(path) == 20)
                    #expect(server.maxInFlightCount(path) == limit)
                }
            }
        }
    }

    /// Queues 20 requests on a suspended downloader that runs one at a time, lets `prepare` adjust them, resumes,
    /// and returns the order in which they reached the origin.
    func startOrder(
        order: ImageDownloader.Order,
        priorities: (Int) -> DownloadPriority = { _ in .normal },
        prepare: ([any DataLoadingTask]) -> Void = { _ in }
    ) async throws -> [Int] {
        try await withOriginServer { server in
            var configuration = ImageDownloader.Configuration()
            configuration.maxConcurrentDownloads = 1
            configuration.order = order
            return try await withImageDownloader(configuration: configuration) { downloader in
                server.route("/order.jpg", .ok([1, 2, 3]))
                downloader.isSuspended = true
                let tasks = (0..<20).map { index in
                    downloader.download(
                        DownloadRequest(
                            url: URL(string: server.url("/order.jpg?i=\(index)"))!, priority: priorities(index)),
                        progress: nil)
                }
                #expect(downloader.queuedCount == 20)
                #expect(downloader.runningCount == 0)
                prepare(tasks)
                downloader.isSuspended = false
                for task in tasks { _ = try await task.response }
                return server.requests(to: "/order.jpg").map { Int($0.uri.split(separator: "=").last!)! }
            }
        }
    }

    @Test func aResumedQueueStartsInFIFOOrder() async throws {
        #expect(try await startOrder(order: .fifo) == Array(0..<20))
    }

    @Test func aResumedQueueStartsInLIFOOrder() async throws {
        #expect(try await startOrder(order: .lifo) == Array((0..<20).reversed()))
    }

    @Test func aResumedQueueStartsByPriority() async throws {
        // Every third request is high priority, every fifth (not third) low
        let priority = { (index: Int) -> DownloadPriority in
            index % 3 == 0 ? .high : (index % 5 == 0 ? .low : .normal)
        }
        let high = (0..<20).filter { $0 % 3 == 0 }
        let low = (0..<20).filter { $0 % 3 != 0 && $0 % 5 == 0 }
        let normal = (0..<20).filter { !high.contains($0) && !low.contains($0) }
        #expect(try await startOrder(order: .fifo, priorities: priority) == high + normal + low)
    }

    @Test func aQueuedRequestWhosePriorityIsRaisedGoesFirst() async throws {
        let order = try await startOrder(
            order: .fifo,
            prepare: { tasks in
                tasks[13].setPriority(.veryHigh)
                #expect(tasks[13].priority == .veryHigh)
            })
        #expect(order == [13] + (0..<20).filter { $0 != 13 })
    }

    @Test func cancelAllFailsEveryCallerQueuedOrRunning() async throws {
        try await withOriginServer { server in
            try await withImageDownloader { downloader in
                let gate = OriginGate()
                server.route("/all.jpg", .ok(Self.body).held(by: gate))
                downloader.maxConcurrentDownloads = 2
                let tasks = (0..<5).map { downloader.download(request(server, "/all.jpg?i=\($0)"), progress: nil) }
                await server.waitForRequests(to: "/all.jpg", count: 2)
                downloader.cancelAll()
                for task in tasks {
                    let outcome = await Result { () async throws(DownloadError) in try await task.response }
                    #expect(outcome.failure?.shortDescription == "cancelled")
                }
                await server.waitForAborts(on: "/all.jpg", count: 2)
                #expect(downloader.queuedCount == 0)
                #expect(server.requestCount("/all.jpg") == 2)
            }
        }
    }
}
