import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// `wm=` over a real socket: the configured mark laid over the result where, how opaque and how large it asks.
@Suite struct ProxyWatermarkTests {
    /// A 20×10 opaque red mark.
    static func mark() throws -> WatermarkImage {
        let pixels = try PixelBuffer(
            width: 20, height: 10, format: .rgb8, bytes: Array([[UInt8]](repeating: [255, 0, 0], count: 200).joined()))
        return try WatermarkImage(bytes: try ImageEncoder.encode(Image(pixels: pixels), as: .png))
    }

    /// The flat 50×50 gray source (90, 90, 90), resized to 100 wide… never enlarged: 50×50.
    static func withMarkedProxy(
        _ body: @Sendable (_ client: any TestClientProtocol, _ source: String) async throws -> Void
    ) async throws {
        let mark = try Self.mark()
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/flat.png", .ok(try Fixtures.flatPNG(width: 50, height: 50), contentType: "image/png"))
            try await withProxy(setup: .live, { $0.watermark = mark }) { client in
                try await body(client, origin.url("/flat.png"))
            }
        }
    }

    static func pixel(_ response: TestResponse, _ x: Int, _ y: Int) throws -> [UInt8] {
        let pixels = try Fixtures.decode(response.body).frames[0].pixels.converted(to: .rgb8)
        return Array(pixels.row(y)[(x * 3)..<(x * 3 + 3)])
    }

    @Test("the mark goes to the bottom right by default, where a position and offsets say otherwise, at its opacity")
    func placementAndOpacity() async throws {
        try await Self.withMarkedProxy { client, source in
            let plain = try await client.execute(uri: imageURI([("url", source), ("format", "png")]), method: .get)
            #expect(try Self.pixel(plain, 45, 45) == [90, 90, 90])

            let full = try await client.execute(
                uri: imageURI([("url", source), ("wm", "1"), ("format", "png")]), method: .get)
            #expect(full.status == .ok)
            #expect(try Self.pixel(full, 45, 45) == [255, 0, 0])  // inside the 20×10 mark at the bottom right
            #expect(try Self.pixel(full, 25, 45) == [90, 90, 90])  // left of it
            #expect(full.headers[.eTag] != plain.headers[.eTag])

            let half = try await client.execute(
                uri: imageURI([("url", source), ("wm", "0.5:northwest:5:5"), ("format", "png")]), method: .get)
            let mixed = try Self.pixel(half, 10, 8)
            #expect(abs(Int(mixed[0]) - 172) <= 2 && abs(Int(mixed[1]) - 45) <= 2, "\(mixed)")
            #expect(try Self.pixel(half, 2, 2) == [90, 90, 90])  // the offset leaves the corner alone

            // Half the result's width: 25×13 (rounded), at the centre.
            let scaled = try await client.execute(
                uri: imageURI([("url", source), ("wm", "1:center:0:0:0.5"), ("format", "png")]), method: .get)
            #expect(try Self.pixel(scaled, 13, 25) == [255, 0, 0] && Self.pixel(scaled, 10, 25) == [90, 90, 90])
        }
    }

    @Test("wm values are checked, and refused when the server has no watermark")
    func refusals() async throws {
        try await Self.withMarkedProxy { client, source in
            for value in ["2", "x", "1:up", "1:center:5", "1:center:5:5:2", "1:center:-1:0"] {
                let response = try await client.execute(uri: imageURI([("url", source), ("wm", value)]), method: .get)
                #expect(response.status == .badRequest, "\(value)")
            }
        }
        try await withProxy(setup: .live) { client in
            let response = try await client.execute(
                uri: imageURI([("url", "https://example.com/a.jpg"), ("wm", "1")]), method: .get)
            #expect(response.status == .badRequest)
            #expect(try response.json()["error"] as? String == "'wm': this server has no watermark")
        }
        #expect(throws: InvalidImageQuery.self) { try WatermarkImage(bytes: [1, 2, 3]) }
    }
}
