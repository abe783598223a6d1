import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// `--fallback-image`: what a request gets when its source cannot be had, rendered as it asked; refusals of the
/// request itself stay errors.
@Suite struct ProxyFallbackTests {
    static func fallback(status: Int = 200) throws -> FallbackImage {
        try FallbackImage(bytes: try Fixtures.flatPNG(width: 50, height: 50), status: status)
    }

    @Test("a missing, broken or unreachable source gets the fallback, resized as asked, never cached")
    func sourceFailures() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/missing.jpg", .status(404))
            origin.route("/broken.jpg", .ok([0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3], contentType: "image/jpeg"))
            origin.route("/error.jpg", .status(500))
            let fallback = try Self.fallback()
            try await withProxy(setup: .live, { $0.fallbackImage = fallback }) { client in
                for path in ["/missing.jpg", "/broken.jpg", "/error.jpg"] {
                    let response = try await client.execute(
                        uri: imageURI([("url", origin.url(path)), ("w", "20"), ("format", "png")]), method: .get)
                    #expect(response.status == .ok, "\(path)")
                    #expect(response.headers[.cacheControl] == "no-store")
                    #expect(response.headers[.contentType] == "image/png")
                    #expect(try Fixtures.decode(response.body).width == 20, "\(path)")
                }
                // A request the proxy refuses itself is still refused.
                let bad = try await client.execute(
                    uri: imageURI([("url", origin.url("/x.jpg")), ("w", "0")]), method: .get)
                #expect(bad.status == .badRequest)
            }
        }
    }

    @Test("the fallback is sent with the status configured; a forbidden source is not a failed one")
    func statusAndForbidden() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/missing.jpg", .status(404))
            let fallback = try Self.fallback(status: 404)
            try await withProxy(
                setup: .live,
                {
                    $0.fallbackImage = fallback
                    $0.allowedHosts = [HostPattern("images.example.com")!]
                }
            ) { client in
                let forbidden = try await client.execute(
                    uri: imageURI([("url", origin.url("/missing.jpg"))]), method: .get)
                #expect(forbidden.status == .forbidden)
            }
            try await withProxy(setup: .live, { $0.fallbackImage = fallback }) { client in
                let missing = try await client.execute(
                    uri: imageURI([("url", origin.url("/missing.jpg"))]), method: .get)
                #expect(missing.status == .notFound)
                #expect(try Fixtures.decode(missing.body).width == 50)
            }
        }
    }

    @Test("a fallback must be an image, sent with an HTTP status")
    func validation() throws {
        #expect(throws: InvalidImageQuery.self) { try FallbackImage(bytes: Array("not an image".utf8)) }
        #expect(throws: InvalidImageQuery.self) {
            try FallbackImage(bytes: try Fixtures.flatPNG(width: 2, height: 2), status: 99)
        }
    }
}
