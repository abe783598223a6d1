import Foundation
import InMemoryTracing
import OspreyCodecs
import OspreyTesting
import Testing
import Tracing

@testable import Osprey

/// The spans of a load's stages, given to the manager's and the downloader's configured tracer.
@Suite("ImageManager tracing", .timeLimit(.minutes(2)))
struct ImageManagerTracingTests {
    @Test("a cold load's stages are spans under the caller's, in order; a load that joins it adds none")
    func stagesNestUnderTheCaller() async throws {
        let tracer = InMemoryTracer()
        try await withManager(configure: { $0.tracer = tracer }, downloading: { $0.tracer = tracer }) { harness in
            harness.server.route(
                "/a.jpg", .ok(try ManagerFixtures.jpeg(width: 64, height: 48), contentType: "image/jpeg"))
            let request = try ImageRequest(
                url: harness.url("/a.jpg"), options: [.waitStoreCache], processors: [.resize(width: 32, height: 24)])
            let manager = harness.manager

            // The first load is held before its decode, so that a second joins its job.
            manager.decodingQueue.isSuspended = true
            let events = manager.decodingQueue.events()
            let first = Task {
                try await tracer.withSpan("first") { _ in try await manager.image(for: request) }
            }
            for await event in events {
                if case .waiting = event { break }
            }
            let joined = Deliveries()
            let second = tracer.startSpan("second")
            InstrumentationContext.$current.withValue(second.context) {
                _ = joined.load(manager, request)
            }
            second.end()
            manager.decodingQueue.isSuspended = false
            let result = try await first.value
            await harness.settle()
            #expect(result.image.width == 32)
            #expect(joined.completions.count == 1)

            let spans = tracer.finishedSpans
            let caller = try #require(spans.first { $0.operationName == "first" })
            let stages = [
                "osprey.cache.lookup", "osprey.download", "osprey.decode", "osprey.process", "osprey.cache.store",
            ]
            let made = spans.filter { $0.operationName.hasPrefix("osprey.") }
            #expect(made.map(\.operationName) == stages)
            for span in made {
                #expect(span.traceID == caller.traceID, "\(span.operationName)")
                #expect(span.parentSpanID == caller.spanID, "\(span.operationName)")
            }
            #expect(made.first?.attributes["osprey.cache.result"]?.toSpanAttribute() == .string("miss"))
            let decode = try #require(made.first { $0.operationName == "osprey.decode" })
            #expect(decode.attributes["osprey.image.width"]?.toSpanAttribute() == .int64(64))
            let process = try #require(made.first { $0.operationName == "osprey.process" })
            #expect(
                process.attributes["osprey.processors"]?.toSpanAttribute()
                    == .string(ImageProcessors.Resize(width: 32, height: 24).identifier))
            // The joining load's trace has its own span and nothing under it.
            let joinedTrace = try #require(spans.first { $0.operationName == "second" }).traceID
            #expect(spans.filter { $0.traceID == joinedTrace }.map(\.operationName) == ["second"])
            #expect(harness.server.requestCount("/a.jpg") == 1)
        }
    }

    @Test("a queued transfer's span is under the span of the caller that asked for it, whoever starts it")
    func queuedTransfersKeepTheirCallersTrace() async throws {
        let tracer = InMemoryTracer()
        var configuration = ImageDownloader.Configuration()
        configuration.tracer = tracer
        configuration.maxConcurrentDownloads = 1
        try await withOriginServer(testDataDirectory: nil) { server in
            server.route("/a", .ok([1, 2, 3]))
            server.route("/b", .ok([4, 5]))
            try await withImageDownloader(configuration: configuration) { downloader in
                // Both wait in the queue, and start when the test resumes it: neither in its caller's task.
                downloader.isSuspended = true
                var callers: [any Span] = []
                var tasks: [any DataLoadingTask] = []
                for path in ["/a", "/b"] {
                    let caller = tracer.startSpan("caller \(path)")
                    InstrumentationContext.$current.withValue(caller.context) {
                        tasks.append(downloader.download(DownloadRequest(url: URL(string: server.url(path))!)))
                    }
                    callers.append(caller)
                }
                downloader.isSuspended = false
                for task in tasks { _ = try await (task as? DownloadTask)?.response }
                for caller in callers { caller.end() }
            }
            let spans = tracer.finishedSpans
            for path in ["/a", "/b"] {
                let caller = try #require(spans.first { $0.operationName == "caller \(path)" })
                let download = try #require(
                    spans.first {
                        $0.operationName == "osprey.download"
                            && $0.attributes["url.full"]?.toSpanAttribute() == .string(server.url(path))
                    })
                #expect(download.parentSpanID == caller.spanID, "\(path)")
                #expect(download.traceID == caller.traceID, "\(path)")
            }
        }
    }

    @Test("without a tracer configured or bootstrapped, the manager and downloader make no span")
    func noTracerNoSpans() async throws {
        try await withManager { harness in
            #expect(harness.manager.tracer == nil)
            #expect(harness.downloader.tracing.tracer == nil)
        }
    }
}
