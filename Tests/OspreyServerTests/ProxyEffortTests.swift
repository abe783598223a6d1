import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// `effort=`: the encoders' effort, a variant of its own, refused above the server's `maxEffort`.
@Suite struct ProxyEffortTests {
    @Test func effortIsAVariantAndHasACeiling() async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/t.png", .ok(try ProxyPerceptualQualityTests.texture(), contentType: "image/png"))
            try await withProxy({ $0.maxEffort = 5 }) { client in
                func get(_ effort: String?) async throws -> TestResponse {
                    let parameters = [("url", origin.url("/t.png")), ("format", "webp"), ("q", "80")]
                    return try await client.execute(
                        uri: imageURI(parameters + (effort.map { [("effort", $0)] } ?? [])), method: .get)
                }
                let (plain, fastest, highest) = (try await get(nil), try await get("1"), try await get("5"))
                for response in [plain, fastest, highest] { #expect(response.status == .ok) }
                // WebP's method 0 against its default 4 and method 3: other bytes, other variants.
                #expect(fastest.body != plain.body && fastest.body != highest.body)
                #expect(fastest.headers[.eTag] != plain.headers[.eTag])
                #expect(try ImageDecoder.decode(Array(fastest.body.readableBytesView)).width == 320)
                // Effort 7 is WebP's default method, but above this server's ceiling; 0 and 10 are outside the scale.
                for effort in ["6", "0", "10", "x"] {
                    let refused = try await get(effort)
                    #expect(refused.status == .badRequest, "effort=\(effort)")
                }
                #expect(String(buffer: try await get("6").body).contains("at most 5"))
                #expect(origin.requestCount("/t.png") == 1)
            }
        }
    }
}
