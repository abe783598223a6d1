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

    @Test("every Swift example of the README is in this file, word for word")
    func examplesAreHere() throws {
        let blocks = Self.swiftBlocks(of: try String(contentsOf: Self.readme, encoding: .utf8))
        #expect(blocks.count == 2)
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
