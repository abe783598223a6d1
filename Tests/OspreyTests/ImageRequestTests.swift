import Foundation
import Osprey
import Testing

@Suite struct ImageRequestTests {
    @Test(
        "absolute http and https URLs are accepted",
        arguments: [
            "https://example.com/cat.jpg", "http://127.0.0.1:8080/a/b.png?size=2", "HTTPS://EXAMPLE.COM/x",
        ])
    func acceptsHTTPURLs(string: String) throws {
        let request = try ImageRequest(string: string)
        #expect(request.url.absoluteString == string)
    }

    @Test(
        "unloadable strings fail at once with the reason",
        arguments: [
            ("", OspreyError.InvalidURLReason.empty),
            ("/images/cat.jpg", .notAbsolute),
            ("cat.jpg", .notAbsolute),
            ("ftp://example.com/cat.jpg", .unsupportedScheme("ftp")),
            ("file:///etc/passwd", .unsupportedScheme("file")),
            ("http://", .missingHost),
            ("https:///cat.jpg", .missingHost),
        ])
    func refusesInvalidStrings(string: String, reason: OspreyError.InvalidURLReason) {
        #expect(throws: OspreyError.invalidURL(string, reason: reason)) { try ImageRequest(string: string) }
    }

    @Test func refusesGarbage() {
        // Foundation may read "not a url" as a relative reference or reject it outright: either way it never loads.
        #expect(throws: OspreyError.self) { try ImageRequest(string: "not a url at all") }
        #expect(throws: OspreyError.self) { try ImageRequest(string: "http://exa mple.com/ cat.jpg") }
    }

    @Test func refusesAnInvalidURLValue() throws {
        let url = try #require(URL(string: "data:image/png;base64,AAAA"))
        #expect(throws: OspreyError.invalidURL("data:image/png;base64,AAAA", reason: .unsupportedScheme("data"))) {
            try ImageRequest(url: url)
        }
    }

    @Test func errorsDescribeThemselves() {
        let error = OspreyError.invalidURL("ftp://x/y", reason: .unsupportedScheme("ftp"))
        #expect(
            error.description == "invalid URL 'ftp://x/y': unsupported scheme 'ftp' (only http and https are loaded)")
        #expect(error.shortDescription == "invalidURL")
    }
}
