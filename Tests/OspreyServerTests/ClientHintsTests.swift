import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// `--client-hints`, over a real socket: DPR multiplies `w`, the layout width sizes a URL without `w`, the viewport
/// bounds one, `Save-Data` lowers the quality; `Accept-CH` and `Vary` exact; nothing read without the flag.
@Suite struct ClientHintsTests {
    static func hinted(_ pairs: [(String, String)]) -> HTTPFields {
        var headers = HTTPFields()
        for (name, value) in pairs { headers[HTTPField.Name(name)!] = value }
        return headers
    }

    /// Runs `body` with a 1200 × 900 photo at `source` and a live proxy, client hints on when `hints` is given.
    static func withPhoto(
        hints: ClientHintsConfiguration?, _ configure: @escaping (inout ServerConfiguration) -> Void = { _ in },
        _ body: @escaping @Sendable (any TestClientProtocol, String) async throws -> Void
    ) async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg(width: 1200, height: 900), contentType: "image/jpeg"))
            let source = origin.url("/photo.jpg")
            try await withProxy(
                setup: .live,
                {
                    $0.clientHints = hints
                    configure(&$0)
                }
            ) { client in
                try await body(client, source)
            }
        }
    }

    @Test func pixelRatioMultipliesTheSize() async throws {
        try await Self.withPhoto(hints: ClientHintsConfiguration()) { client, source in
            let uri = imageURI([("url", source), ("w", "150")])
            let plain = try await client.execute(uri: uri, method: .get)
            #expect(try Fixtures.decode(plain.body).width == 150)
            #expect(plain.headers[.vary] == "Sec-CH-DPR, Save-Data")
            #expect(plain.headers[HTTPField.Name("Accept-CH")!] == ClientHints.accepted)
            for header in ["Sec-CH-DPR", "DPR"] {
                let doubled = try await client.execute(uri: uri, method: .get, headers: Self.hinted([(header, "2")]))
                #expect(try Fixtures.decode(doubled.body).width == 300, "\(header)")
                #expect(doubled.headers[.vary] == "\(header), Save-Data")
            }
            // The URL's own dpr wins, and the answer no longer depends on the hint.
            let given = try await client.execute(
                uri: imageURI([("url", source), ("w", "150"), ("dpr", "1.5"), ("q", "80")]), method: .get,
                headers: Self.hinted([("Sec-CH-DPR", "3")]))
            #expect(try Fixtures.decode(given.body).width == 225)
            #expect(given.headers[.vary] == nil)
        }
    }

    @Test func widthHintSizesAURLWithoutW() async throws {
        try await Self.withPhoto(hints: ClientHintsConfiguration(widthStep: 100)) { client, source in
            let uri = imageURI([("url", source)])
            let hinted = try await client.execute(
                uri: uri, method: .get, headers: Self.hinted([("Sec-CH-Width", "333"), ("Sec-CH-DPR", "2")]))
            // 333 rounded up to the step of 100; the DPR is in the width already.
            #expect(try Fixtures.decode(hinted.body).width == 400)
            #expect(hinted.headers[.vary] == "Sec-CH-Width, Sec-CH-Viewport-Width, Sec-CH-DPR, Save-Data")
            let legacy = try await client.execute(uri: uri, method: .get, headers: Self.hinted([("Width", "350")]))
            #expect(try Fixtures.decode(legacy.body).width == 400)
            #expect(legacy.headers[.vary] == "Width, Sec-CH-Viewport-Width, Sec-CH-DPR, Save-Data")
            // A viewport of 360 CSS pixels at DPR 2 bounds the image at 720, stepped to 800.
            let viewport = try await client.execute(
                uri: uri, method: .get, headers: Self.hinted([("Sec-CH-Viewport-Width", "360"), ("Sec-CH-DPR", "2")]))
            #expect(try Fixtures.decode(viewport.body).width == 800)
            // A width past the source is not an enlargement, and never past the limits.
            let huge = try await client.execute(
                uri: uri, method: .get, headers: Self.hinted([("Sec-CH-Width", "99999")]))
            #expect(huge.status == .ok)
            #expect(try Fixtures.decode(huge.body).width == 1200)
            // Nonsense is ignored.
            for value in ["-5", "0", "nan", "1e3", "wide"] {
                let ignored = try await client.execute(
                    uri: uri, method: .get, headers: Self.hinted([("Sec-CH-Width", value)]))
                #expect(try Fixtures.decode(ignored.body).width == 1200, "\(value)")
            }
        }
    }

    @Test func widthHintStaysWithinTheOutputLimit() async throws {
        try await Self.withPhoto(hints: ClientHintsConfiguration(), { $0.maxOutputPixels = 400_000 }) {
            client, source in
            let response = try await client.execute(
                uri: imageURI([("url", source), ("h", "500"), ("fit", "inside")]), method: .get,
                headers: Self.hinted([("Sec-CH-Width", "4000")]))
            #expect(response.status == .ok)
            let image = try Fixtures.decode(response.body)
            #expect(image.width * image.height <= 400_000)
        }
    }

    @Test func saveDataLowersTheQuality() async throws {
        try await Self.withPhoto(hints: ClientHintsConfiguration(saveDataQuality: 30)) { client, source in
            let uri = imageURI([("url", source), ("w", "600")])
            let normal = try await client.execute(uri: uri, method: .get)
            let saving = try await client.execute(uri: uri, method: .get, headers: Self.hinted([("Save-Data", "on")]))
            #expect(saving.status == .ok)
            #expect(saving.body.readableBytes < normal.body.readableBytes * 3 / 4)
            #expect(try Fixtures.decode(saving.body).width == 600)
            // With q in the URL, Save-Data changes nothing and is not in Vary.
            let quality = imageURI([("url", source), ("w", "600"), ("q", "80")])
            let fixed = try await client.execute(
                uri: quality, method: .get, headers: Self.hinted([("Save-Data", "on")]))
            let unhinted = try await client.execute(uri: quality, method: .get)
            #expect(fixed.body == unhinted.body)
            #expect(fixed.headers[.vary] == "Sec-CH-DPR")
        }
    }

    @Test func nothingChangesWithoutTheFlag() async throws {
        try await Self.withPhoto(hints: nil) { client, source in
            let headers = Self.hinted([
                ("Sec-CH-DPR", "2"), ("Sec-CH-Width", "300"), ("Sec-CH-Viewport-Width", "320"), ("Save-Data", "on"),
            ])
            for uri in [imageURI([("url", source), ("w", "150")]), imageURI([("url", source)])] {
                let hinted = try await client.execute(uri: uri, method: .get, headers: headers)
                let plain = try await client.execute(uri: uri, method: .get)
                #expect(hinted.body == plain.body)
                #expect(hinted.headers[.vary] == nil && hinted.headers[HTTPField.Name("Accept-CH")!] == nil)
            }
        }
    }
}
