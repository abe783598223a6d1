import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import OspreyCodecs
import OspreyTesting
import Testing

/// The programs in Examples/, built with the package, run as their users would run them.
@Suite struct ExamplesTests {
    static func png(width: Int, height: Int, grey: UInt8 = 128) throws -> [UInt8] {
        let pixels = try PixelBuffer(
            width: width, height: height, format: .rgb8, bytes: [UInt8](repeating: grey, count: width * height * 3))
        return try ImageEncoder.encode(Image(pixels: pixels), as: .png)
    }

    @Test(
        "EmbeddedProxyExample: its own routes and the proxy's /media/img in one server, one registry; SIGTERM ends it")
    func embeddedProxy() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/cat.png", .ok(try Self.png(width: 64, height: 48), contentType: "image/png"))
            try await withDirectory { directory in
                let server = try ServeProcess(
                    arguments: ["--port", "0"], executable: try OspreyBinary.builtExecutable("EmbeddedProxyExample"),
                    environment: [
                        "EXAMPLE_CACHE_DIR": directory, "EXAMPLE_ALLOW_PRIVATE_NETWORKS": "1", "OSPREY_SECRET": "",
                    ])
                let port = try await server.port
                let client = HTTPClient(eventLoopGroupProvider: .singleton)
                defer { _ = client.shutdown() }
                func get(_ path: String) async throws -> (status: Int, body: [UInt8]) {
                    let response = try await client.execute(
                        HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)"), timeout: .seconds(30))
                    let body = try await response.body.collect(upTo: 1 << 20)
                    return (Int(response.status.code), Array(body.readableBytesView))
                }

                let hello = try await get("/hello")
                #expect(
                    hello.status == 200 && String(decoding: hello.body, as: UTF8.self) == "hello from the application\n"
                )
                let source = origin.url("/cat.png").addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                let image = try await get("/media/img?url=\(source)&w=32")
                #expect(image.status == 200)
                #expect(try ImageDecoder.decode(image.body).width == 32)
                let root = try await get("/img?url=\(source)&w=32")
                #expect(root.status == 404)
                let metrics = String(decoding: try await get("/metrics").body, as: UTF8.self)
                #expect(metrics.contains("example_greetings_total 1"))
                #expect(metrics.contains(#"osprey_http_requests_total{status="200"} 1"#))

                server.terminate()
                #expect(await server.exitStatus == 0)
            }
            #expect(origin.requestCount("/cat.png") == 1)
        }
    }

    @Test("BatchThumbnailerExample: 256 px WebPs of every URL, one download each however often it runs")
    func batchThumbnailer() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/wide.png", .ok(try Self.png(width: 640, height: 320), contentType: "image/png"))
            origin.route("/small.png", .ok(try Self.png(width: 100, height: 80), contentType: "image/png"))
            try await withDirectory { directory in
                let executable = try OspreyBinary.builtExecutable("BatchThumbnailerExample")
                let arguments = [directory + "/thumbs", origin.url("/wide.png"), origin.url("/small.png")]
                for _ in 0..<2 {
                    let run = try await OspreyBinary.run(
                        executable, arguments, environment: ["EXAMPLE_CACHE_DIR": directory + "/cache"])
                    #expect(run.status == 0, "\(run.standardOutput)\(run.standardError)")
                    #expect(run.standardOutput.contains("0.webp") && run.standardOutput.contains("1.webp"))
                }
                let wide = try ImageDecoder.decode(
                    Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/thumbs/0.webp"))))
                #expect((wide.width, wide.height) == (256, 128))
                let small = try ImageDecoder.decode(
                    Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/thumbs/1.webp"))))
                #expect((small.width, small.height) == (100, 80))
            }
            #expect(origin.requestCount("/wide.png") == 1)
            #expect(origin.requestCount("/small.png") == 1)
        }
    }

    @Test("CustomProcessorsExample: a processor of one's own after a built-in resize, through the manager")
    func customProcessors() async throws {
        try await withDirectory { directory in
            let input = directory + "/grey.png"
            try Data(try Self.png(width: 1600, height: 1200, grey: 128)).write(to: URL(fileURLWithPath: input))
            let output = directory + "/sepia.jpg"
            let run = try await OspreyBinary.run(
                try OspreyBinary.builtExecutable("CustomProcessorsExample"), [input, output])
            #expect(run.status == 0, "\(run.standardError)")
            let image = try ImageDecoder.decode(Array(try Data(contentsOf: URL(fileURLWithPath: output))))
            #expect((image.width, image.height) == (800, 600))
            // A neutral grey comes out warm: red above green above blue (JPEG keeps the order).
            let pixel = try image.pixels.converted(to: .rgb8).row(300).prefix(3).map(Int.init)
            #expect(pixel[0] > pixel[1] && pixel[1] > pixel[2], "\(pixel)")
        }
    }
}
