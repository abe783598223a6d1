import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// thumbor's URLs: the path's parts in thumbor's order, each filter of the list, libthumbor's signature, `meta/`'s
/// JSON, and hostile paths. (PyPI's libthumbor signs URLs against the server, and the real thumbor renders the same
/// URLs side by side, in the CLI suite's `PeerClientTests`.)
@Suite struct ThumborURLTests {
    static var server: ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.thumbor = ThumborConfiguration(path: "/thumbor")
        configuration.allowsUnsigned = true
        return configuration
    }

    static func parse(_ path: String) throws -> RenderParameters {
        try ThumborURL(path: "/unsafe/" + path, server: server).parameters
    }

    static func message(_ path: String) -> String? {
        do {
            _ = try parse(path)
            return nil
        } catch let error as ProxyError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test("the path's parts, in thumbor's order, become the shared render parameters")
    func parts() throws {
        var parameters = try Self.parse("300x200/example.com/a.jpg")
        #expect(parameters.source.absoluteString == "http://example.com/a.jpg")
        // thumbor's crop mode is thumbor's own arithmetic (ThumborCrop), to the pixel.
        var crop = try #require(parameters.thumborCrop)
        #expect(
            (crop.width, crop.height, crop.alignment, crop.noUpscale, crop.stretch) == (300, 200, .center, false, false)
        )
        let plan = crop.plan(sourceWidth: 1165, sourceHeight: 859)
        #expect(plan.crop == (0, 40, 1165, 777) && (plan.width, plan.height) == (300, 200))
        parameters = try Self.parse("fit-in/300x200/https%3A%2F%2Fexample.com%2Fa.jpg")
        #expect(parameters.source.absoluteString == "https://example.com/a.jpg")
        #expect((parameters.fit, parameters.enlarges) == (.inside, false))
        parameters = try Self.parse("full-fit-in/300x200/https://example.com/a.jpg")
        #expect((parameters.fit, parameters.enlarges) == (.outside, true))
        parameters = try Self.parse("adaptive-fit-in/300x200/filters:upscale()/https://example.com/a.jpg")
        #expect(parameters.adaptive && parameters.fit == .inside && parameters.thumborUpscale != nil)
        parameters = try Self.parse(
            "meta/trim:bottom-right:20/10x20:110x220/-300x-200/left/bottom/https://example.com/a.jpg")
        #expect(parameters.meta)
        #expect(parameters.trim?.background == .bottomRight && parameters.trim?.threshold == 20)
        #expect(parameters.crop == .rect(x: 10, y: 20, width: 100, height: 200))
        #expect(parameters.flipsHorizontally && parameters.flipsVertically)
        crop = try #require(parameters.thumborCrop)
        #expect(crop.alignment == .bottomLeft)
        parameters = try Self.parse("300x200/smart/https://example.com/a.jpg")
        #expect(parameters.smartGravity)
        parameters = try Self.parse("300x0/https://example.com/a.jpg")
        crop = try #require(parameters.thumborCrop)
        // A side not given follows the aspect ratio, rounded half to even as Python's round: 112.5 is 112.
        #expect(crop.plan(sourceWidth: 800, sourceHeight: 300).height == 112)
        #expect(crop.plan(sourceWidth: 800, sourceHeight: 302).height == 113)
        parameters = try Self.parse("300x200/filters:rotate(90)/https://example.com/a.jpg")
        // thumbor turns counter-clockwise after resizing to 300×200: the result is 200×300, turned 270° clockwise.
        #expect((parameters.width, parameters.height, parameters.quarterTurns) == (200, 300, 3))
        #expect(parameters.thumborCrop?.width == 300)
        parameters = try Self.parse("300x200/filters:no_upscale()/https://example.com/a.jpg")
        #expect(parameters.thumborCrop?.noUpscale == true)
        #expect(parameters.thumborCrop?.plan(sourceWidth: 100, sourceHeight: 100).width == 100)
        parameters = try Self.parse("300x200/filters:stretch()/https://example.com/a.jpg")
        #expect(parameters.thumborCrop?.stretch == true)
    }

    /// Each filter of the list, in a valid form.
    static let filters: [String] = [
        "format(webp)", "quality(80)", "fill(red)", "fill(ff0000)", "fill(blur)", "fill(auto,true)",
        "background_color(ffffff)", "blur(5)", "blur(5,2)", "brightness(-40)", "contrast(30)", "saturation(1.5)",
        "rgb(10,-10,20)", "grayscale()", "round_corner(20,255,255,255)", "round_corner(30|15,0,0,0,true)",
        "rotate(180)",
        "sharpen(1.5,0.5,true)", "strip_exif()", "strip_icc()", "no_upscale()", "upscale()", "max_bytes(20000)",
        "focal(10x10:100x100)", "proportion(0.5)", "watermark(https://example.com/m.png,-10,10p,50)",
        "watermark(example.com/m.png,center,repeat,0,20,none)", "quality(80):format(png):blur(2)",
    ]

    @Test("each listed filter parses", arguments: filters)
    func filter(text: String) throws {
        #expect(throws: Never.self) { try Self.parse("300x200/filters:\(text)/https://example.com/a.jpg") }
    }

    /// Filters that must be refused, and what the 400 must say.
    static let badFilters: [(String, String)] = [
        ("noise(10)", "'noise' is not supported"), ("sepia()", "unknown thumbor filter 'sepia'"),
        ("quality(80", "unbalanced"), ("quality(80))", "closes nothing"), ("quality((80))", "nested"),
        ("blur()", "'blur' takes 1 to 2"), ("quality(101)", "'quality'"), ("rgb(1,2)", "'rgb' takes 3"),
        ("brightness(0x10)", "'brightness'"), ("fill(#fff)", "'fill'"), ("format(bmp)", "'bmp'"),
        ("round_corner(a,1,2,3)", "'round_corner'"), ("watermark(u,1,2)", "'watermark' takes 4 to 6"),
        ("watermark(u,left,2,3)", "'watermark'"), ("quality(80):", "end with ':'"), ("quality(80)blur(2)", "separated"),
        ("fill(nocolour)", "'nocolour'"),
    ]

    @Test("unknown, unsupported and malformed filters are a 400 naming the problem", arguments: badFilters)
    func badFilter(text: String, expected: String) throws {
        let message = try #require(Self.message("300x200/filters:\(text)/https://example.com/a.jpg"), "\(text)")
        #expect(message.contains(expected), "\(text): \(message)")
    }

    @Test("hostile paths: no source, a 20 KB path, 100 filters, orig, oversized sides → 400")
    func hostilePaths() throws {
        #expect(Self.message("300x200/")?.contains("no source") == true)
        #expect(Self.message("origx200/https://example.com/a.jpg")?.contains("orig") == true)
        #expect(Self.message("99999x200/https://example.com/a.jpg") != nil)
        #expect(Self.message("https://" + String(repeating: "a", count: 20_000))?.contains("longer") == true)
        let many = Array(repeating: "grayscale()", count: 100).joined(separator: ":")
        #expect(Self.message("filters:\(many)/https://example.com/a.jpg")?.contains("at most 64 filters") == true)
        for path in ["", "/", "//", "/unsafe", "unsafe/300x200/a"] {
            #expect(throws: ProxyError.self, "\(path)") { try ThumborURL(path: path, server: Self.server) }
        }
    }

    @Test("libthumbor's signature: padded base64url of HMAC-SHA1 of everything after it, under any key")
    func signatures() throws {
        let path = "300x200/smart/filters:quality(80)/example.com/a.jpg"
        // Python's hmac and base64 (libthumbor's code) give this for the key below.
        let expected = "tKSGD6Wx1oBFREq3jfsEdjwbRRY="
        #expect(ThumborURL.signature(path: path, key: Array("my-security-key".utf8)) == expected)
        let url = try ThumborURL(path: "/\(expected)/\(path)", server: Self.server)
        #expect(url.isSigned(by: [Array("other".utf8), Array("my-security-key".utf8)]))
        #expect(!url.isSigned(by: [Array("other".utf8)]))
        let tampered = try ThumborURL(
            path: "/\(expected)/\(path.replacingOccurrences(of: "80", with: "81"))", server: Self.server)
        #expect(!tampered.isSigned(by: [Array("my-security-key".utf8)]))
    }

    @Test("meta/ answers thumbor's JSON: the source's size and frames, the crop, resize and flips, the target")
    func meta() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/a.jpg", .ok(try Fixtures.jpeg(width: 800, height: 600), contentType: "image/jpeg"))
            try await withProxy(setup: .live, { $0.thumbor = ThumborConfiguration(path: "/thumbor") }) { client in
                let response = try await client.execute(
                    uri: "/thumbor/unsafe/meta/-300x200/left/top/\(origin.url("/a.jpg"))", method: .get)
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json; charset=utf-8")
                let json = try response.json()
                let thumbor = try #require(json["thumbor"] as? [String: Any])
                let source = try #require(thumbor["source"] as? [String: Any])
                #expect(source["width"] as? Int == 800 && source["height"] as? Int == 600)
                #expect(source["frameCount"] as? Int == 1)
                let operations = try #require(thumbor["operations"] as? [[String: Any]])
                #expect(operations.map { $0["type"] as? String } == ["crop", "resize", "flip_horizontally"])
                // The crop keeps the top of the source (aligned top) at the box's aspect ratio, 3:2.
                #expect(operations[0]["top"] as? Int == 0 && operations[0]["bottom"] as? Int == 533)
                #expect(operations[1]["width"] as? Int == 300 && operations[1]["height"] as? Int == 200)
                let target = try #require(thumbor["target"] as? [String: Any])
                #expect(target["width"] as? Int == 300 && target["height"] as? Int == 200)
            }
        }
    }

    @Test("unsafe/ only when unsigned requests are allowed; a signed URL with a thumbor key; a tampered one 403")
    func unsafeAndSigned() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/a.jpg", .ok(try Fixtures.jpeg(width: 400, height: 300), contentType: "image/jpeg"))
            let path = "100x100/\(origin.url("/a.jpg"))"
            let signature = ThumborURL.signature(path: path, key: Array("key".utf8))
            try await withProxy(
                setup: .live,
                {
                    var thumbor = ThumborConfiguration(path: "/t")
                    thumbor.keys = [Array("key".utf8)]
                    $0.thumbor = thumbor
                    $0.allowsUnsigned = false
                    $0.secrets = [Array("img secret".utf8)]
                }
            ) { client in
                let signed = try await client.execute(uri: "/t/\(signature)/\(path)", method: .get)
                #expect(signed.status == .ok)
                #expect(try Fixtures.decode(signed.body).width == 100)
                #expect(signed.headers[.cacheControl]?.contains("immutable") == true)
                let unsafe = try await client.execute(uri: "/t/unsafe/\(path)", method: .get)
                #expect(unsafe.status == .forbidden)
                let tampered = try await client.execute(
                    uri: "/t/\(signature)/101x100/\(origin.url("/a.jpg"))", method: .get)
                #expect(tampered.status == .forbidden)
            }
            try await withProxy(setup: .live, { $0.thumbor = ThumborConfiguration(path: "/t") }) { client in
                let unsafe = try await client.execute(uri: "/t/unsafe/\(path)", method: .get)
                #expect(unsafe.status == .ok)
            }
        }
    }
}
