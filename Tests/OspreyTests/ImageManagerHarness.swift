import Dispatch
import Foundation
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import Osprey

/// A manager wired to a real origin on 127.0.0.1, a real downloader and a real disk cache in a temporary directory,
/// with the loader wrapped so a test can await the moment a download is asked for.
struct ManagerHarness {
    let server: OriginServer
    let downloader: ImageDownloader
    let loader: RecordingLoader
    let manager: ImageManager
    let temporary: TemporaryDirectory

    var cache: ImageCache { manager.cache }

    func url(_ path: String) -> URL { URL(string: server.url(path))! }

    /// Waits until every job has ended and every callback already dispatched has run.
    func settle() async {
        await manager.waitForJobs()
        manager.callbackQueue.sync {}
    }
}

/// Runs `body` with a fresh harness; `configure` adjusts the manager's configuration, `downloading` the downloader's.
func withManager(
    tls: Bool = false,
    configure: (inout ImageManager.Configuration) -> Void = { _ in },
    downloading: (inout ImageDownloader.Configuration) -> Void = { _ in },
    cache configureCache: (inout ImageCache.Configuration) -> Void = { _ in },
    _ body: (ManagerHarness) async throws -> Void
) async throws {
    let temporary = TemporaryDirectory()
    var cacheConfiguration = ImageCache.Configuration(namespace: "manager")
    cacheConfiguration.disk.baseDirectory = temporary.path
    cacheConfiguration.disk.cleaningInterval = nil
    cacheConfiguration.memory.respondsToMemoryPressure = false
    configureCache(&cacheConfiguration)
    var configuration = ImageManager.Configuration()
    configuration.decodingConcurrency = 2
    configuration.processingConcurrency = 2
    configure(&configuration)
    var downloaderConfiguration = ImageDownloader.Configuration()
    downloading(&downloaderConfiguration)
    try await withOriginServer(tls: tls) { server in
        try await withImageDownloader(configuration: downloaderConfiguration) { downloader in
            let loader = RecordingLoader(downloader)
            let manager = ImageManager(
                cache: ImageCache(configuration: cacheConfiguration), downloader: loader, configuration: configuration)
            let harness = ManagerHarness(
                server: server, downloader: downloader, loader: loader, manager: manager, temporary: temporary)
            try await body(harness)
            await harness.settle()
        }
    }
}

/// The downloader, with every request recorded and a way to await the n-th.
final class RecordingLoader: DataLoading {
    let downloader: ImageDownloader
    private let state = Mutex<(requests: [DownloadRequest], waiters: [(Int, CheckedContinuation<Void, Never>)])>(
        ([], []))

    init(_ downloader: ImageDownloader) {
        self.downloader = downloader
    }

    func download(
        _ request: DownloadRequest, progress: (@Sendable (DownloadProgress) -> Void)?
    ) -> any DataLoadingTask {
        // Queued and recorded under one lock, so `requests` is in the order the downloader queued them.
        let (task, ready) = state.withLock { state in
            let task = downloader.download(request, progress: progress)
            state.requests.append(request)
            let count = state.requests.count
            let ready = state.waiters.filter { $0.0 <= count }.map(\.1)
            state.waiters.removeAll { $0.0 <= count }
            return (task, ready)
        }
        for waiter in ready { waiter.resume() }
        return task
    }

    var requests: [DownloadRequest] { state.withLock { $0.requests } }

    /// Returns once `count` downloads have been asked for.
    func waitForDownloads(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let isReady = state.withLock { state in
                if state.requests.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if isReady { continuation.resume() }
        }
    }
}

/// Holds a job at the start of one stage until released: the test awaits `reached()`, acts, then `release()`s.
final class StageGate: Sendable {
    let stage: ImageManager.Stage
    private let state = Mutex<
        (
            reached: Bool, released: Bool, arrivals: [CheckedContinuation<Void, Never>],
            holds: [CheckedContinuation<Void, Never>]
        )
    >((false, false, [], []))

    init(_ stage: ImageManager.Stage) {
        self.stage = stage
    }

    /// The observer to put in the manager's configuration.
    var observer: @Sendable (ImageManager.Stage, URL) async -> Void {
        { [self] stage, _ in
            guard stage == self.stage else { return }
            await withCheckedContinuation { hold in
                let (arrivals, releasedAlready) = state.withLock { state in
                    state.reached = true
                    if !state.released { state.holds.append(hold) }
                    defer { state.arrivals = [] }
                    return (state.arrivals, state.released)
                }
                for arrival in arrivals { arrival.resume() }
                if releasedAlready { hold.resume() }
            }
        }
    }

