import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// imgproxy's URLs: each option's forms (valid ones read, each invalid one a 400 naming it), the output sizes
/// imgproxy's documentation gives for its resizing types and factors (each row cites the sentence it checks), the
/// signature, and hostile paths.
@Suite struct ImgproxyURLTests {
    /// A server with imgproxy URLs at the root and unsigned requests allowed.
    static var server: ServerConfiguration {
        var configuration = ServerConfiguration()
        var imgproxy = ImgproxyConfiguration(path: "/")
        imgproxy.presets = ["sharp": ["sharpen:0.7", "q:90"], "small": ["rs:fit:50:50"]]
        configuration.imgproxy = imgproxy
        configuration.allowsUnsigned = true
        return configuration
    }

    static func parse(_ options: String, source: String = "/plain/https://example.com/a.jpg") throws -> RenderParameters
    {
        try ImgproxyURL(path: "/insecure/" + options + source, configuration: server.imgproxy!, server: server)
            .parameters
    }

    static func message(_ options: String, source: String = "/plain/https://example.com/a.jpg") -> String? {
        do {
            _ = try parse(options, source: source)
            return nil
        } catch let error as ProxyError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    /// Valid forms of every option, long and short names alike.
    static let validForms: [String] = [
        "resize:fill:300:200:1:1", "rs:fill:300:200:0:1:so:0:10", "s:100:100:1:1:nowe", "rs:fit", "rs::300",
        "size:300:200:0", "s:300", "resizing_type:fill-down",
        "rt:force", "rt:auto", "width:300", "w:0", "height:200", "h:200", "min-width:100", "mw:100", "min-height:100",
        "mh:100", "zoom:1.5", "z:0.5:2", "dpr:2", "enlarge:1", "el:t", "extend:1:no:10:20", "ex:true", "ex:0",
        "extend_aspect_ratio:1:ce", "extend_ar:1", "exar:false", "gravity:sm", "g:noea:10:0.5", "g:fp:0.3:0.7",
        "g:ce", "crop:100:50", "c:0.5:0.5:so", "c:100:100:fp:0.5:0.5", "trim:10", "t:10:ff00ff:1:0", "t::abc",
        "padding:10",
        "pd:1:2:3:4", "pd::5", "auto_rotate:1", "ar:t", "rotate:90", "rot:-90", "rot:450", "flip:1:0", "fl::1",
        "background:ff0000", "bg:255:0:128", "bg:", "blur:2", "bl:0", "sharpen:0.5", "sh:1", "pixelate:8", "pix:2",
        "strip_metadata:0", "sm:1", "keep_copyright:1", "kcr:f", "strip_color_profile:1", "scp:t", "quality:70", "q:0",
        "format_quality:webp:60:avif:50", "fq:jpeg:80", "max_bytes:20000", "mb:1", "format:webp", "f:png", "ext:jpg",
        "page:1", "pg:0", "skip_processing:gif:png", "skp:webp", "raw:1", "cachebuster:abc", "cb:1",
        "expires:4102444800", "exp:0", "filename:cat", "fn:Y2F0:1", "return_attachment:1", "att:0", "preset:sharp",
        "pr:sharp:small", "brightness:10", "br:-20", "contrast:1.2", "co:0.8", "saturation:1.5", "sa:0", "a:10:1.1:0.9",
    ]

    @Test("every option's valid forms are read, long and short names alike", arguments: validForms)
    func validForm(option: String) throws {
        #expect(throws: Never.self) { try Self.parse(option) }
    }

    /// Invalid forms, each with the option name the 400 must carry.
    static let invalidForms: [(String, String)] = [
        ("rs:cover", "rs"), ("resize:fill:1:2:1:1:ce:0:0:9", "resize"), ("s:a", "s"), ("rt:", "rt"), ("w:-1", "w"),
        ("width:0x10", "width"), ("h:1e2", "h"), ("mw:+5", "mw"), ("z:0", "z"), ("zoom:1:2:3", "zoom"),
        ("dpr:nan", "dpr"),
        ("el:yes", "el"), ("ex:1:up", "ex"), ("exar:2", "exar"), ("g:north", "g"), ("g:sm:1:2", "g"), ("g:fp:2:0", "g"),
        ("c:-1", "c"), ("c:10:10:sm", "c"), ("t:500", "t"), ("t:10:zz", "t"), ("pd:a", "pd"),
        ("pd:1:2:3:4:5", "pd"), ("ar:0", "ar"), ("rot:45", "rot"), ("fl:2", "fl"), ("bg:300:0:0", "bg"),
        ("bg:1:2", "bg"), ("bl:-1", "bl"), ("sh:x", "sh"), ("pix:1.5", "pix"), ("sm:maybe", "sm"), ("scp:0", "scp"),
        ("q:101", "q"), ("fq:webp", "fq"), ("fq:bmp:80", "fq"), ("mb:-5", "mb"), ("f:bmp", "format"),
        ("f:best", "format"),
        ("pg:-1", "pg"), ("skp:doc", "skip_processing"), ("raw:2", "raw"), ("cb:a:b", "cb"), ("exp:x", "exp"),
        ("fn:%ZZ", "fn"), ("fn:!!:1", "fn"), ("att:2", "att"), ("pr:nope", "nope"), ("br:300", "br"), ("co:-1", "co"),
        ("wm:0.5", "wm"), ("ra:lanczos3", "ra"), ("obj:face", "obj"),
    ]

    @Test("each invalid form is a 400 naming the option", arguments: invalidForms)
    func invalidForm(option: String, name: String) throws {
        let message = try #require(Self.message(option), "\(option) was accepted")
        #expect(message.contains("'\(name)'"), "\(option): \(message)")
    }

    @Test("options become the shared render parameters")
    func parameters() throws {
        var parameters = try Self.parse("rs:fill:300:200/g:soea:10:5/q:70")
        #expect(parameters.width == 300 && parameters.height == 200 && parameters.fit == .clip)
        #expect(parameters.gravity == .bottomRight && parameters.gravityOffsetX == 10 && parameters.quality == 70)
        parameters = try Self.parse("rs:fill:300:200:1/dpr:2/pd:10")
        #expect(parameters.width == 600 && parameters.fit == .cover && parameters.padding?.top == 20)
        parameters = try Self.parse("pr:small/w:80")
        #expect(parameters.width == 80 && parameters.height == 50, "a later option wins over the preset's")
        parameters = try Self.parse("w:10", source: "/aHR0cHM6Ly9leGFtcGxlLmNvbS9hLmpwZw.webp")
        #expect(parameters.source.absoluteString == "https://example.com/a.jpg" && parameters.format == .encoded(.webp))
        parameters = try Self.parse("w:10", source: "/aHR0cHM6Ly9leGFt/cGxlLmNvbS9hLmpwZw")
        #expect(parameters.source.absoluteString == "https://example.com/a.jpg")
        parameters = try Self.parse("w:10", source: "/plain/https%3A%2F%2Fexample.com%2Fa%40b.jpg@png")
        #expect(
            parameters.source.absoluteString == "https://example.com/a@b.jpg" && parameters.format == .encoded(.png))
        parameters = try Self.parse("fn:Y2F0:1/att:1")
        #expect(parameters.contentDisposition(format: .webp) == "attachment; filename=\"cat.webp\"")
    }

