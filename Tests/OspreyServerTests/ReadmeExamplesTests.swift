import Foundation
import Hummingbird
import HummingbirdTesting
import Osprey
import OspreyCodecs
import OspreyServer
import OspreyTesting
import Testing

// The README's Swift examples, as it shows them (the first test checks that every one is here word for word), run
// against a real origin.

func thumbnail(of url: URL) async throws -> [UInt8] {
    try await withImageManager { manager in
        let request = try ImageRequest(url: url, processors: [.resize(width: 320, height: 320, fit: .cover)])
        return try await manager.encodedImage(for: request, as: ImageOutput(.format(.webp))).encoded.bytes
    }
}

func makeManager(cacheDirectory: String) -> ImageManager {
    var configuration = ImageCache.Configuration(namespace: "thumbnails")
    configuration.memory.costLimit = 200 << 20  // decoded images in memory: 200 MB
    configuration.disk.baseDirectory = cacheDirectory
    configuration.disk.sizeLimit = 2 << 30  // bytes on disk: 2 GB, the least recently used leave first
    return ImageManager(cache: ImageCache(configuration: configuration))
}

func makeRetryingManager() -> ImageManager {
    var configuration = ImageDownloader.Configuration()
    configuration.retryStrategy = RetryStrategy(maximumRetries: 2)
    return ImageManager(downloader: ImageDownloader(configuration: configuration))
}

func originalBytes(of url: URL, manager: ImageManager) async throws -> [UInt8] {
    try await manager.data(for: ImageRequest(url: url)).data
}

func stopLoading(_ url: URL, manager: ImageManager) -> Int {
    manager.cancel(url: url)  // how many loads it stopped
}

struct Grayscale: ImageProcessing {
    var identifier: String { "grayscale" }

    func process(_ image: Image) throws -> Image {
        let frames = try image.frames.map { frame in
            let format: PixelFormat = frame.pixels.format.hasAlpha ? .grayAlpha8 : .gray8
            return ImageFrame(pixels: try frame.pixels.converted(to: format), duration: frame.duration)
        }
        return try Image(frames: frames, loopCount: image.loopCount, sourceFormat: image.sourceFormat)
    }
}

func application(configuration: ServerConfiguration) -> some ApplicationProtocol {
    let images = ImageProxyEndpoint(configuration: configuration)
    let router = Router()
    router.get("/") { _, _ in "my application" }
    router.addRoutes(images.routes(), atPath: "/media")
    return Application(router: router, services: [images.service])
}

@Suite struct ReadmeExamplesTests {
    /// The repository's README.md.
    static let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("README.md")

