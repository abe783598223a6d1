import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Osprey
import OspreyCodecs
import OspreyTesting
import Testing

@testable import OspreyServer

/// One rendition, one cache entry: the same output asked through `/img`, an imgproxy URL and a thumbor URL is one
/// variant (its key is made of the operations, not of the URL's text): one origin fetch, one decode, one encode, the
/// same ETag and bytes.
@Suite struct URLStyleSharingTests {
    @Test(
        "a 300×300 fit asked three ways (four URLs): one fetch, one decode, one encode, one ETag",
        arguments: [false, true])
    func oneRendition(concurrently: Bool) async throws {
        try await withOriginServer(testDataDirectory: nil) { origin in
            origin.route("/photo.jpg", .ok(try Fixtures.jpeg(width: 1200, height: 900), contentType: "image/jpeg"))
            let source = origin.url("/photo.jpg")
            // Inside 300×300, at quality 75: /img's default fit, imgproxy's fit, thumbor's fit-in.
            let uris = [
                imageURI([("url", source), ("w", "300"), ("h", "300"), ("q", "75")]),
                "/insecure/rs:fit:300:300/q:75/plain/\(source)",
                "/t/unsafe/fit-in/300x300/filters:quality(75)/\(source)",
                "/insecure/w:300/h:300/rt:fit/q:75/\(Base64URL.encode(Array(source.utf8)))",
            ]
            try await withProxy(
                setup: .live,
                {
                    $0.imgproxy = ImgproxyConfiguration(path: "/")
                    $0.thumbor = ThumborConfiguration(path: "/t")
                }
            ) { client in
                var responses: [TestResponse] = []
                if concurrently {
                    responses = try await withThrowingTaskGroup(of: TestResponse.self) { group in
                        for uri in uris { group.addTask { try await client.execute(uri: uri, method: .get) } }
                        return try await group.reduce(into: []) { $0.append($1) }
                    }
                } else {
                    for uri in uris { responses.append(try await client.execute(uri: uri, method: .get)) }
                }
                for response in responses {
                    #expect(response.status == .ok)
                    #expect(response.headers[.eTag] == responses[0].headers[.eTag])
                    #expect(response.body == responses[0].body)
                    let image = try Fixtures.decode(response.body)
                    #expect((image.width, image.height) == (300, 225))
                }
                #expect(origin.requestCount("/photo.jpg") == 1)
                let metrics = String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
                #expect(metrics.contains("osprey_pipeline_encodes 1.0\n"), "\(metrics)")
                #expect(metrics.contains("osprey_pipeline_decodes 1.0\n"))
            }
        }
    }
}
