import Foundation
import Hummingbird
import HummingbirdTesting
import Osprey
import OspreyServer
import Testing

@Suite struct ApplicationTests {
    @Test func healthAnswersOverARealSocket() async throws {
        // Given the application bound to a free port
        let app = buildApplication(configuration: ServerConfiguration(host: "127.0.0.1", port: 0))
        // When /health is requested over HTTP
        try await app.test(.live) { client in
            try await client.execute(uri: "/health", method: .get) { response in
                // Then it answers 200 with the status and version as JSON
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
                let body = try JSONDecoder().decode([String: String].self, from: Data(response.body.readableBytesView))
                #expect(body == ["status": "ok", "version": OspreyVersion.current])
                #expect(response.headers[.server] == "osprey/\(OspreyVersion.current)")
            }
        }
    }

    @Test func unknownPathsAre404() async throws {
        let app = buildApplication(configuration: ServerConfiguration(port: 0))
        try await app.test(.router) { client in
            try await client.execute(uri: "/nope", method: .get) { response in
                #expect(response.status == .notFound)
            }
        }
    }
}
