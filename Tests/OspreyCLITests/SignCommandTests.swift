import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Osprey
import OspreyCodecs
import OspreyCommandLine
import OspreyServer
import OspreyTesting
import Testing

@testable import OspreyProxyCLI

/// `osprey sign`: what it prints, what it refuses, and that a server with the secret serves what it signs.
@Suite struct SignCommandTests {
    static let environment = ["OSPREY_SECRET": "first-secret,second-secret"]

    @Test("the path or URL carries the parameters in order, exp from --expires-in, and the first secret's sig")
    func printsASignedPath() throws {
        let command = try SignOptions.parse([
            "https://example.com/a b.jpg", "w=300", "fit=cover", "h=200", "--expires-in", "60", "--base",
            "https://img.example.com/",
        ])
        let now = UnixTime(seconds: 1_800_000_000.7)
        let url = try command.signed(environment: Self.environment, now: now)
        let prefix = "https://img.example.com/img?url=https%3A%2F%2Fexample.com%2Fa%20b.jpg&w=300&fit=cover&h=200"
        #expect(url.hasPrefix(prefix + "&exp=1800000060&sig="))
        let sig = String(url.split(separator: "=").last ?? "")
        let parameters = [
            ("url", "https://example.com/a b.jpg"), ("w", "300"), ("fit", "cover"), ("h", "200"),
            ("exp", "1800000060"),
        ]
        #expect(URLSigner(secret: Array("first-secret".utf8)).isValid(sig, path: "/img", parameters: parameters))
        #expect(!URLSigner(secret: Array("second-secret".utf8)).isValid(sig, path: "/img", parameters: parameters))
        // --secret wins over the variable; without --base, the path alone.
        let flagged = try SignOptions.parse(["https://example.com/a.jpg", "--secret", "second-secret"])
        let path = try flagged.signed(environment: Self.environment, now: now)
        #expect(path.hasPrefix("/img?url=https%3A%2F%2Fexample.com%2Fa.jpg&sig="))
        let flaggedSig = String(path.split(separator: "=").last ?? "")
        #expect(
            URLSigner(secret: Array("second-secret".utf8)).isValid(
                flaggedSig, path: "/img", parameters: [("url", "https://example.com/a.jpg")]))
    }

    @Test("what the server would refuse is not signed, and nothing is signed without a secret")
    func refusals() throws {
        let cases: [([String], String)] = [
            (["https://example.com/a.jpg", "width=3"], "unknown parameter 'width'"),
            (["https://example.com/a.jpg", "w=0"], "'w' must be an integer from 1 to 16384"),
            (["ftp://example.com/a.jpg"], "'url' must be an absolute http or https URL"),
            (["https://example.com/a.jpg", "w300"], "'w300' is not NAME=VALUE"),
            (["https://example.com/a.jpg", "sig=x"], "'sig' is set by osprey sign itself"),
            // Now plus this overflows Int: a usage error, where the sum used to trap.
            (["https://example.com/a.jpg", "--expires-in", "9223372036854775807"], "is past the year 9999"),
            (["https://example.com/a.jpg", "--expires-in", "9999999999999"], "'exp' must be an integer"),
        ]
        for (arguments, message) in cases {
            let command = try SignOptions.parse(arguments)
            #expect(throws: (any Error).self) { try command.signed(environment: Self.environment, now: .now) }
            do {
                _ = try command.signed(environment: Self.environment, now: .now)
            } catch {
                #expect("\(error)".contains(message), "\(arguments): \(error)")
            }
        }
        let unsigned = try SignOptions.parse(["https://example.com/a.jpg"])
        #expect(throws: (any Error).self) { try unsigned.signed(environment: [:], now: .now) }
        #expect(throws: (any Error).self) {
            try SignCommand.parseAsRoot(["https://example.com/a.jpg", "--expires-in", "5", "--expires-at", "9"])
        }
    }

    @Test("osprey serve with two secrets serves what osprey sign signs with either; 410 past exp; 403 for another")
    func serverAcceptsWhatItSigns() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            let pixels = try PixelBuffer(
                width: 64, height: 48, format: .rgb8, bytes: [UInt8](repeating: 90, count: 64 * 48 * 3))
            origin.route("/a.png", .ok(try ImageEncoder.encode(Image(pixels: pixels), as: .png)))
            let directory = NSTemporaryDirectory() + "osprey-sign-" + UUID().uuidString
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let server = try ServeProcess(arguments: [
                "serve", "--port", "0", "--secret", "new-secret", "--secret", "old-secret",
                "--allow-private-networks", "--cache-dir", directory,
            ])
            let port = try await server.port
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = client.shutdown() }

            func status(_ arguments: [String]) async throws -> Int {
                let signed = try await OspreyBinary.run(
                    ["sign", origin.url("/a.png"), "w=32", "--base", "http://127.0.0.1:\(port)"] + arguments)
                #expect(signed.status == 0, "\(signed.standardError)")
                let url = signed.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
                let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
                _ = try await response.body.collect(upTo: 1 << 20)
                return Int(response.status.code)
            }
            #expect(try await status(["--secret", "new-secret"]) == 200)
            #expect(try await status(["--secret", "old-secret", "--expires-in", "600"]) == 200)
            #expect(try await status(["--secret", "new-secret", "--expires-at", "1000"]) == 410)
            #expect(try await status(["--secret", "another-secret"]) == 403)
            server.terminate()
            #expect(await server.exitStatus == 0)
        }
    }

    @Test("--srcset prints signed candidates, --picture AVIF and WebP sources; w, h and dpr are refused with it")
    func printsASrcset() throws {
        let command = try SignOptions.parse([
            "https://example.com/cat.jpg", "q=75", "--srcset", "640,320", "--sizes", "(max-width: 700px) 100vw, 700px",
        ])
        let text = try command.signed(environment: Self.environment, now: UnixTime(seconds: 0))
        #expect(text.hasPrefix("srcset=\"/img?url=https%3A%2F%2Fexample.com%2Fcat.jpg&amp;q=75&amp;w=320&amp;sig="))
        #expect(
            text.contains(" 320w, /img?url=") && text.hasSuffix(" 640w\" sizes=\"(max-width: 700px) 100vw, 700px\""))
        let picture = try SignOptions.parse([
            "https://example.com/cat.jpg", "--srcset", "480,960,1600", "--picture", "--alt", "A \"cat\"",
        ]).signed(environment: Self.environment, now: UnixTime(seconds: 0))
        let lines = picture.split(separator: "\n")
        #expect(lines.count == 5 && lines.first == "<picture>" && lines.last == "</picture>")
        #expect(lines[1].hasPrefix("  <source type=\"image/avif\" srcset=\"") && lines[1].contains("format=avif"))
        #expect(lines[2].hasPrefix("  <source type=\"image/webp\" srcset=\"") && lines[2].contains("format=webp"))
        // The <img>'s src is the widest candidate up to 1024, in JPEG.
        #expect(
            lines[3].hasPrefix("  <img src=\"/img?url=https%3A%2F%2Fexample.com%2Fcat.jpg&amp;w=960&amp;format=jpeg"))
        #expect(lines[3].hasSuffix("alt=\"A &quot;cat&quot;\">"))
        for arguments in [["w=300"], ["h=300"], ["dpr=2"], ["--srcset", "0"], ["--srcset", "100,x"], ["q=0"]] {
            #expect(throws: (any Error).self, "\(arguments)") {
                let command = try SignOptions.parse(["https://example.com/cat.jpg", "--srcset", "100"] + arguments)
                _ = try command.signed(environment: Self.environment, now: UnixTime(seconds: 0))
            }
        }
        #expect(throws: (any Error).self) { try SignCommand.parseAsRoot(["https://example.com/a.jpg", "--picture"]) }
    }

    @Test(
        "every candidate osprey sign --srcset prints is answered at the width its descriptor claims; --info signs /info"
    )
    func serverAnswersEveryCandidate() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            var bytes: [UInt8] = []
            for y in 0..<1000 { for x in 0..<2000 { bytes += [UInt8(x % 256), UInt8(y % 256), 128] } }
            let pixels = try PixelBuffer(width: 2000, height: 1000, format: .rgb8, bytes: bytes)
            origin.route("/wide.jpg", .ok(try ImageEncoder.encode(Image(pixels: pixels), as: .jpeg)))
            let directory = NSTemporaryDirectory() + "osprey-srcset-" + UUID().uuidString
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let server = try ServeProcess(arguments: [
                "serve", "--port", "0", "--secret", "srcset-secret", "--allow-private-networks", "--cache-dir",
                directory,
            ])
            let port = try await server.port
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = client.shutdown() }
            let base = "http://127.0.0.1:\(port)"
            for extra in [[String](), ["--picture"]] {
                let signed = try await OspreyBinary.run(
                    [
                        "sign", origin.url("/wide.jpg"), "q=80", "--srcset", "160,320,640,1280,1920", "--base", base,
                        "--secret", "srcset-secret",
                    ] + extra)
                #expect(signed.status == 0, "\(signed.standardError)")
                // Every `URL NNNw` candidate of every srcset printed.
                var candidates: [(String, Int)] = []
                for match in signed.standardOutput.matches(of: /srcset="([^"]*)"/) {
                    for candidate in match.output.1.split(separator: ", ") {
                        let parts = candidate.split(separator: " ")
                        let url = parts[0].replacingOccurrences(of: "&amp;", with: "&")
                        candidates.append((url, Int(parts[1].dropLast())!))
                    }
                }
                #expect(candidates.count == (extra.isEmpty ? 5 : 15))
                for (url, width) in candidates {
                    let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
                    let body = try await response.body.collect(upTo: 16 << 20)
                    #expect(response.status == .ok, "\(url)")
                    let image = try ImageDecoder.decode(Array(body.readableBytesView))
                    #expect(image.width == width, "\(url)")
                    #expect(image.height == width / 2, "\(url)")
                }
            }
            let info = try await OspreyBinary.run(
                ["sign", origin.url("/wide.jpg"), "--info", "bh=3:3", "--base", base, "--secret", "srcset-secret"])
            let url = info.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(url.hasPrefix(base + "/info?url="))
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 20)
            #expect(response.status == .ok)
            let json = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
            #expect(json?["width"] as? Int == 2000 && (json?["blurHash"] as? String)?.count == 4 + 2 * 9)
            server.terminate()
            #expect(await server.exitStatus == 0)
        }
    }
}
