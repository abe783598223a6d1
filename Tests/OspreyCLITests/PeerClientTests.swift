import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import OspreyCodecs
import OspreyTesting
import Testing

/// `osprey serve` driven by the peers' own client libraries, from PyPI (installed into `.build/test-venv` by
/// `make test`): URLs signed by libthumbor (thumbor's signer) and built by the `imgproxy` package are answered, and
/// tampered, other-key and unsigned ones refused; and the real thumbor answers the same thumbor URLs side by side.
/// Skipped, saying so, without the venv, unless `OSPREY_REQUIRE_PEERS=1` (as CI sets) demands it.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct PeerClientTests {
    /// The venv's Python, when `make test` made it.
    static var python: String? { PeerPython.path }

    static var isRequired: Bool { PeerPython.isRequired }

    /// Runs `code` with the venv's Python; its standard output's lines.
    static func runPython(_ code: String) async throws -> [String] {
        let python = try #require(python, "no .build/test-venv: run scripts/test-venv.sh")
        let run = try await OspreyBinary.run(python, ["-c", code])
        #expect(run.status == 0, "\(run.standardError)")
        return run.standardOutput.split(separator: "\n").map(String.init)
    }

    /// `osprey serve` with `arguments`, the client, and a GET helper giving status, content type and body.
    static func withServer(
        _ arguments: [String], _ body: (_ get: (String) async throws -> (Int, String?, [UInt8])) async throws -> Void
    ) async throws {
        try await withDirectory { directory in
            let server = try ServeProcess(
                arguments: [
                    "serve", "--port", "0", "--allow-private-networks", "--cache-dir", directory,
                ] + arguments, environment: ["OSPREY_SECRET": ""])
            let port = try await server.port
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = client.shutdown() }
            try await body { path in
                let response = try await client.execute(
                    HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)"), timeout: .seconds(60))
                let bytes = try await response.body.collect(upTo: 64 << 20)
                return (
                    Int(response.status.code), response.headers.first(name: "Content-Type"),
                    Array(bytes.readableBytesView)
                )
            }
            server.terminate()
            _ = await server.exitStatus
        }
    }

    @Test(
        "URLs libthumbor signs are answered; tampered, other-key and unsafe ones are 403 (unsafe only when allowed)",
        .enabled(if: python != nil || isRequired, "no .build/test-venv (scripts/test-venv.sh)"))
    func libthumbor() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/a.jpg", .ok(try PeerFixtures.photo(width: 800, height: 600), contentType: "image/jpeg"))
            let image = origin.url("/a.jpg")
            let lines = try await Self.runPython(
                """
                from libthumbor import CryptoURL
                good, other = CryptoURL(key="thumbor-key"), CryptoURL(key="other-key")
                url = "\(image)"
                print(good.generate(width=300, height=200, smart=True, image_url=url))
                print(good.generate(width=160, height=0, image_url=url, filters=["format(webp)", "quality(70)"]))
                print(good.generate(fit_in=True, width=400, height=400, halign="left", valign="top", image_url=url))
                print(good.generate(width=120, height=120, flip=True, crop=((10, 10), (410, 410)), image_url=url))
                print(other.generate(width=300, height=200, image_url=url))
                print(good.generate(width=300, height=200, image_url=url, unsafe=True))
                """)
            #expect(lines.count == 6)
            let expected: [(Int, Int, String)] = [
                (300, 200, "image/jpeg"), (160, 120, "image/webp"), (400, 300, "image/jpeg"), (120, 120, "image/jpeg"),
            ]
            try await Self.withServer(["--thumbor-path", "/", "--thumbor-key", "thumbor-key"]) { get in
                for (path, (width, height, type)) in zip(lines, expected) {
                    let (status, contentType, body) = try await get(path)
                    #expect(status == 200, "\(path): \(String(decoding: body, as: UTF8.self))")
                    #expect(contentType == type, "\(path)")
                    let decoded = try ImageDecoder.decode(body)
                    #expect((decoded.width, decoded.height) == (width, height), "\(path)")
                }
                // One character of the signature changed, the same path with the other key, and unsafe/.
                let signed = lines[0]
                let flipped = signed.dropFirst().first == "A" ? "B" : "A"
                let tampered = "/" + flipped + signed.dropFirst(2)
                #expect(try await get(tampered).0 == 403)
                #expect(try await get(lines[0].replacingOccurrences(of: "300x200", with: "301x200")).0 == 403)
                #expect(try await get(lines[4]).0 == 403)
                #expect(try await get("/" + lines[5]).0 == 403)
            }
            try await Self.withServer(["--thumbor-path", "/", "--allow-unsigned"]) { get async throws in
                #expect(try await get("/" + lines[5]).0 == 200)
                #expect(try await get(lines[4]).0 == 403, "a signature that does not match is refused even so")
            }
            #expect(origin.requestCount("/a.jpg") >= 1)
        }
    }

    @Test(
        "URLs the imgproxy package builds and signs are answered; tampered, other-key and insecure ones are 403",
        .enabled(if: python != nil || isRequired, "no .build/test-venv (scripts/test-venv.sh)"))
    func imgproxy() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/a.jpg", .ok(try PeerFixtures.photo(width: 800, height: 600), contentType: "image/jpeg"))
            let image = origin.url("/a.jpg")
            let (key, salt) = (
                "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881",
                "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
            )
            let lines = try await Self.runPython(
                """
                from imgproxy import ImgProxy
                url = "\(image)"
                good = ImgProxy.factory(key="\(key)", salt="\(salt)")
                other = ImgProxy.factory(key="\(String(repeating: "ab", count: 32))", salt="\(salt)")
                print(good(url, width=300, height=200, resizing_type="fill", gravity="sm")())
                print(good(url, width=200, height=200, resizing_type="fit", extension="webp")())
                print(good(url, width=1000, height=0, resizing_type="fit", enlarge=True, extension="png")())
                print(good(url, width=100, height=100, resizing_type="fill", gravity="no")("q:60", "bl:2"))
                print(other(url, width=300, height=200)())
                print(ImgProxy(url, width=300, height=200)())
                """)
            #expect(lines.count == 6)
            let expected: [(Int, Int, String)] = [
                (300, 200, "image/jpeg"), (200, 150, "image/webp"), (1000, 750, "image/png"), (100, 100, "image/jpeg"),
            ]
            try await Self.withServer(["--imgproxy-path", "/", "--imgproxy-key", key, "--imgproxy-salt", salt]) { get in
                for (path, (width, height, type)) in zip(lines, expected) {
                    let (status, contentType, body) = try await get(path)
                    #expect(status == 200, "\(path): \(String(decoding: body, as: UTF8.self))")
                    #expect(contentType == type, "\(path)")
                    let decoded = try ImageDecoder.decode(body)
                    #expect((decoded.width, decoded.height) == (width, height), "\(path)")
                }
                #expect(try await get(lines[0].replacingOccurrences(of: ":300:", with: ":301:")).0 == 403)
                #expect(try await get(lines[4]).0 == 403)
                #expect(lines[5].hasPrefix("/insecure/"))
                #expect(try await get(lines[5]).0 == 403)
            }
            try await Self.withServer(["--imgproxy-path", "/", "--allow-unsigned"]) { get async throws in
                #expect(try await get(lines[5]).0 == 200)
            }
        }
    }
}

/// Sources the peer tests make with our own encoder, for the tests that need no corpus.
enum PeerFixtures {
    /// A photo-like JPEG: gradients and waves.
    static func photo(width: Int, height: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let (u, v) = (Double(x) / Double(width), Double(y) / Double(height))
                let index = (y * width + x) * 3
                bytes[index] = UInt8(clamping: Int(255 * u))
                bytes[index + 1] = UInt8(clamping: Int(200 * v + 30 * sin(u * 12)))
                bytes[index + 2] = UInt8(clamping: Int(120 + 100 * sin(u * 5 + v * 3)))
            }
        }
        let pixels = try PixelBuffer(width: width, height: height, format: .rgb8, bytes: bytes)
        return try ImageEncoder.encode(Image(pixels: pixels), as: .jpeg, quality: 90)
    }
}
