import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyTesting
import Testing

@testable import OspreyServer

/// What a stranger sends must not take the proxy down or past its checks: each case over a real socket, followed by
/// a request showing that the process still answers.
@Suite struct ProxyHardeningTests {
    @Test(
        "a source with a port outside 1–65535 is a 400, in the default configuration, and the proxy lives on",
        arguments: [
            "http://127.0.0.1:99999/x.jpg", "http://93.184.216.34:99999/x.jpg", "http://93.184.216.34:0/x.jpg",
            "http://[2606:2800:220:1::]:65536/x.jpg", "http://example.com:99999999999999999999999/x.jpg",
        ])
    func anImpossiblePortIsABadRequest(source: String) async throws {
        try await withProxy(setup: .live, { $0.allowsPrivateNetworks = false }) { client in
            let response = try await client.execute(uri: imageURI([("url", source)]), method: .get)
            #expect(response.status == .badRequest)
            #expect(
                try response.json()["error"] as? String == "'url' is not valid: the port is not between 1 and 65535")
            let health = try await client.execute(uri: "/health", method: .get)
            #expect(health.status == .ok)
        }
    }

    @Test func aRedirectToAnImpossiblePortIsABadGatewayAndTheProxyLivesOn() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/hop.jpg", .redirect(to: "http://127.0.0.1:99999/x.jpg"))
            try await withProxy(setup: .live) { client in
                let response = try await client.execute(
                    uri: imageURI([("url", origin.url("/hop.jpg"))]), method: .get)
                #expect(response.status == .badGateway)
                let health = try await client.execute(uri: "/health", method: .get)
                #expect(health.status == .ok)
            }
            #expect(origin.requestCount("/hop.jpg") == 1)
        }
    }

    @Test(
        "a host with a control character, decoded or not, is refused before any host pattern or resolver sees it",
        arguments: [
            "http://evil.test%00.example.com/x.jpg", "http://evil.test%0d%0a.example.com/x.jpg",
            "http://evil.test%2F.example.com/x.jpg", "http://evil%20test.example.com/x.jpg",
        ])
    func aHostWithControlCharactersIsRefused(source: String) async throws {
        try await withProxy(
            setup: .live,
            {
                $0.allowedHosts = [HostPattern("*.example.com")!]
                // Were it resolved, it would reach this.
                $0.hostResolver = FixedResolver(table: ["evil.test": [IPAddress("93.184.216.34")!]])
            }
        ) { client in
            let response = try await client.execute(uri: imageURI([("url", source)]), method: .get)
            #expect(response.status == .badRequest)
            #expect(
                try response.json()["error"] as? String
                    == "'url' is not valid: the host is not a valid host name or IP address")
        }
    }

    @Test func theSourcePixelLimitCountsTheDeclaredSizeNotTheScaledOne() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            // 900 MP declared in a few bytes; with w=100 the JPEG would be decoded at 1/8, 3750 × 3750 = 14 MP.
            origin.route("/huge.jpg", .ok(SyntheticImages.jpegHeader(width: 30000, height: 30000)))
            try await withProxy(setup: .live) { client in
                let response = try await client.execute(
                    uri: imageURI([("url", origin.url("/huge.jpg")), ("w", "100")]), method: .get)
                #expect(response.status == .contentTooLarge)
                #expect(try response.json()["error"] as? String == "the source has more than 50000000 pixels")
            }
        }
    }

    @Test func hostPatternsNeverMatchWhatNoHostNameCanBe() {
        let pattern = HostPattern("*.example.com")!
        #expect(pattern.matches("a.example.com"))
        #expect(!pattern.matches("evil.test\u{0}.example.com"))
        #expect(!pattern.matches("evil.test/.example.com"))
        #expect(!HostPattern("example.com")!.matches("example.com\u{0}"))
    }
}