    @Test("bad paths: malformed base64, no source, encrypted sources, a 10 KB segment, 1,000 options → 400 naming it")
    func hostilePaths() throws {
        #expect(Self.message("w:10", source: "/!!notbase64!!")?.contains("base64") == true)
        #expect(Self.message("w:10", source: "/a")?.contains("base64") == true)
        #expect(Self.message("w:10", source: "/enc/abcdef")?.contains("encrypted") == true)
        #expect(Self.message("w:10", source: "")?.contains("no source") == true)
        #expect(Self.message("w:10", source: "/plain/ftp://example.com/a.jpg")?.contains("'url'") == true)
        let long = "cb:" + String(repeating: "a", count: 10_240)
        #expect(Self.message(long)?.contains("10243 characters") == true)
        let many = Array(repeating: "q:80", count: 1_000).joined(separator: "/")
        #expect(Self.message(many)?.contains("at most 100 options") == true)
        var looping = Self.server
        looping.imgproxy?.presets = ["loop": ["pr:loop"]]
        #expect(throws: ProxyError.self) {
            try ImgproxyURL(
                path: "/x/pr:loop/plain/https://example.com/a.jpg", configuration: looping.imgproxy!, server: looping)
        }
        for path in ["", "/", "//", "/sig", "/sig/", "x/w:1/plain/a"] {
            #expect(throws: ProxyError.self, "\(path)") {
                try ImgproxyURL(path: path, configuration: Self.server.imgproxy!, server: Self.server)
            }
        }
    }

    @Test("the signature: HMAC-SHA256 of salt + path, unpadded base64url, any key pair, truncated when configured")
    func signatures() throws {
        let pair = try ImgproxyConfiguration.KeyPair(keyHex: "943b421c9eb07c83", saltHex: "520f986b998545b4")
        var configuration = ImgproxyConfiguration(path: "/")
        configuration.keys = [ImgproxyConfiguration.KeyPair(key: [1, 2, 3], salt: [4]), pair]
        let path = "/rs:fill:300:200/plain/https://example.com/a.jpg"
        let signature = ImgproxyURL.signature(path: path, key: pair.key, salt: pair.salt)
        func signed(_ signature: String, _ path: String, _ configuration: ImgproxyConfiguration) throws -> Bool {
            try ImgproxyURL(path: "/" + signature + path, configuration: configuration, server: Self.server)
                .isSigned(by: configuration)
        }
        #expect(try signed(signature, path, configuration))
        #expect(try !signed(signature, path.replacingOccurrences(of: "300", with: "301"), configuration))
        #expect(try !signed("insecure", path, configuration))
        #expect(try !signed(signature + "A", path, configuration))
        configuration.signatureSize = 8
        #expect(
            try signed(ImgproxyURL.signature(path: path, key: pair.key, salt: pair.salt, size: 8), path, configuration))
        #expect(try !signed(signature, path, configuration))
        #expect(throws: InvalidImageQuery.self) { try ImgproxyConfiguration.KeyPair(keyHex: "xyz", saltHex: "00") }
        #expect(throws: InvalidImageQuery.self) { try ImgproxyConfiguration.KeyPair(keyHex: "abc", saltHex: "00") }
    }

    @Test(
        "over a real socket, hostile imgproxy and thumbor paths are 400s with a JSON error naming the problem, never 5xx"
    )
    func hostileOverHTTP() async throws {
        let paths: [(String, String)] = [
            ("/insecure/w:10/!!notbase64!!", "base64"),
            (
                "/insecure/cb:" + String(repeating: "a", count: 10_240) + "/plain/https://example.com/a.jpg",
                "characters"
            ),
            (
                "/insecure/" + Array(repeating: "q:80", count: 1_000).joined(separator: "/")
                    + "/plain/https://example.com/a.jpg",
                "at most 100 options"
            ),
            ("/insecure/nope:1/plain/https://example.com/a.jpg", "unknown imgproxy option 'nope'"),
            ("/insecure/rs:fit:1:2:0:0:ce:0:0:1/plain/https://example.com/a.jpg", "'rs'"),
            ("/t/unsafe/300x200/filters:blur(2/https://example.com/a.jpg", "unbalanced"),
            ("/t/unsafe/300x200/filters:blur((2))/https://example.com/a.jpg", "nested"),
            ("/t/unsafe/300x200/filters:sepia()/https://example.com/a.jpg", "unknown thumbor filter 'sepia'"),
            ("/t/unsafe/300x200/filters:blur(2):/https://example.com/a.jpg", "end with ':'"),
        ]
        try await withProxy(
            setup: .live,
            {
                $0.imgproxy = ImgproxyConfiguration(path: "/")
                $0.thumbor = ThumborConfiguration(path: "/t")
            }
        ) { client in
            for (path, message) in paths {
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .badRequest, "\(path.prefix(80))")
                #expect((try response.json()["error"] as? String)?.contains(message) == true, "\(path.prefix(80))")
            }
        }
    }

    /// Rows of imgproxy's sizes on a 400×300 source: the options, the size, and the documentation's sentence.
    static let sizes: [(options: String, width: Int, height: Int, doc: String)] = [
        ("rs:fit:200:200", 200, 150, "fit: resizes the image while keeping aspect ratio to fit a given size"),
        (
            "rs:fill:200:200", 200, 200,
            "fill: resizes the image while keeping aspect ratio to fill a given size and crops projecting parts"
        ),
        (
            "rs:fill:800:400", 400, 300,
            "fill (no enlarge): a smaller source is not enlarged; only what projects is cropped"
        ),
        (
            "rs:fill-down:800:400", 400, 200,
            "fill-down: if the resized image is smaller than the requested size, imgproxy will crop the result to keep the requested aspect ratio"
        ),
        (
            "rs:fill:800:400:1", 800, 400,
            "enlarge: imgproxy will enlarge the image if it is smaller than the given size"
        ),
        ("rs:force:100:100", 100, 100, "force: resizes the image without keeping the aspect ratio"),
        (
            "rs:auto:200:100", 200, 100,
            "auto: if both source and resulting dimensions have the same orientation, imgproxy will use fill"
        ),
        ("rs:auto:100:200", 100, 75, "auto: Otherwise, it will use fit"),
        ("rs:fit:800:800", 400, 300, "enlarge (default false): the image is not enlarged"),
        ("rs:fit:800:800:1", 800, 600, "enlarge: imgproxy will enlarge the image if it is smaller than the given size"),
        (
            "w:200", 200, 150,
            "height 0: imgproxy will calculate resulting height using the defined width and source aspect ratio"
        ),
        ("h:150", 200, 150, "width 0: imgproxy will calculate width using the defined height and source aspect ratio"),
        ("rs:fit:100:100/mw:200", 200, 150, "min-width: Defines the minimum width of the resulting image"),
        ("rs:fit:100:100/mh:150", 200, 150, "min-height: Defines the minimum height of the resulting image"),
        (
            "rs:fill:100:100/mw:150", 100, 100,
            "min-width: When both width and min-width are set, the final image will be cropped according to width"
        ),
        ("w:100/z:2", 200, 150, "zoom: imgproxy will multiply the image dimensions according to these factors"),
        ("w:200/z:0.5:1", 100, 150, "zoom: %zoom_x:%zoom_y multiply the dimensions separately"),
        ("w:100/dpr:2", 200, 150, "dpr: imgproxy will multiply the image dimensions according to this factor"),
        (
            "rs:force:100:200/pd:10", 120, 220,
            "padding: if your resize dimensions were 100x200px and you applied the padding:10 option, then you will end up with an image with dimensions of 120x220px"
        ),
        (
            "rs:fit:500:500/ex:1", 500, 500,
            "extend: imgproxy will extend the image if it is smaller than the given size"
        ),
        (
            "rs:fit:200:100/exar:1", 200, 100,
            "extend_aspect_ratio: imgproxy will extend the image to the requested aspect ratio"
        ),
        (
            "c:200:100", 200, 100,
            "crop: When width or height is greater than or equal to 1, imgproxy treats it as an absolute value"
        ),
        ("c:0.5:0.5", 200, 150, "crop: When width or height is less than 1, imgproxy treats it as a relative value"),
        (
            "c:0:100", 400, 100,
            "crop: When width or height is set to 0, imgproxy will use the full width/height of the source image"
        ),
        ("rot:90/w:150", 150, 200, "rotate: the orientation and rotation apply before the size is reached"),
    ]

    @Test("the output sizes imgproxy's documentation gives, rendered over a real socket", arguments: sizes)
    func documentedSize(options: String, width: Int, height: Int, doc: String) async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/a.jpg", .ok(try Fixtures.jpeg(width: 400, height: 300), contentType: "image/jpeg"))
            try await withProxy(setup: .live, { $0.imgproxy = ImgproxyConfiguration(path: "/") }) { client in
                let response = try await client.execute(
                    uri: "/insecure/\(options)/plain/\(origin.url("/a.jpg"))", method: .get)
                #expect(response.status == .ok, "\(options): \(String(buffer: response.body))")
                let image = try Fixtures.decode(response.body)
                #expect((image.width, image.height) == (width, height), "\(options) — imgproxy's docs: \(doc)")
            }
        }
    }
}
