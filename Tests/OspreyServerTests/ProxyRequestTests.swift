import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// `/img`: every parameter, the formats, and the HTTP caching headers.
@Suite struct ProxyRequestTests {
    @Test func resizesConvertsAndCachesTheResult() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg(), contentType: "image/jpeg"))
            try await withProxy { client in
                let uri = imageURI([("url", origin.url("/photo.jpg")), ("w", "100")])
                let first = try await client.execute(uri: uri, method: .get)
                #expect(first.status == .ok)
                #expect(first.headers[.contentType] == "image/jpeg")
                #expect(first.headers[.contentLength] == String(first.body.readableBytes))
                #expect(first.headers[.cacheControl] == "public, max-age=31536000")
                #expect(first.headers[.vary] == nil)
                let image = try Fixtures.decode(first.body)
                #expect((image.width, image.height) == (100, 75))
                let etag = try #require(first.headers[.eTag])

                // The same render again comes from the result cache: same bytes, same ETag, no new fetch.
                let second = try await client.execute(uri: uri, method: .get)
                #expect(second.status == .ok)
                #expect(second.body == first.body)
                #expect(second.headers[.eTag] == etag)
                // Another size of the same source is rendered from the cached source.
                let other = try await client.execute(
                    uri: imageURI([("url", origin.url("/photo.jpg")), ("h", "60")]), method: .get)
                #expect(try Fixtures.decode(other.body).height == 60)
                #expect(other.headers[.eTag] != etag)
                #expect(origin.requestCount("/photo.jpg") == 1)
            }
        }
    }

    @Test func fitsFormatsQualityAndBlur() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            try await withProxy { client in
                func get(_ parameters: [(String, String)]) async throws -> TestResponse {
                    let response = try await client.execute(
                        uri: imageURI([("url", origin.url("/photo.jpg"))] + parameters), method: .get)
                    #expect(response.status == .ok, "\(parameters)")
                    return response
                }
                let cover = try Fixtures.decode(try await get([("w", "100"), ("h", "100"), ("fit", "cover")]).body)
                #expect((cover.width, cover.height) == (100, 100))
                let fill = try Fixtures.decode(try await get([("w", "50"), ("h", "120"), ("fit", "fill")]).body)
                #expect((fill.width, fill.height) == (50, 120))
                let inside = try Fixtures.decode(try await get([("w", "100"), ("h", "100")]).body)
                #expect((inside.width, inside.height) == (100, 75))
                // Never enlarged.
                let large = try Fixtures.decode(try await get([("w", "2000")]).body)
                #expect((large.width, large.height) == (640, 480))

                for (format, mime) in [("png", "image/png"), ("webp", "image/webp"), ("gif", "image/gif")] {
                    let response = try await get([("w", "64"), ("format", format)])
                    #expect(response.headers[.contentType] == mime)
                    let image = try Fixtures.decode(response.body)
                    #expect(image.sourceFormat.name == format)
                    #expect(image.width == 64)
                }
                let low = try await get([("w", "300"), ("q", "10")]).body.readableBytes
                let high = try await get([("w", "300"), ("q", "95")]).body.readableBytes
                #expect(low * 2 < high)

                // Blur takes the detail out: neighbouring columns of a hard edge come closer.
                let sharp = try Fixtures.decode(try await get([("w", "200"), ("format", "png")]).body)
                let blurred = try Fixtures.decode(try await get([("w", "200"), ("format", "png"), ("blur", "8")]).body)
                #expect((blurred.width, blurred.height) == (sharp.width, sharp.height))
                #expect(blurred.pixels != sharp.pixels)
            }
        }
    }

    @Test func autoFormatFollowsAcceptAndVaries() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            try await withProxy { client in
                let uri = imageURI([("url", origin.url("/photo.jpg")), ("w", "80"), ("format", "auto")])
                let avif = try await client.execute(
                    uri: uri, method: .get, headers: [.accept: "image/avif,image/webp,image/*;q=0.8"])
                #expect(avif.headers[.contentType] == "image/avif")
                #expect(avif.headers[.vary] == "Accept")
                let decoded = try Fixtures.decode(avif.body)
                #expect(decoded.sourceFormat == .avif && decoded.width == 80)
                let webp = try await client.execute(
                    uri: uri, method: .get, headers: [.accept: "image/avif;q=0,image/webp,image/*;q=0.8"])
                #expect(webp.headers[.contentType] == "image/webp")
                #expect(webp.headers[.vary] == "Accept")
                let plain = try await client.execute(uri: uri, method: .get, headers: [.accept: "image/*,*/*;q=0.8"])
                #expect(plain.headers[.contentType] == "image/jpeg")
                #expect(plain.headers[.vary] == "Accept")
                let refused = try await client.execute(uri: uri, method: .get, headers: [.accept: "image/webp;q=0"])
                #expect(refused.headers[.contentType] == "image/jpeg")
                let none = try await client.execute(uri: uri, method: .get)
                #expect(none.headers[.contentType] == "image/jpeg")
                #expect(webp.headers[.eTag] != plain.headers[.eTag])
                #expect(avif.headers[.eTag] != webp.headers[.eTag])
                #expect(origin.requestCount("/photo.jpg") == 1)
            }
        }
    }

    @Test("format=auto follows the configured order: JPEG XL first by default, WebP before AVIF, or AVIF left out")
    func autoFormatFollowsTheConfiguredOrder() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            let orders: [([ImageFormat], String)] = [
                (ServerConfiguration(host: "127.0.0.1", port: 0).autoFormats, "image/jxl"),
                ([.webp, .avif], "image/webp"), ([.avif], "image/avif"), ([], "image/jpeg"),
            ]
            for (order, expected) in orders {
                try await withProxy({ $0.autoFormats = order }) { client in
                    let uri = imageURI([("url", origin.url("/photo.jpg")), ("w", "80"), ("format", "auto")])
                    let response = try await client.execute(
                        uri: uri, method: .get, headers: [.accept: "image/jxl,image/avif,image/webp,*/*"])
                    #expect(response.headers[.contentType] == expected, "\(order)")
                }
            }
        }
    }

    @Test func animationsStayAnimatedUnlessAFrameIsAskedFor() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/anim.gif", .ok(try Fixtures.animatedGIF()))
            try await withProxy { client in
                func get(_ parameters: [(String, String)]) async throws -> TestResponse {
                    try await client.execute(
                        uri: imageURI([("url", origin.url("/anim.gif"))] + parameters), method: .get)
                }
                let gif = try Fixtures.decode(try await get([("w", "20")]).body)
                #expect(gif.frames.count == 3)
                #expect(gif.width == 20)
                #expect(gif.frames.map(\.duration) == Array(repeating: .milliseconds(100), count: 3))
                let webp = try await get([("format", "webp")])
                #expect(try Fixtures.decode(webp.body).frames.count == 3)
                // format=auto answers in a format that animates, and keeps every frame and its duration.
                for (accept, type) in [
                    ("image/jxl", "image/jxl"), ("image/avif", "image/avif"), ("image/webp", "image/webp"),
                ] {
                    let auto = try await client.execute(
                        uri: imageURI([("url", origin.url("/anim.gif")), ("format", "auto")]), method: .get,
                        headers: [.accept: accept])
                    #expect(auto.headers[.contentType] == type)
                    let decoded = try Fixtures.decode(auto.body)
                    #expect(decoded.frames.count == 3, "\(type)")
                    #expect(decoded.frames.map(\.duration) == Array(repeating: .milliseconds(100), count: 3), "\(type)")
                }
                // A still format takes the first frame; frame=N any other.
                let jpeg = try Fixtures.decode(try await get([("format", "png")]).body)
                #expect(jpeg.frames.count == 1)
                #expect(Fixtures.isClose(Array(jpeg.pixels.row(0).prefix(3)), to: Fixtures.frameColours[0]))
                let second = try Fixtures.decode(try await get([("frame", "1"), ("format", "png")]).body)
                #expect(second.frames.count == 1)
                #expect(Fixtures.isClose(Array(second.pixels.row(0).prefix(3)), to: Fixtures.frameColours[1]))
                let stillGIF = try Fixtures.decode(try await get([("frame", "2")]).body)
                #expect(stillGIF.frames.count == 1)
                let outOfRange = try await get([("frame", "7")])
                #expect(outOfRange.status == .badRequest)
                #expect((try outOfRange.json()["error"] as? String)?.contains("frame") == true)
            }
        }
    }

    @Test("output has no EXIF or XMP by default; keep_copyright=1 keeps those fields, strip=0 all of them")
    func metadata() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/tagged.jpg", .ok(try TaggedImages.jpeg(), contentType: "image/jpeg"))
            try await withProxy(setup: .live) { client in
                func kept(_ parameters: [(String, String)]) async throws -> ImageMetadata {
                    let response = try await client.execute(
                        uri: imageURI([("url", origin.url("/tagged.jpg"))] + parameters), method: .get)
                    #expect(response.status == .ok, "\(parameters)")
                    return ImageMetadata(embeddedIn: Array(buffer: response.body))
                }
                for format in ["jpeg", "png", "webp"] {
                    #expect(try await kept([("format", format)]).isEmpty, "\(format)")
                    #expect(try await kept([("format", format), ("strip", "1")]).isEmpty, "\(format)")
                    let copyright = try await kept([("format", format), ("keep_copyright", "1")])
                    #expect(TaggedImages.ifd0Tags(try #require(copyright.exif)) == [0x013B, 0x8298], "\(format)")
                    let all = try await kept([("format", format), ("strip", "0")])
                    let tags = TaggedImages.ifd0Tags(try #require(all.exif))
                    #expect(tags == [0x010F, 0x0112, 0x013B, 0x8298, 0x8825], "\(format)")
                    #expect(String(decoding: try #require(all.xmp), as: UTF8.self).contains("tiff:Orientation=\"1\""))
                }
                #expect(origin.requestCount("/tagged.jpg") == 1)
            }
        }
    }

    @Test("a Display P3 source is served in sRGB without a profile", .requiresTestData)
    func convertsToSRGB() async throws {
        let source = try TestData.bytes("valid/colour/P3-sRGB-color-bars.jpg")
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/p3.jpg", .ok(source, contentType: "image/jpeg"))
            try await withProxy(setup: .live) { client in
                let response = try await client.execute(
                    uri: imageURI([("url", origin.url("/p3.jpg")), ("format", "png")]), method: .get)
                #expect(response.status == .ok)
                let body = Array(buffer: response.body)
                #expect(ColorProfile(embeddedIn: body) == nil)
                #expect(try ImageDecoder.decode(body).pixels == ImageDecoder.decode(source).pixels)
            }
        }
    }

    @Test("a coder registered with the server's registry serves its format: a PPM source resized, format=ppm out")
    func registeredCoder() async throws {
        let coders = ImageCoderRegistry()
        coders.register(PortablePixmapCoder() as any ImageDecoding)
        coders.register(PortablePixmapCoder() as any ImageEncoding)
        let ppm = Array("P6\n40 20\n255\n".utf8) + [UInt8](repeating: 200, count: 40 * 20 * 3)
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/a.ppm", .ok(ppm, contentType: "image/x-portable-pixmap"))
            let source = ("url", origin.url("/a.ppm"))
            try await withProxy(setup: .live, { $0.coders = coders }) { client in
                let png = try await client.execute(
                    uri: imageURI([source, ("w", "10"), ("format", "png")]), method: .get)
                #expect(png.status == .ok)
                #expect(png.headers[.contentType] == "image/png")
                let decoded = try Fixtures.decode(png.body)
                #expect((decoded.width, decoded.height) == (10, 5))
                #expect(decoded.pixels.row(0).allSatisfy { $0 == 200 })

                let out = try await client.execute(
                    uri: imageURI([source, ("w", "20"), ("format", "ppm")]), method: .get)
                #expect(out.status == .ok)
                #expect(out.headers[.contentType] == "image/x-portable-pixmap")
                let body = Array(buffer: out.body)
                #expect(body.starts(with: Array("P6\n20 10\n255\n".utf8)))
                let expectedCount = "P6\n20 10\n255\n".utf8.count + 600  // 20 × 10 × 3
                #expect(body.count == expectedCount)
                // No format: the source's, which a registered encoder writes.
                let same = try await client.execute(uri: imageURI([source, ("w", "8")]), method: .get)
                #expect(same.headers[.contentType] == "image/x-portable-pixmap")

                let refused = try await client.execute(uri: imageURI([source, ("format", "tiff")]), method: .get)
                #expect(refused.status == .badRequest)
                #expect(
                    (try refused.json()["error"] as? String)
                        == "'format' must be jpeg, png, gif, webp, avif, jxl, ppm, auto or best")
            }
            // The default registry knows neither: the source is unsupported, the format unknown.
            try await withProxy(setup: .live) { client in
                let source = try await client.execute(uri: imageURI([source, ("format", "png")]), method: .get)
                #expect(source.status == .unsupportedMediaType)
                let format = try await client.execute(
                    uri: imageURI([("url", origin.url("/b.png")), ("format", "ppm")]), method: .get)
                #expect(format.status == .badRequest)
            }
        }
    }

    @Test func invalidParametersAre400() async throws {
        try await withProxy({ $0.maxOutputPixels = 10_000 }) { client in
            let source = "https://example.com/a.jpg"
            let cases: [[(String, String)]] = [
                [],
                [("w", "10")],
                [("url", "")],
                [("url", "not a url")],
                [("url", "file:///etc/passwd")],
                [("url", "ftp://example.com/a.jpg")],
                [("url", "/relative.jpg")],
                [("url", source), ("size", "10")],
                [("url", source), ("w", "0")],
                [("url", source), ("w", "abc")],
                [("url", source), ("w", "16385")],
                [("url", source), ("h", "-4")],
                [("url", source), ("w", "10"), ("w", "20")],
                [("url", source), ("w", "10"), ("fit", "cover")],
                [("url", source), ("fit", "stretch")],
                [("url", source), ("format", "bmp")],
                [("url", source), ("q", "0")],
                [("url", source), ("q", "101")],
                [("url", source), ("blur", "0")],
                [("url", source), ("blur", "nan")],
                [("url", source), ("frame", "-1")],
                [("url", source), ("strip", "2")],
                [("url", source), ("keep_copyright", "yes")],
                [("url", source), ("w", "200"), ("h", "200")],  // 40,000 pixels > 10,000
            ]
            for parameters in cases {
                let response = try await client.execute(uri: imageURI(parameters), method: .get)
                #expect(response.status == .badRequest, "\(parameters)")
                #expect(response.headers[.contentType] == "application/json; charset=utf-8")
                #expect(response.headers[.cacheControl] == "no-store")
                let body = try response.json()
                #expect(body["status"] as? Int == 400)
                #expect((body["error"] as? String)?.isEmpty == false)
            }
            let badEscape = try await client.execute(uri: "/img?url=%zz", method: .get)
            #expect(badEscape.status == .badRequest)
        }
    }

    @Test func etagAnswers304AndHeadSendsNoBody() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            try await withProxy(setup: .live) { client in
                let uri = imageURI([("url", origin.url("/photo.jpg")), ("w", "120")])
                let full = try await client.execute(uri: uri, method: .get)
                let etag = try #require(full.headers[.eTag])
                #expect(etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count == 34)

                let notModified = try await client.execute(uri: uri, method: .get, headers: [.ifNoneMatch: etag])
                #expect(notModified.status == .notModified)
                #expect(notModified.body.readableBytes == 0)
                #expect(notModified.headers[.eTag] == etag)
                let listed = try await client.execute(
                    uri: uri, method: .get, headers: [.ifNoneMatch: "\"other\", W/\(etag)"])
                #expect(listed.status == .notModified)
                let changed = try await client.execute(uri: uri, method: .get, headers: [.ifNoneMatch: "\"other\""])
                #expect(changed.status == .ok)
                #expect(changed.body == full.body)

                let head = try await client.execute(uri: uri, method: .head)
                #expect(head.status == .ok)
                #expect(head.body.readableBytes == 0)
                #expect(head.headers[.contentLength] == String(full.body.readableBytes))
                #expect(head.headers[.contentType] == "image/jpeg")
                #expect(head.headers[.eTag] == etag)
                #expect(origin.requestCount("/photo.jpg") == 1)
            }
        }
    }

    @Test("20 concurrent requests for 10 sizes × 2 formats of one cold source: one origin fetch, 20 encodes")
    func manyVariantsOfOneSourceShareItsFetch() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg(width: 1200, height: 900)))
            try await withProxy { client in
                let variants = stride(from: 60, through: 510, by: 50).flatMap { width in
                    ["jpeg", "webp"].map { (width, $0) }
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (width, format) in variants {
                        group.addTask {
                            let uri = imageURI([
                                ("url", origin.url("/photo.jpg")), ("w", "\(width)"), ("format", format),
                            ])
                            let response = try await client.execute(uri: uri, method: .get)
                            #expect(response.status == .ok, "\(String(buffer: response.body))")
                            #expect(response.headers[.contentType] == "image/\(format)")
                            #expect(try Fixtures.decode(response.body).width == width)
                        }
                    }
                    try await group.waitForAll()
                }
                #expect(origin.requestCount("/photo.jpg") == 1)
                let text = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                #expect(text.contains("osprey_pipeline_encodes 20"))
                // Each size decoded at most once, whatever the timing; with the download shared, usually once in all.
                let decodes = text.split(separator: "\n").first { $0.hasPrefix("osprey_pipeline_decodes ") }
                let count = decodes.flatMap { Double($0.split(separator: " ").last ?? "") } ?? .infinity
                #expect(count >= 1 && count <= 10)
            }
        }
    }

    @Test func healthAndMetricsReport() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            try await withProxy { client in
                let uri = imageURI([("url", origin.url("/photo.jpg")), ("w", "50")])
                let first = try await client.execute(uri: uri, method: .get)
                _ = try await client.execute(uri: uri, method: .get)
                _ = try await client.execute(uri: imageURI([("w", "1")]), method: .get)

                let health = try await client.execute(uri: "/health", method: .get)
                #expect(health.status == .ok)
                let body = try health.json()
                #expect(body["status"] as? String == "ok")
                #expect(body["version"] as? String == OspreyVersion.current)
                let cache = try #require(body["cache"] as? [String: Int])
                #expect(cache["resultsInMemory"] == 1)
                #expect(cache["resultsInMemoryBytes"] == first.body.readableBytes)

                let metrics = try await client.execute(uri: "/metrics", method: .get)
                #expect(metrics.headers[.contentType]?.hasPrefix("text/plain") == true)
                let text = String(buffer: metrics.body)
                // Two images and the health check; this request is counted once it is answered.
                #expect(text.contains(#"osprey_http_requests_total{status="200"} 3"#))
                #expect(text.contains(#"osprey_http_requests_total{status="400"} 1"#))
                #expect(text.contains(#"osprey_cache_hits_total{level="origin"} 1"#))
                #expect(text.contains(#"osprey_cache_hits_total{level="result_memory"} 1"#))
                #expect(text.contains("osprey_served_bytes_total \(2 * first.body.readableBytes)"))
                #expect(text.contains("osprey_render_duration_seconds_count 1"))
                #expect(text.contains("osprey_requests_in_flight"))
                #expect(text.contains("osprey_download_duration_seconds"))
            }
        }
    }

    @Test func requestIDsAreSentBack() async throws {
        try await withProxy { client in
            let generated = try await client.execute(uri: "/health", method: .get)
            let id = try #require(generated.headers[.xRequestID])
            #expect(id.count == 16)
            let kept = try await client.execute(uri: "/health", method: .get, headers: [.xRequestID: "abc-123"])
            #expect(kept.headers[.xRequestID] == "abc-123")
            let replaced = try await client.execute(
                uri: "/health", method: .get, headers: [.xRequestID: "no spaces; allowed"])
            #expect(replaced.headers[.xRequestID]?.count == 16)
        }
    }
}