    /// The README's ```swift blocks, their `import` lines left out.
    static func swiftBlocks(of text: String) -> [String] {
        text.components(separatedBy: "```swift\n").dropFirst().map { block in
            block.components(separatedBy: "\n```")[0].split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.hasPrefix("import ") }.joined(separator: "\n")
                .trimmingCharacters(in: .newlines)
        }
    }

    @Test("one version number: the CHANGELOG's newest section is the version the library reports")
    func oneVersionNumber() throws {
        let changelog = Self.readme.deletingLastPathComponent().appendingPathComponent("CHANGELOG.md")
        let text = try String(contentsOf: changelog, encoding: .utf8)
        let newest = text.split(separator: "\n").first { $0.hasPrefix("## ") }.map(String.init)
        #expect(newest == "## \(OspreyVersion.current) (unreleased)" || newest == "## \(OspreyVersion.current)")
    }

    @Test("every Swift example of the README is in this file, word for word")
    func examplesAreHere() throws {
        let blocks = Self.swiftBlocks(of: try String(contentsOf: Self.readme, encoding: .utf8))
        #expect(blocks.count == 7)
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        for block in blocks { #expect(source.contains(block), "not here:\n\(block)") }
    }

    @Test("the library example makes a 320x320 WebP of a real origin's image")
    func libraryExample() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/cat.jpg", .ok(try Fixtures.jpeg(width: 800, height: 600), contentType: "image/jpeg"))
            let bytes = try await thumbnail(of: URL(string: origin.url("/cat.jpg"))!)
            let image = try ImageDecoder.decode(bytes)
            #expect(image.sourceFormat == .webp)
            #expect((image.width, image.height) == (320, 320))
        }
    }

    @Test("the own-cache example keeps its bytes in its directory: a second manager there finds them on disk")
    func ownCacheExample() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/cat.jpg", .ok(try Fixtures.jpeg(width: 64, height: 48), contentType: "image/jpeg"))
            try await withTemporaryDirectory { directory in
                let url = URL(string: origin.url("/cat.jpg"))!
                let first = makeManager(cacheDirectory: directory)
                var request = try ImageRequest(url: url)
                request.options.insert(.waitStoreCache)
                #expect(try await first.image(for: request).cacheType == .notCached)
                await first.shutdown()
                #expect(first.cache.configuration.memory.costLimit == 200 << 20)
                #expect(first.cache.configuration.disk.sizeLimit == 2 << 30)
                let second = makeManager(cacheDirectory: directory)
                let again = try await second.image(for: url)
                await second.shutdown()
                #expect(again.cacheType == .disk && again.image.width == 64)
                #expect(origin.requestCount("/cat.jpg") == 1)
            }
        }
    }

    @Test("the retrying example loads an image whose first answer was a 503")
    func retryExample() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            // The first request is held while the route changes, then answered 503: the retry finds the image.
            let gate = OriginGate()
            origin.route("/cat.jpg", .status(503).held(by: gate))
            let manager = makeRetryingManager()
            let load = Task { try await manager.image(for: URL(string: origin.url("/cat.jpg"))!) }
            await origin.waitForRequests(to: "/cat.jpg", count: 1)
            origin.route("/cat.jpg", .ok(try Fixtures.jpeg(width: 40, height: 30), contentType: "image/jpeg"))
            gate.open()
            let loaded = try await load.value
            await manager.shutdown()
            #expect(loaded.image.width == 40)
            #expect(origin.requestCount("/cat.jpg") == 2)
        }
    }

    @Test("the data example gives the origin's bytes as they were sent")
    func dataExample() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            let jpeg = try Fixtures.jpeg(width: 40, height: 30)
            origin.route("/cat.jpg", .ok(jpeg, contentType: "image/jpeg"))
            try await withImageManager { manager in
                // The manager's cache is the user's default one, which an earlier run may have filled for this port.
                let url = URL(string: origin.url("/cat.jpg"))!
                await manager.cache.removeImage(forKey: manager.cacheKey(for: url))
                let bytes = try await originalBytes(of: url, manager: manager)
                #expect(bytes == jpeg)
            }
        }
    }

    @Test("the cancelling example stops a load under way, which throws ImageError.cancelled")
    func cancelExample() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            let gate = OriginGate()
            origin.route("/cat.jpg", .ok(try Fixtures.jpeg(), contentType: "image/jpeg").held(by: gate))
            try await withImageManager { manager in
                let url = URL(string: origin.url("/cat.jpg"))!
                await manager.cache.removeImage(forKey: manager.cacheKey(for: url))  // See dataExample.
                let load = Task { try await manager.image(for: url) }
                await origin.waitForRequests(to: "/cat.jpg", count: 1)
                #expect(stopLoading(url, manager: manager) == 1)
                let result = await load.result
                gate.open()
                guard case .failure(let error as ImageError) = result, case .cancelled = error else {
                    Issue.record("expected ImageError.cancelled, got \(result)")
                    return
                }
            }
        }
    }

    @Test("the processor example makes a gray image through the manager, cached under its identifier")
    func processorExample() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/cat.jpg", .ok(try Fixtures.jpeg(width: 40, height: 30), contentType: "image/jpeg"))
            try await withImageManager { manager in
                let request = try ImageRequest(url: URL(string: origin.url("/cat.jpg"))!, processors: [Grayscale()])
                await manager.cache.removeImage(forKey: manager.cacheKey(for: request.url))  // See dataExample.
                let gray = try await manager.image(for: request)
                #expect(gray.image.pixels.format == .gray8 && gray.image.width == 40)
                #expect(manager.cacheKey(for: request).hasSuffix("processors=grayscale"))
                #expect(try await manager.image(for: request).cacheType == .memory)
            }
        }
    }

    @Test("the embedding example answers its own route and the proxy's under /media")
    func embeddingExample() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/cat.jpg", .ok(try Fixtures.jpeg(), contentType: "image/jpeg"))
            try await withTemporaryDirectory { directory in
                let app = application(configuration: testConfiguration(cacheDirectory: directory))
                try await app.test(.router) { client in
                    let page = try await client.execute(uri: "/", method: .get)
                    #expect(String(buffer: page.body) == "my application")
                    let uri = imageURI([("url", origin.url("/cat.jpg")), ("w", "100")])
                        .replacingOccurrences(of: "/img?", with: "/media/img?")
                    let image = try await client.execute(uri: uri, method: .get)
                    #expect(image.status == .ok)
                    #expect(try Fixtures.decode(image.body).width == 100)
                }
            }
        }
    }
}
