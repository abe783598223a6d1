import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyTesting
import Synchronization
import Testing

@testable import OspreyServer

/// Signing for real deployments: several secrets (rotation), and `exp` (410 after it, covered by the signature).
@Suite struct ProxySigningTests {
    static let new = Array("the new secret, first in the list".utf8)
    static let old = Array("the old secret, still accepted".utf8)

    /// A wall clock a test sets.
    final class Wall: Sendable {
        private let time = Mutex(UnixTime(seconds: 1_800_000_000))
        var now: UnixTime { time.withLock { $0 } }
        func advance(by seconds: Double) { time.withLock { $0 = UnixTime(seconds: $0.seconds + seconds) } }
    }

    @Test("with two secrets, URLs signed by either are served; by another, or by the old one alone, refused")
    func rotation() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            let parameters = [("url", origin.url("/photo.jpg")), ("w", "90")]
            let byNew = try #require(URLSigner(secrets: [Self.new])).signedPath("/img", parameters: parameters)
            let byOld = try #require(URLSigner(secrets: [Self.old])).signedPath("/img", parameters: parameters)
            let byOther = URLSigner(secret: Array("somebody else's".utf8)).signedPath("/img", parameters: parameters)
            // What the rotated signer makes is the new secret's signature.
            #expect(
                try #require(URLSigner(secrets: [Self.new, Self.old])).signedPath("/img", parameters: parameters)
                    == byNew)
            try await withProxy({
                $0.secrets = [Self.new, Self.old]
                $0.allowsUnsigned = false
            }) { client in
                let newOnBoth = try await status(of: byNew, from: client)
                #expect(newOnBoth == .ok)
                let oldOnBoth = try await status(of: byOld, from: client)
                #expect(oldOnBoth == .ok)
                let otherOnBoth = try await status(of: byOther, from: client)
                #expect(otherOnBoth == .forbidden)
            }
            // Once the old secret is dropped, its URLs stop working.
            try await withProxy({
                $0.secrets = [Self.new]
                $0.allowsUnsigned = false
            }) { client in
                let newOnNew = try await status(of: byNew, from: client)
                #expect(newOnNew == .ok)
                let oldOnNew = try await status(of: byOld, from: client)
                #expect(oldOnNew == .forbidden)
            }
        }
    }

    @Test("exp: served before it with a max-age that ends there, 410 from it (even from the cache), never unsigned")
    func expiry() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            let wall = Wall()
            let signer = URLSigner(secret: Self.new)
            let expires = Int(wall.now.seconds) + 600
            let parameters = [("url", origin.url("/photo.jpg")), ("w", "90"), ("exp", String(expires))]
            let signed = signer.signedPath("/img", parameters: parameters)
            try await withProxy({
                $0.secret = Self.new
                $0.allowsUnsigned = false
                $0.now = { wall.now }
            }) { client in
                // Before exp: served, and no cache in front may keep it longer than the 600 s left.
                let first = try await client.execute(uri: signed, method: .get)
                #expect(first.status == .ok)
                #expect(first.headers[.cacheControl] == "public, max-age=600, immutable")
                wall.advance(by: 599)
                let again = try await client.execute(uri: signed, method: .get)
                #expect(again.status == .ok)
                #expect(again.headers[.cacheControl] == "public, max-age=1, immutable")

                // From exp on: 410, though the render is in memory and the query was checked before.
                wall.advance(by: 1)
                let gone = try await client.execute(uri: signed, method: .get)
                #expect(gone.status == .gone)
                #expect(try gone.json()["error"] as? String == "the URL has expired")

                // A later exp written over the signed one is a signature mismatch, not a renewal.
                let extended = signed.replacingOccurrences(of: "exp=\(expires)", with: "exp=\(expires + 3600)")
                let extendedStatus = try await status(of: extended, from: client)
                #expect(extendedStatus == .forbidden)
                // exp must be a Unix time in seconds.
                let badParameters = [("url", origin.url("/photo.jpg")), ("exp", "tomorrow")]
                let bad = signer.signedPath("/img", parameters: badParameters)
                let badStatus = try await status(of: bad, from: client)
                #expect(badStatus == .badRequest)
                #expect(origin.requestCount("/photo.jpg") == 1)
            }
            // Unsigned requests allowed: an exp still counts, and a past one is still refused.
            try await withProxy({ $0.now = { wall.now } }) { client in
                let past = imageURI([("url", origin.url("/photo.jpg")), ("exp", String(expires))])
                let pastStatus = try await status(of: past, from: client)
                #expect(pastStatus == .gone)
            }
        }
    }

    /// The status `client` gets for `uri`.
    func status(of uri: String, from client: any TestClientProtocol) async throws -> HTTPResponse.Status {
        try await client.execute(uri: uri, method: .get).status
    }

    @Test("check refuses what the server would, with its message; signedPath escapes as the canonical form does")
    func checkAndSignedPath() throws {
        #expect(throws: Never.self) { try ImageQuery.check([("url", "https://example.com/a.jpg"), ("w", "300")]) }
        #expect { try ImageQuery.check([("url", "https://example.com/a.jpg"), ("width", "300")]) } throws: { error in
            (error as? InvalidImageQuery)?.message == "unknown parameter 'width'"
        }
        #expect { try ImageQuery.check([("url", "ftp://example.com/a.jpg")]) } throws: { error in
            (error as? InvalidImageQuery)?.message == "'url' must be an absolute http or https URL"
        }
        let signer = URLSigner(secret: Self.new)
        let path = signer.signedPath("/img", parameters: [("url", "https://example.com/a b.jpg?x=1"), ("w", "30")])
        #expect(path.hasPrefix("/img?url=https%3A%2F%2Fexample.com%2Fa%20b.jpg%3Fx%3D1&w=30&sig="))
        let sig = String(path.split(separator: "=").last ?? "")
        #expect(
            signer.isValid(sig, path: "/img", parameters: [("w", "30"), ("url", "https://example.com/a b.jpg?x=1")]))
        #expect(URLSigner(secrets: []) == nil)
    }
}
