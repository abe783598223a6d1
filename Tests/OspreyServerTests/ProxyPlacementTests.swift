import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// Cropping and placement over a real socket: gravity, fp, crop, extend, pad, bg, rot, flip, sharpen, dpr. The
/// source is a 640×480 gradient: red grows left to right, green top to bottom.
@Suite struct ProxyPlacementTests {
    /// The pixel at (`x`, `y`) of `image` as RGBA.
    static func pixel(_ image: Image, _ x: Int, _ y: Int) throws -> [UInt8] {
        let pixels = try image.frames[0].pixels.converted(to: .rgba8)
        return Array(pixels.row(y)[(x * 4)..<(x * 4 + 4)])
    }

    /// Runs `body` with a client of a proxy whose origin serves the gradient at `source`.
    static func withGradient(
        _ body: @Sendable (_ client: any TestClientProtocol, _ source: String) async throws -> Void
    ) async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/gradient.jpg", .ok(try Fixtures.jpeg()))
            let source = origin.url("/gradient.jpg")
            try await withProxy(setup: .live) { client in try await body(client, source) }
        }
    }

    /// The decoded image `client` gets for `parameters` (with the source), after checking it is a 200.
    static func render(
        _ client: any TestClientProtocol, _ source: String, _ parameters: [(String, String)]
    ) async throws -> Image {
        let response = try await client.execute(uri: imageURI([("url", source)] + parameters), method: .get)
        #expect(response.status == .ok, "\(parameters)")
        return try Fixtures.decode(response.body)
    }

    @Test("crop takes a region of the source before resizing; gravity and fp place a cover crop")
    func cropGravityAndFocus() async throws {
        try await Self.withGradient { client, source in
            // The source's left half, resized: its right edge is the source's middle (red about 128).
            let left = try await Self.render(client, source, [("crop", "0:0:320:480"), ("w", "100")])
            #expect(left.width == 100 && left.height == 150)
            #expect((110...150).contains(try Self.pixel(left, 99, 75)[0]))
            // A square cover of the 4:3 source keeps its middle by default, the right with gravity=east, the left
            // with a focal point on the left edge.
            let centre = try await Self.render(client, source, [("w", "90"), ("h", "90"), ("fit", "cover")])
            let east = try await Self.render(
                client, source, [("w", "90"), ("h", "90"), ("fit", "cover"), ("gravity", "east")])
            let focused = try await Self.render(
                client, source, [("w", "90"), ("h", "90"), ("fit", "cover"), ("fp", "0:0.5")])
            #expect(east.width == 90 && east.height == 90 && focused.width == 90)
            let (centreRed, eastRed, focusedRed) = (
                try Self.pixel(centre, 0, 45)[0], try Self.pixel(east, 0, 45)[0], try Self.pixel(focused, 0, 45)[0]
            )
            #expect(
                focusedRed < 10 && centreRed > 20 && eastRed > centreRed + 20, "\(focusedRed) \(centreRed) \(eastRed)")
            // Short names are the long ones.
            let short = try await Self.render(
                client, source, [("w", "90"), ("h", "90"), ("fit", "cover"), ("gravity", "ea")])
            #expect(try Self.pixel(short, 0, 45)[0] == eastRed)
        }
    }

    @Test("gravity=smart puts a cover window on the busy subject, wherever it is; it needs fit=cover")
    func smartGravity() async throws {
        // A flat background with a busy, saturated disc near the right edge.
        let pixels = try PixelBuffer(
            width: 400, height: 200, format: .rgb8,
            bytes: (0..<200).flatMap { y in
                (0..<400).flatMap { x -> [UInt8] in
                    let (dx, dy) = (Double(x - 330), Double(y - 100))
                    guard (dx * dx + dy * dy).squareRoot() < 55 else { return [112, 112, 115] }
                    return (x / 3 + y / 3) % 2 == 0 ? [220, 60, 40] : [40, 180, 60]
                }
            })
        let png = try ImageEncoder.encode(Image(pixels: pixels), as: .png)
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/subject.png", .ok(png, contentType: "image/png"))
            let source = origin.url("/subject.png")
            try await withProxy(setup: .live) { client in
                let smart = try await Self.render(
                    client, source, [("w", "100"), ("h", "100"), ("fit", "cover"), ("gravity", "smart")])
                #expect(smart.width == 100 && smart.height == 100)
                // The disc's centre (330 of 400, in a 200-wide window at the right edge) is at x = 65 of 100.
                let centre = try Self.pixel(smart, 65, 50)
                #expect(centre[0] != centre[1], "\(centre)")
                // The centre crop (the source's 100...300) has only background there.
                let middle = try await Self.render(client, source, [("w", "100"), ("h", "100"), ("fit", "cover")])
                #expect(try Self.pixel(middle, 65, 50)[0...2].elementsEqual([112, 112, 115]))
                let refused = try await client.execute(
                    uri: imageURI([("url", source), ("w", "100"), ("gravity", "smart")]), method: .get)
                #expect(refused.status == .badRequest)
            }
        }
    }

    @Test("rot turns the result (w and h are its own), flip mirrors it, gravity follows the turned result")
    func rotateAndFlip() async throws {
        try await Self.withGradient { client, source in
            let turned = try await Self.render(client, source, [("w", "48"), ("rot", "90")])
            #expect(turned.width == 48 && turned.height == 64)
            // Turned clockwise, the source's bottom (green high) is on the left.
            #expect(try Self.pixel(turned, 0, 32)[1] > Self.pixel(turned, 47, 32)[1])
            let flipped = try await Self.render(client, source, [("w", "64"), ("flip", "h")])
            #expect(try Self.pixel(flipped, 0, 24)[0] > Self.pixel(flipped, 63, 24)[0])
            let both = try await Self.render(client, source, [("w", "64"), ("flip", "hv")])
            #expect(try Self.pixel(both, 0, 0)[1] > Self.pixel(both, 0, 47)[1])
            // gravity=north of a turned cover keeps the top of the result, which is the source's left (red low).
            let north = try await Self.render(
                client, source, [("w", "60"), ("h", "30"), ("fit", "cover"), ("rot", "90"), ("gravity", "north")])
            let south = try await Self.render(
                client, source, [("w", "60"), ("h", "30"), ("fit", "cover"), ("rot", "90"), ("gravity", "south")])
            #expect(north.width == 60 && north.height == 30)
            #expect(try Self.pixel(north, 30, 15)[0] + 20 < Self.pixel(south, 30, 15)[0])
        }
    }

    @Test("extend places the image on a w×h canvas by gravity; pad adds bands of bg; sharpen changes the pixels")
    func canvasAndSharpen() async throws {
        try await Self.withGradient { client, source in
            let extended = try await Self.render(
                client, source, [("w", "200"), ("h", "200"), ("extend", "1"), ("format", "png")])
            #expect(extended.width == 200 && extended.height == 200)
            #expect(try Self.pixel(extended, 100, 2)[3] == 0 && Self.pixel(extended, 100, 100)[3] == 255)
            let top = try await Self.render(
                client, source,
                [
                    ("w", "200"), ("h", "200"), ("extend", "1"), ("gravity", "north"), ("bg", "00ff00"),
                    ("format", "png"),
                ])
            #expect(try Self.pixel(top, 100, 2)[3] == 255 && Self.pixel(top, 100, 198) == [0, 255, 0, 255])

            let padded = try await Self.render(
                client, source, [("w", "100"), ("pad", "10:0:0:5"), ("bg", "ff0000"), ("format", "png")])
            #expect(padded.width == 105 && padded.height == 85)
            #expect(try Self.pixel(padded, 50, 3) == [255, 0, 0, 255])

            // bg alone is what JPEG flattens transparency onto: the extended canvas, red rather than white.
            let flattened = try await Self.render(
                client, source,
                [
                    ("w", "200"), ("h", "200"), ("extend", "1"), ("gravity", "north"), ("bg", "ff000000"),
                    ("format", "jpeg"),
                ])
            let corner = try Self.pixel(flattened, 100, 196)
            #expect(corner[0] > 200 && corner[1] < 40 && corner[2] < 40, "\(corner)")

            let plain = try await client.execute(uri: imageURI([("url", source), ("w", "100")]), method: .get)
            let sharp = try await client.execute(
                uri: imageURI([("url", source), ("w", "100"), ("sharpen", "1.5")]), method: .get)
            #expect(sharp.status == .ok)
            #expect(sharp.headers[.eTag] != plain.headers[.eTag])
        }
    }

    @Test("dpr multiplies the size, within the output pixel limit; w=100&dpr=2 is the render of w=200")
    func pixelRatio() async throws {
        try await Self.withGradient { client, source in
            let double = try await client.execute(
                uri: imageURI([("url", source), ("w", "100"), ("dpr", "2")]), method: .get)
            let wide = try await client.execute(uri: imageURI([("url", source), ("w", "200")]), method: .get)
            #expect(try Fixtures.decode(double.body).width == 200)
            #expect(double.headers[.eTag] == wide.headers[.eTag])
        }
        var parameters = try RenderParameters(
            query: "url=https%3A%2F%2Fexample.com%2Fa.jpg&w=3000&h=3000&dpr=2", maxOutputPixels: 4096 * 4096)
        #expect(parameters.width == 4096 && parameters.height == 4096)
        parameters = try RenderParameters(
            query: "url=https%3A%2F%2Fexample.com%2Fa.jpg&w=10000&dpr=4", maxOutputPixels: 4096 * 4096)
        #expect(parameters.width == RenderParameters.maximumSide)
    }

    /// Invalid queries, each naming first the parameter the error must name.
    static let invalidQueries: [String] = [
        "gravity=up&fit=cover&w=9&h=9", "fp=2:0&fit=cover&w=9&h=9", "fp=0.5&fit=cover&w=9&h=9", "crop=1:2:3",
        "crop=0:0:0:5", "crop=a:b:c:d", "extend=2", "extend=1&w=9", "pad=1:2", "pad=-1", "pad=5000", "bg=zzz",
        "bg=12345", "rot=45", "rot=360", "flip=x", "sharpen=0", "sharpen=11", "dpr=0.5", "dpr=5", "dpr=x",
        "gravity=north&fp=0:0&fit=cover&w=9&h=9", "gravity=north&w=9", "fp=0:0&w=9&h=9", "gravity=smart&w=9",
        "gravity=sm&fp=0:0&fit=cover&w=9&h=9",
    ]

    @Test("every invalid value is a 400 naming the parameter", arguments: invalidQueries)
    func invalidValues(query: String) async throws {
        let parameter = String(query.prefix { $0 != "=" })
        try await withProxy(setup: .live) { client in
            let response = try await client.execute(
                uri: "/img?url=https%3A%2F%2Fexample.com%2Fa.jpg&" + query, method: .get)
            #expect(response.status == .badRequest, "\(query)")
            #expect((try response.json()["error"] as? String)?.contains("'\(parameter)'") == true, "\(query)")
        }
    }
}

