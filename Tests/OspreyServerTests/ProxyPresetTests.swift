import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// Presets (`p=`), over a real socket: applied in order, overridden by the request, `default` for every request,
/// and the presets-only mode.
@Suite struct ProxyPresetTests {
    static func presets(_ specifications: String...) throws -> [ImagePreset] {
        try specifications.map { specification throws(InvalidImageQuery) in try ImagePreset(parsing: specification) }
    }

    @Test("p= applies presets in order; the request's own parameters override them; the same render is shared")
    func presetsApplyAndAreOverridden() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            let source = origin.url("/photo.jpg")
            let presets = try Self.presets("thumb=w:40,h:30,fit:cover,format:png", "narrow=w:20")
            try await withProxy(setup: .live, { $0.presets = presets }) { client in
                let thumb = try await client.execute(uri: imageURI([("url", source), ("p", "thumb")]), method: .get)
                #expect(thumb.status == .ok)
                #expect(thumb.headers[.contentType] == "image/png")
                let image = try Fixtures.decode(thumb.body)
                #expect(image.width == 40 && image.height == 30)

                // A later preset wins over an earlier one, the request over both.
                let both = try await client.execute(
                    uri: imageURI([("url", source), ("p", "thumb,narrow")]), method: .get)
                #expect(try Fixtures.decode(both.body).width == 20)
                let overridden = try await client.execute(
                    uri: imageURI([("url", source), ("p", "thumb"), ("format", "jpeg"), ("h", "10")]), method: .get)
                #expect(overridden.headers[.contentType] == "image/jpeg")
                let small = try Fixtures.decode(overridden.body)
                #expect(small.width == 40 && small.height == 10)

                // The preset and the parameters it stands for are one render.
                let spelled = try await client.execute(
                    uri: imageURI([
                        ("url", source), ("w", "40"), ("h", "30"), ("fit", "cover"), ("format", "png"),
                    ]), method: .get)
                #expect(spelled.headers[.eTag] == thumb.headers[.eTag])
                #expect(origin.requestCount("/photo.jpg") == 1)

                let unknown = try await client.execute(uri: imageURI([("url", source), ("p", "huge")]), method: .get)
                #expect(unknown.status == .badRequest)
                #expect(try unknown.json()["error"] as? String == "unknown preset 'huge'")
            }
        }
    }

    @Test("a preset named default applies to every request, and the request still overrides it")
    func defaultPreset() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            let source = origin.url("/photo.jpg")
            let presets = try Self.presets("default=format:webp,q:60", "thumb=w:40")
            try await withProxy(setup: .live, { $0.presets = presets }) { client in
                let plain = try await client.execute(uri: imageURI([("url", source)]), method: .get)
                #expect(plain.headers[.contentType] == "image/webp")
                let thumb = try await client.execute(uri: imageURI([("url", source), ("p", "thumb")]), method: .get)
                #expect(thumb.headers[.contentType] == "image/webp")
                #expect(try Fixtures.decode(thumb.body).width == 40)
                let png = try await client.execute(uri: imageURI([("url", source), ("format", "png")]), method: .get)
                #expect(png.headers[.contentType] == "image/png")
            }
        }
    }

    @Test("presets only: p, url, exp and sig pass; any other parameter is refused before anything is fetched")
    func presetsOnly() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            let source = origin.url("/photo.jpg")
            let presets = try Self.presets("thumb=w:40")
            try await withProxy(
                setup: .live,
                {
                    $0.presets = presets
                    $0.presetsOnly = true
                }
            ) { client in
                let thumb = try await client.execute(uri: imageURI([("url", source), ("p", "thumb")]), method: .get)
                #expect(thumb.status == .ok)
                let refused = try await client.execute(
                    uri: imageURI([("url", source), ("p", "thumb"), ("w", "4000")]), method: .get)
                #expect(refused.status == .badRequest)
                #expect(try refused.json()["error"] as? String == "this server takes presets only ('p'), not 'w'")
                #expect(origin.requestCount("/photo.jpg") == 1)
            }
        }
    }

    @Test("a preset is checked when it is made: its form, its name, what it may set, and its values")
    func presetParsing() throws {
        let thumb = try ImagePreset(parsing: "thumb=w:300,h:300,fit:cover,q:75")
        #expect(thumb.name == "thumb")
        #expect(thumb.parameters.map(\.name) == ["w", "h", "fit", "q"])
        #expect(thumb.parameters.map(\.value) == ["300", "300", "cover", "75"])
        let refusals: [(String, String)] = [
            ("thumb", "preset 'thumb' is not NAME=key:value,..."),
            ("thumb=w300", "'w300' in preset 'thumb=w300' is not key:value"),
            ("th umb=w:3", "'th umb' is not a preset name: use letters, digits, - and _"),
            ("thumb=url:https://example.com/a.jpg", "preset 'thumb' cannot set 'url'"),
            ("thumb=w:0", "'w' must be an integer from 1 to 16384"),
            ("thumb=width:3", "unknown parameter 'width'"),
        ]
        for (specification, message) in refusals {
            #expect(throws: InvalidImageQuery(message: message)) { try ImagePreset(parsing: specification) }
        }
    }
}
