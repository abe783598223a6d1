import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Synchronization
import Testing

@testable import OspreyServer

/// `GET /info`: the JSON document, its parameters, its signature, HEAD and conditional requests, the GPS switch, and
/// one decode shared with `/img` variants of the same source.
@Suite struct InfoEndpointTests {
    static func infoURI(_ parameters: [(String, String)]) -> String {
        "/info?" + imageURI(parameters).dropFirst("/img?".count)
    }

    /// A 1200 × 800 JPEG carrying a camera's EXIF with a GPS position.
    static func photo() throws -> [UInt8] {
        var image = try ImageDecoder.decode(try Fixtures.jpeg(width: 1200, height: 800))
        image.metadata = ImageMetadata(exif: SyntheticEXIF.photo(littleEndian: false))
        var options = EncodingOptions()
        options.metadata = .all
        return try ImageEncoder.encode(image, as: .jpeg, options: options)
    }

    @Test func describesAnImage() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            let bytes = try Self.photo()
            origin.route("/photo.jpg", .ok(bytes, contentType: "image/jpeg"))
            try await withProxy { client in
                let response = try await client.execute(
                    uri: Self.infoURI([("url", origin.url("/photo.jpg"))]), method: .get)
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json; charset=utf-8")
                let info = try response.json()
                #expect(info["format"] as? String == "jpeg")
                #expect(info["contentType"] as? String == "image/jpeg")
                #expect(info["bytes"] as? Int == bytes.count)
                #expect(info["width"] as? Int == 1200 && info["height"] as? Int == 800)
                #expect(info["frames"] as? Int == 1 && info["orientation"] as? Int == 1)
                #expect(info["alpha"] as? Bool == false && info["bitDepth"] as? Int == 8)
                let exif = try #require(info["exif"] as? [String: Any])
                #expect(exif["make"] as? String == "Osprey Optics" && exif["iso"] as? Int == 400)
                #expect(exif["gps"] == nil, "GPS is shown only with --info-gps")
                // 4 × 3 components: 4 + 2 × 12 characters.
                #expect((info["blurHash"] as? String)?.count == 28)
                #expect((info["thumbHash"] as? String)?.isEmpty == false)
                #expect((info["averageColor"] as? String)?.count == 7)
                #expect((info["perceptualHash"] as? String)?.count == 16)
                let colours = try #require(info["dominantColors"] as? [[String: Any]])
                #expect((1...5).contains(colours.count))
                let total = colours.compactMap { $0["weight"] as? Double }.reduce(0, +)
                #expect(abs(total - 1) < 0.001)

                let custom = try await client.execute(
                    uri: Self.infoURI([("url", origin.url("/photo.jpg")), ("bh", "3:2"), ("colors", "2")]),
                    method: .get)
                #expect((try custom.json()["blurHash"] as? String)?.count == 4 + 2 * 6)
                #expect((try custom.json()["dominantColors"] as? [Any])?.count ?? 0 <= 2)
                #expect(origin.requestCount("/photo.jpg") == 1)
            }
            try await withProxy({ $0.infoIncludesGPS = true }) { client in
                let response = try await client.execute(
                    uri: Self.infoURI([("url", origin.url("/photo.jpg"))]), method: .get)
                let gps = try #require((try response.json()["exif"] as? [String: Any])?["gps"] as? [String: Any])
                #expect(abs((gps["latitude"] as? Double ?? 0) - 48.856700) < 1e-5)
                #expect(abs((gps["longitude"] as? Double ?? 0) + 2.294467) < 1e-5)
            }
        }
    }

    @Test func refusesBadQueries() async throws {
        try await withProxy { client in
            for (query, fragment) in [
                ([("bh", "4:3")], "'url'"),
                ([("url", "http://example.com/a.jpg"), ("w", "100")], "unknown parameter 'w'"),
                ([("url", "http://example.com/a.jpg"), ("bh", "0:3")], "'bh'"),
                ([("url", "http://example.com/a.jpg"), ("bh", "4")], "'bh'"),
                ([("url", "http://example.com/a.jpg"), ("colors", "17")], "'colors'"),
                ([("url", "ftp://example.com/a.jpg")], "'url'"),
            ] {
                let response = try await client.execute(uri: Self.infoURI(query), method: .get)
                #expect(response.status == .badRequest, "\(query)")
                #expect((try response.json()["error"] as? String)?.contains(fragment) == true, "\(query)")
            }
        }
    }

    @Test func isSignedLikeImg() async throws {
        let secret = Array("a test secret of some length".utf8)
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            let parameters = [("url", origin.url("/photo.jpg"))]
            let sig = URLSigner(secret: secret).signature(path: "/info", parameters: parameters)
            let imgSig = URLSigner(secret: secret).signature(path: "/img", parameters: parameters)
            try await withProxy({
                $0.secret = secret
                $0.allowsUnsigned = false
            }) { client in
                let signed = try await client.execute(uri: Self.infoURI(parameters + [("sig", sig)]), method: .get)
                #expect(signed.status == .ok)
                #expect(signed.headers[.cacheControl] == "public, max-age=31536000, immutable")
                let unsigned = try await client.execute(uri: Self.infoURI(parameters), method: .get)
                #expect(unsigned.status == .forbidden)
                // A signature for /img does not open /info.
                let other = try await client.execute(uri: Self.infoURI(parameters + [("sig", imgSig)]), method: .get)
                #expect(other.status == .forbidden)
            }
        }
    }

    @Test func answersHeadAndConditionalRequests() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            try await withProxy { client in
                let uri = Self.infoURI([("url", origin.url("/photo.jpg"))])
                let get = try await client.execute(uri: uri, method: .get)
                let etag = try #require(get.headers[.eTag])
                let head = try await client.execute(uri: uri, method: .head)
                #expect(head.status == .ok && head.body.readableBytes == 0)
                #expect(head.headers[.eTag] == etag)
                #expect(head.headers[.contentLength] == String(get.body.readableBytes))
                var headers = HTTPFields()
                headers[.ifNoneMatch] = etag
                let conditional = try await client.execute(uri: uri, method: .get, headers: headers)
                #expect(conditional.status == .notModified && conditional.body.readableBytes == 0)
            }
        }
    }

    @Test func hostileSourcesAreFourHundreds() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            let jpeg = try Fixtures.jpeg()
            origin.route("/truncated.jpg", .ok(Array(jpeg.prefix(jpeg.count / 3)), contentType: "image/jpeg"))
            origin.route("/text.jpg", .ok(Array("not an image".utf8), contentType: "image/jpeg"))
            origin.route("/huge.webp", .ok(SyntheticImages.webpLosslessHeader(width: 16384, height: 16384)))
            try await withProxy({ $0.maxSourcePixels = 10_000_000 }) { client in
                for (path, status) in [("/truncated.jpg", 422), ("/text.jpg", 415), ("/huge.webp", 413)] {
                    let response = try await client.execute(
                        uri: Self.infoURI([("url", origin.url(path))]), method: .get)
                    #expect(response.status.code == status, "\(path)")
                    #expect(try response.json()["status"] as? Int == status)
                }
            }
        }
    }

    @Test(
        "one /info and nine /img variants of one cold source: one fetch, one decode",
        arguments: [false, true])
    func sharesTheDecode(concurrently: Bool) async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            // Asked at once: the origin answers once all ten loads wait for the download (so that none finds the
            // source already on disk), and they are held where they decode until all ten are there, each having joined
            // the shared decode before its download, whatever the timing of the requests.
            let gate = OriginGate()
            let barrier = DecodeBarrier(count: concurrently ? 10 : 0, gate: gate)
            let photo = try Fixtures.jpeg(width: 1600, height: 1200)
            origin.route("/photo.jpg", .ok(photo, contentType: "image/jpeg").held(by: gate))
            if !concurrently { gate.open() }
            let source = origin.url("/photo.jpg")
            let variants = [64, 128, 200, 320, 480, 640, 800, 1024, 1200].map {
                imageURI([("url", source), ("w", String($0))])
            }
            let info = Self.infoURI([("url", source)])
            // Ten renders of a debug build on a machine the whole suite keeps busy can outlast the test client's 15 s of
            // silence, which this test is not about.
            try await withProxy(setup: .live, { $0.stageObserver = barrier.observer }) { client in
                let port = try #require(client.port)
                @Sendable func get(_ uri: String) async throws -> HTTPResponse.Status {
                    let connection = TestClient(
                        host: "127.0.0.1", port: port, configuration: .init(timeout: .seconds(120)))
                    connection.connect()
                    let response = try await connection.execute(TestClient.Request(uri, method: .get))
                    try await connection.shutdown()
                    return response.status
                }
                var statuses: [HTTPResponse.Status] = []
                if concurrently {
                    // A connection each: one connection answers one request at a time.
                    statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                        for uri in [info] + variants { group.addTask { try await get(uri) } }
                        return try await group.reduce(into: []) { $0.append($1) }
                    }
                } else {
                    // The variants first, the largest first: its decode, kept in memory, serves the smaller variants and
                    // the /info after them.
                    for uri in variants.reversed() + [info] { statuses.append(try await get(uri)) }
                }
                #expect(statuses.count == 10 && statuses.allSatisfy { $0 == .ok }, "\(statuses)")
                #expect(origin.requestCount("/photo.jpg") == 1)
                let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                #expect(metrics.contains("osprey_pipeline_decodes 1.0\n"), "\(metrics)")
            }
        }
    }
}

/// Opens `gate` once `count` loads have reached their download, and holds the loads that reach the decode until
/// `count` of them have (nothing with 0).
final class DecodeBarrier: Sendable {
    let count: Int
    let gate: OriginGate
    private let downloads = Mutex(0)
    private let state = Mutex<(arrived: Int, held: [CheckedContinuation<Void, Never>])>((0, []))

    init(count: Int, gate: OriginGate) {
        self.count = count
        self.gate = gate
    }

    var observer: @Sendable (ImageManager.Stage, URL) async -> Void {
        { [self] stage, _ in
            guard count > 0 else { return }
            if stage == .download {
                if downloads.withLock({
                    $0 += 1; return $0
                }) == count {
                    gate.open()
                }
                return
            }
            guard stage == .decode else { return }
            await withCheckedContinuation { continuation in
                let released = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                    state.arrived += 1
                    state.held.append(continuation)
                    guard state.arrived >= count else { return [] }
                    defer { state.held = [] }
                    return state.held
                }
                for held in released { held.resume() }
            }
        }
    }
}
