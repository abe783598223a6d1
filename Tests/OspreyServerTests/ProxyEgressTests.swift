import Foundation
import HTTPTypes
import HummingbirdTesting
import OspreyTesting
import Testing

@testable import Osprey
@testable import OspreyServer

/// The proxy's sources through a forward proxy (tinyproxy): what the operator configures (`http_proxy`, read by
/// `osprey serve`) reaches the downloader, and the source policy still decides first.
@Suite(.enabled(if: ForwardProxy.executable != nil || ForwardProxy.isRequired, "tinyproxy is not installed"))
struct ProxyEgressTests {
    @Test("/img fetches its source through the forward proxy; a refused source never reaches it")
    func sourcesGoThroughTheForwardProxy() async throws {
        try await withForwardProxy { forward in
            try await withOriginServer(testDataDirectory: nil) { origin in
                origin.route("/photo.jpg", .ok(try Fixtures.jpeg()))
                try await withProxy({
                    $0.proxies = try? EgressProxies(environment: ["http_proxy": forward.url])
                }) { client in
                    let response = try await client.execute(
                        uri: imageURI([("url", origin.url("/photo.jpg")), ("w", "32")]), method: .get)
                    #expect(response.status == .ok)
                    // Cloud metadata stays refused, proxy or not: nothing is asked of the proxy for it.
                    let refused = try await client.execute(
                        uri: imageURI([("url", "http://169.254.169.254/latest/meta-data/")]), method: .get)
                    #expect(refused.status == .forbidden)
                }
                #expect(forward.requestLines() == ["GET \(origin.url("/photo.jpg")) HTTP/1.1"])
                #expect(origin.requestCount("/photo.jpg") == 1)
            }
        }
    }
}
