import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// `q=auto` and `q=auto:T`: the lowest quality whose output scores the target on SSIMULACRA 2, answered with the
/// quality chosen.
@Suite struct ProxyPerceptualQualityTests {
    /// A 320 × 240 picture with edges, stripes and texture, as PNG (the source loses nothing of its own).
    static func texture() throws -> [UInt8] {
        var bytes: [UInt8] = []
        for y in 0..<240 {
            for x in 0..<320 {
                let stripes = UInt8(128 + 100 * sin(Double(x) / 3 + Double(y) / 11))
                let block = (x / 40 + y / 40) % 2 == 0 ? UInt8(40) : 200
                bytes += [stripes, block, UInt8((x * y) % 256)]
            }
        }
        let image = Image(pixels: try PixelBuffer(width: 320, height: 240, format: .rgb8, bytes: bytes))
        return try ImageEncoder.encode(image, as: .png)
    }

    @Test(arguments: ["jpeg", "webp"])
    func theOutputScoresTheTargetAndSaysItsQuality(format: String) async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/t.png", .ok(try Self.texture(), contentType: "image/png"))
            try await withProxy { client in
                func get(_ quality: String) async throws -> TestResponse {
                    try await client.execute(
                        uri: imageURI([("url", origin.url("/t.png")), ("format", format), ("q", quality)]),
                        method: .get)
                }
                let reference = try ImageDecoder.decode(try Self.texture())
                var sizes: [Int] = []
                // (WebP reaches 84.9 at most on this picture: its colour is always halved.)
                for target in [60, 80] {
                    let response = try await get("auto:\(target)")
                    #expect(response.status == .ok)
                    let quality = try #require(response.headers[.ospreyQuality].flatMap { Int($0) })
                    #expect((1...100).contains(quality))
                    let score = try ImageQuality.ssimulacra2(
                        reference: reference, distorted: try Fixtures.decode(response.body))
                    #expect(score >= Double(target), "q\(quality) scores \(score) for a target of \(target)")
                    sizes.append(response.body.readableBytes)
                    // Again, from the result cache: the same bytes and the same quality.
                    let again = try await get("auto:\(target)")
                    #expect(again.body == response.body)
                    #expect(again.headers[.ospreyQuality] == String(quality))
                }
                #expect(sizes[0] < sizes[1], "\(sizes)")
                // `auto` is the default target, another variant than a fixed quality; a fixed one says nothing.
                let automatic = try await get("auto")
                let fixed = try await get("80")
                #expect(automatic.headers[.eTag] != fixed.headers[.eTag] || automatic.body == fixed.body)
                #expect(fixed.headers[.ospreyQuality] == nil)
                #expect(origin.requestCount("/t.png") == 1)
            }
        }
    }

    @Test func badTargetsAreRefused() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/t.png", .ok(try Self.texture(), contentType: "image/png"))
            try await withProxy { client in
                for quality in ["auto:0", "auto:101", "auto:", "auto:x", "autox", "auto:80:1"] {
                    let response = try await client.execute(
                        uri: imageURI([("url", origin.url("/t.png")), ("q", quality)]), method: .get)
                    #expect(response.status == .badRequest, "q=\(quality)")
                }
                #expect(origin.requestCount("/t.png") == 0)
            }
        }
    }

    @Test func formatBestAnswersTheSmallestAcceptedFormatAndVaries() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/t.png", .ok(try Self.texture(), contentType: "image/png"))
            try await withProxy { client in
                let uri = imageURI([("url", origin.url("/t.png")), ("format", "best"), ("w", "160")])
                var sizes: [String: Int] = [:]
                for accept in ["image/avif,image/webp,*/*", "image/webp,*/*", "*/*"] {
                    let response = try await client.execute(
                        uri: uri, method: .get, headers: [.accept: accept])
                    #expect(response.status == .ok)
                    #expect(response.headers[.vary] == "Accept")
                    let type = try #require(response.headers[.contentType])
                    let allowed =
                        ["image/jpeg", "image/png", "image/gif"] + (accept.contains("avif") ? ["image/avif"] : [])
                        + (accept.contains("webp") ? ["image/webp"] : [])
                    #expect(allowed.contains(type), "\(accept): \(type)")
                    #expect(response.headers[.ospreyQuality] != nil)
                    sizes[accept] = response.body.readableBytes
                }
                // A remembered query names the extension of the format kept, as the first answer did.
                for _ in 0..<2 {
                    let named = try await client.execute(
                        uri: imageURI([("url", origin.url("/t.png")), ("format", "best"), ("filename", "cat")]),
                        method: .get, headers: [.accept: "image/avif,image/webp,*/*"])
                    let type = try #require(named.headers[.contentType])
                    let format = try #require(ImageFormat.named(type.replacing("image/", with: ""), coders: .shared))
                    #expect(named.headers[.contentDisposition] == "inline; filename=\"cat.\(format.fileExtension!)\"")
                }
                // More formats to choose from never makes the answer larger.
                #expect(sizes["image/avif,image/webp,*/*"]! <= sizes["image/webp,*/*"]!)
                #expect(sizes["image/webp,*/*"]! <= sizes["*/*"]!)
                #expect(origin.requestCount("/t.png") == 1)
            }
        }
    }

    @Test("with best in --auto-format, format=auto answers as format=best does; without, the first accepted")
    func autoFormatCanPickTheBest() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/t.png", .ok(try Self.texture(), contentType: "image/png"))
            for picksBest in [true, false] {
                try await withProxy({ $0.autoFormatIsBest = picksBest }) { client in
                    func get(_ format: String) async throws -> TestResponse {
                        try await client.execute(
                            uri: imageURI([("url", origin.url("/t.png")), ("format", format), ("w", "160")]),
                            method: .get, headers: [.accept: "image/avif,image/webp,*/*"])
                    }
                    let (auto, best) = (try await get("auto"), try await get("best"))
                    #expect(auto.status == .ok && auto.headers[.vary] == "Accept")
                    if picksBest {
                        #expect(auto.body == best.body && auto.headers[.eTag] == best.headers[.eTag])
                        #expect(auto.headers[.ospreyQuality] != nil)
                    } else {
                        // jxl, avif, webp by default: AVIF, the first this client takes, at the fixed quality.
                        #expect(auto.headers[.contentType] == "image/avif")
                        #expect(auto.headers[.ospreyQuality] == nil)
                    }
                }
            }
        }
    }
}