    func reached() async {
        await withCheckedContinuation { continuation in
            let reached = state.withLock { state in
                if !state.reached { state.arrivals.append(continuation) }
                return state.reached
            }
            if reached { continuation.resume() }
        }
    }

    func release() {
        let holds = state.withLock { state in
            state.released = true
            defer { state.holds = [] }
            return state.holds
        }
        for hold in holds { hold.resume() }
    }
}

/// Counts completions and collects what a callback-form load delivers.
final class Deliveries: Sendable {
    private let state = Mutex<
        (completions: [Result<ImageResult, ImageError>], previews: [ImageResult], progress: [DownloadProgress])
    >(([], [], []))

    var completions: [Result<ImageResult, ImageError>] { state.withLock { $0.completions } }
    var previews: [ImageResult] { state.withLock { $0.previews } }
    var progress: [DownloadProgress] { state.withLock { $0.progress } }
    /// Whether the one completion was ``ImageError/cancelled``, and there was no other.
    var isCancelledOnce: Bool {
        let completions = completions
        guard completions.count == 1, case .failure(.cancelled) = completions[0] else { return false }
        return true
    }

    func record(_ outcome: Result<ImageResult, ImageError>) {
        state.withLock { $0.completions.append(outcome) }
    }

    func load(_ manager: ImageManager, _ request: ImageRequest, queue: DispatchQueue? = nil) -> ImageTask {
        manager.loadImage(
            with: request, callbackQueue: queue,
            progress: { progress in self.state.withLock { $0.progress.append(progress) } },
            preview: { preview in self.state.withLock { $0.previews.append(preview) } },
            completion: { outcome in self.state.withLock { $0.completions.append(outcome) } })
    }
}

/// A processor for tests: crops to the top-left `width` × `height` and counts its runs.
struct CropProcessor: ImageProcessing {
    let width: Int
    let height: Int
    let runs: RunCounter

    var identifier: String { "test.crop(\(width)x\(height))" }

    func process(_ image: Image) throws -> Image {
        runs.increment()
        let source = image.pixels
        let bytesPerPixel = source.format.bytesPerPixel
        var rows: [UInt8] = []
        for y in 0..<height { rows += source.row(y).prefix(width * bytesPerPixel) }
        let pixels = try PixelBuffer(width: width, height: height, format: source.format, bytes: rows)
        return Image(pixels: pixels, sourceFormat: image.sourceFormat)
    }
}

final class RunCounter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

/// Images made at test time.
enum ManagerFixtures {
    static let png = SyntheticImages.png(width: 8, height: 6)
    static let otherPNG = SyntheticImages.png(width: 5, height: 5)

    /// An opaque JPEG of `width` × `height`.
    static func jpeg(width: Int, height: Int, progressive: Bool = false) throws -> [UInt8] {
        let image = try ImageDecoder.decode(SyntheticImages.png(width: width, height: height))
        var options = EncodingOptions()
        options.isProgressive = progressive
        return try ImageEncoder.encode(image, as: .jpeg, options: options)
    }

    /// A two-frame animated GIF, 4 × 4.
    static func animatedGIF() throws -> [UInt8] {
        let red = try PixelBuffer(width: 4, height: 4, format: .rgba8, bytes: [UInt8](repeating: 200, count: 64))
        let blue = try PixelBuffer(width: 4, height: 4, format: .rgba8, bytes: (0..<64).map { UInt8($0 * 3) })
        let image = try Image(
            frames: [
                ImageFrame(pixels: red, duration: .milliseconds(100)),
                ImageFrame(pixels: blue, duration: .milliseconds(100)),
            ])
        return try ImageEncoder.encode(image, as: .gif)
    }
}

extension ImageTask {
    /// Follows the task's events to the end; returns its previews and its final result (throwing its error).
    func previewsAndFinal(onPreview: () -> Void = {}) async throws -> ([ImageResult], ImageResult) {
        var previews: [ImageResult] = []
        var final: ImageResult?
        for await event in events {
            switch event {
            case .preview(let preview):
                previews.append(preview)
                onPreview()
            case .finished(let outcome): final = try outcome.get()
            case .progress: break
            }
        }
        return (previews, try #require(final))
    }
}