/// The canonical form of the placement parameters parses to itself (what the fuzz harness checks on arbitrary text).
@Suite struct PlacementCanonicalTests {
    @Test(arguments: [
        "w=90&h=60&fit=cover&gravity=soea&rot=270&flip=v&sharpen=0.7", "w=90&h=90&fit=cover&gravity=sm&rot=90",
        "w=90&h=60&fit=cover&fp=0.25:0.75&dpr=1.5", "crop=10:20:300:200&w=100&pad=4:3:2:1&bg=%23ff000080",
        "w=200&h=100&extend=1&gravity=north&bg=00ff00&blur=2", "w=50&pad=4000&dpr=4&bg=00ff00",
    ])
    func canonicalParsesToItself(query: String) throws {
        let source = "url=https%3A%2F%2Fexample.com%2Fa.jpg&"
        let parameters = try RenderParameters(query: source + query, maxOutputPixels: 4096 * 4096)
        let canonical = parameters.canonical.replacingOccurrences(of: "format=source", with: "")
            .split(separator: "&").filter { !$0.isEmpty }.joined(separator: "&")
        let again = try RenderParameters(
            query: source + canonical.replacingOccurrences(of: "#", with: "%23"), maxOutputPixels: 4096 * 4096)
        #expect(again.canonical == parameters.canonical)
    }
}
