import Foundation
import Hummingbird
import HummingbirdTesting
import Osprey
import OspreyServer
import Testing

@Suite struct ApplicationTests {
    @Test func healthAnswersOverARealSocket() async throws {
        // Given the application bound to a free port, when /health is requested over HTTP
        try await withProxy(setup: .live) { client in
            try await client.execute(uri: "/health", method: .get) { response in
                // Then it answers 200 with the status and version as JSON
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
                let body =
                    try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
                #expect(body?["status"] as? String == "ok")
                #expect(body?["version"] as? String == OspreyVersion.current)
                #expect(body?["requestsInFlight"] as? Int == 0)
                #expect(response.headers[.server] == "osprey/\(OspreyVersion.current)")
            }
        }
    }

    @Test("an unknown path is a 404, counted with the others and given a request id")
    func unknownPathsAre404() async throws {
        try await withProxy { client in
            try await client.execute(uri: "/nope", method: .get) { response in
                #expect(response.status == .notFound)
            }
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            #expect(String(buffer: metrics.body).contains(#"osprey_http_requests_total{status="404"} 1"#))
            #expect(metrics.headers[.init("X-Request-Id")!] != nil)
        }
    }
}
