import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyTesting
import Testing

@testable import OspreyServer

/// Signatures, allowed hosts, and the address checks against server-side request forgery.
@Suite struct ProxySecurityTests {
    static let secret = Array("a test secret of some length".utf8)

    @Test func signaturesAreCheckedAndSignedResponsesAreImmutable() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            let signer = URLSigner(secret: Self.secret)
            let parameters = [("url", origin.url("/photo.jpg")), ("w", "90")]
            let sig = signer.signature(path: "/img", parameters: parameters.map { ($0.0, $0.1) })
            try await withProxy({
                $0.secret = Self.secret
                $0.allowsUnsigned = false
            }) { client in
                let signed = try await client.execute(uri: imageURI(parameters + [("sig", sig)]), method: .get)
                #expect(signed.status == .ok)
                #expect(signed.headers[.cacheControl] == "public, max-age=31536000, immutable")
                // The order of the parameters does not matter.
                let reordered = try await client.execute(
                    uri: imageURI([("sig", sig), ("w", "90"), ("url", origin.url("/photo.jpg"))]), method: .get)
                #expect(reordered.status == .ok)

                let tampered = try await client.execute(
                    uri: imageURI([("url", origin.url("/photo.jpg")), ("w", "91"), ("sig", sig)]), method: .get)
                #expect(tampered.status == .forbidden)
                let added = try await client.execute(
                    uri: imageURI(parameters + [("blur", "2"), ("sig", sig)]), method: .get)
                #expect(added.status == .forbidden)
                let garbage = try await client.execute(uri: imageURI(parameters + [("sig", "!!!")]), method: .get)
                #expect(garbage.status == .forbidden)
                let missing = try await client.execute(uri: imageURI(parameters), method: .get)
                #expect(missing.status == .forbidden)
                #expect((try missing.json()["error"] as? String)?.contains("signed") == true)
                #expect(origin.requestCount("/photo.jpg") == 1)
            }
            // With unsigned requests allowed, a signature present is still checked.
            try await withProxy({ $0.secret = Self.secret }) { client in
                let unsigned = try await client.execute(uri: imageURI(parameters), method: .get)
                #expect(unsigned.status == .ok)
                #expect(unsigned.headers[.cacheControl] == "public, max-age=31536000")
                let wrong = try await client.execute(uri: imageURI(parameters + [("sig", "AAAA")]), method: .get)
                #expect(wrong.status == .forbidden)
            }
            // Without a secret, no signature can be valid.
            try await withProxy { client in
                let any = try await client.execute(uri: imageURI(parameters + [("sig", sig)]), method: .get)
                #expect(any.status == .forbidden)
            }
        }
    }

    @Test(arguments: [
        "http://127.0.0.1:9/a.jpg", "http://10.0.0.1/a.jpg", "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:9/a.jpg", "http://[::ffff:127.0.0.1]/a.jpg", "http://100.64.0.1/a.jpg", "http://0.0.0.0/a.jpg",
        "http://192.168.1.1/a.jpg", "http://[fe80::1]/a.jpg", "http://[::ffff:0:127.0.0.1]/a.jpg",
        "http://[64:ff9b::127.0.0.1]/a.jpg", "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/",
    ])
    func privateAddressesAreRefused(source: String) async throws {
        try await withProxy({ $0.allowsPrivateNetworks = false }) { client in
            let response = try await client.execute(uri: imageURI([("url", source)]), method: .get)
            #expect(response.status == .forbidden)
            let body = try response.json()
            #expect(body["error"] as? String == "the source is not allowed")
        }
    }

    @Test func loopbackByNameIsRefusedAndNothingReachesTheOrigin() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            let port = origin.port
            try await withProxy({
                $0.allowsPrivateNetworks = false
                // A public-looking name whose DNS answer is loopback.
                $0.hostResolver = FixedResolver(table: [
                    "images.example.com": [IPAddress("127.0.0.1")!],
                    "mixed.example.com": [IPAddress("93.184.216.34")!, IPAddress("127.0.0.1")!],
                ])
            }) { client in
                for host in ["images.example.com", "mixed.example.com"] {
                    let response = try await client.execute(
                        uri: imageURI([("url", "http://\(host):\(port)/photo.jpg")]), method: .get)
                    #expect(response.status == .forbidden, "\(host)")
                }
            }
            // `localhost` through the system's resolver.
            try await withProxy({ $0.allowsPrivateNetworks = false }) { client in
                let response = try await client.execute(
                    uri: imageURI([("url", "http://localhost:\(port)/photo.jpg")]), method: .get)
                #expect(response.status == .forbidden)
            }
            #expect(origin.requestCount() == 0)
            // The same name, allowed, is fetched from the address it resolved to.
            try await withProxy({
                $0.hostResolver = FixedResolver(table: ["images.example.com": [IPAddress("127.0.0.1")!]])
            }) { client in
                let response = try await client.execute(
                    uri: imageURI([("url", "http://images.example.com:\(port)/photo.jpg"), ("w", "10")]),
                    method: .get)
                #expect(response.status == .ok)
                #expect(origin.requests(to: "/photo.jpg").first?.header("Host") == "images.example.com:\(port)")
            }
        }
    }

    @Test func aRedirectToLoopbackIsRefused() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            try await withOriginServer(testDataDirectory: nil) { inside in
                inside.route("/secret.jpg", .ok(try Fixtures.jpeg()))
                origin.route("/photo.jpg", .redirect(to: inside.url("/secret.jpg")))
                origin.route("/fine.jpg", .redirect(to: origin.url("/real.jpg")))
                origin.route("/real.jpg", .ok(try Fixtures.jpeg()))
                try await withProxy({
                    $0.allowsPrivateNetworks = false
                    // The origin is allowed by its exact address and port; the other server on loopback is not.
                    $0.allowedSourceAddresses = [SourceAddress("127.0.0.1:\(origin.port)")!]
                }) { client in
                    let refused = try await client.execute(
                        uri: imageURI([("url", origin.url("/photo.jpg"))]), method: .get)
                    #expect(refused.status == .forbidden)
                    #expect(origin.requestCount("/photo.jpg") == 1)
                    #expect(inside.requestCount() == 0)
                    // A redirect within what is allowed is followed.
                    let followed = try await client.execute(
                        uri: imageURI([("url", origin.url("/fine.jpg")), ("w", "10")]), method: .get)
                    #expect(followed.status == .ok)
                }
            }
        }
    }

    @Test func allowedHostsAreExactOrSubdomainPatterns() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
            let port = origin.port
            let loopback = [IPAddress("127.0.0.1")!]
            try await withProxy({
                $0.allowedHosts = [HostPattern("img.example.com")!, HostPattern("*.cdn.example.org")!]
                $0.hostResolver = FixedResolver(table: [
                    "img.example.com": loopback, "a.cdn.example.org": loopback, "cdn.example.org": loopback,
                    "evil.com": loopback, "img.example.com.evil.com": loopback,
                ])
            }) { client in
                for (host, allowed) in [
                    ("img.example.com", true), ("a.cdn.example.org", true), ("cdn.example.org", false),
                    ("evil.com", false), ("img.example.com.evil.com", false), ("127.0.0.1", false),
                ] {
                    let response = try await client.execute(
                        uri: imageURI([("url", "http://\(host):\(port)/photo.jpg"), ("w", "8")]), method: .get)
                    #expect(response.status == (allowed ? .ok : .forbidden), "\(host)")
                }
            }
        }
    }

    @Test func cloudMetadataStaysRefusedWithPrivateNetworksAllowed() async throws {
        try await withProxy({ $0.allowsPrivateNetworks = true }) { client in
            let response = try await client.execute(
                uri: imageURI([("url", "http://169.254.169.254/latest/meta-data/")]), method: .get)
            #expect(response.status == .forbidden)
        }
    }

    @Test func errorBodiesLeakNoAddressesOrPaths() async throws {
        // A port nothing listens on (the discard port; a port freed by an origin of this test could be taken by
        // another test's origin meanwhile, which answered 404 in one run): the library's error names the address; the
        // client's does not.
        try await withProxy { client in
            let response = try await client.execute(
                uri: imageURI([("url", "http://127.0.0.1:9/x.jpg")]), method: .get)
            #expect(response.status == .badGateway)
            let text = String(buffer: response.body)
            #expect(text == #"{"error":"the source could not be fetched","status":502}"#)
        }
    }
}
