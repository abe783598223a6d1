import Foundation
import Osprey
import Testing

@Suite struct ImageRequestTests {
    @Test(
        "absolute http and https URLs are accepted",
        arguments: [
            "https://example.com/cat.jpg", "http://127.0.0.1:8080/a/b.png?size=2", "HTTPS://EXAMPLE.COM/x",
            "http://[::1]:8080/a.jpg", "http://[::ffff:1.2.3.4]/a.jpg", "http://a_b.example.com:1/x",
            "http://example.com:65535/x", "http://example.com:/x", "http://user:secret@example.com/x",
        ])
    func acceptsHTTPURLs(string: String) throws {
        let request = try ImageRequest(string: string)
        #expect(request.url.absoluteString == string)
    }

    @Test(
        "unloadable strings fail at once with the reason",
        arguments: [
            ("", ImageError.InvalidURLReason.empty),
            ("/images/cat.jpg", .notAbsolute),
            ("cat.jpg", .notAbsolute),
            ("ftp://example.com/cat.jpg", .unsupportedScheme("ftp")),
            ("file:///etc/passwd", .unsupportedScheme("file")),
            ("http://", .missingHost),
            ("https:///cat.jpg", .missingHost),
            ("http://:80/x.jpg", .missingHost),
            // Ports a socket cannot have: the HTTP client traps on them.
            ("http://127.0.0.1:99999/x.jpg", .invalidPort),
            ("http://127.0.0.1:65536/x.jpg", .invalidPort),
            ("http://127.0.0.1:0/x.jpg", .invalidPort),
            ("http://[::1]:70000/x.jpg", .invalidPort),
            ("http://example.com:99999999999999999999999/x.jpg", .invalidPort),
            ("http://user@example.com:123456/x.jpg", .invalidPort),
            // Hosts that are no host name once decoded: a NUL would pass `*.example.com` and resolve as `evil.test`.
            ("http://evil.test%00.example.com/x.jpg", .invalidHost),
            ("http://evil.test%0a.example.com/x.jpg", .invalidHost),
            ("http://evil.test%7f.example.com/x.jpg", .invalidHost),
            ("http://exa%20mple.com/x.jpg", .invalidHost),
            ("http://a%2Fb.example.com/x.jpg", .invalidHost),
            ("http://a%40b.example.com/x.jpg", .invalidHost),
            ("http://%E2%80%8B.example.com/x.jpg", .invalidHost),
            ("http://[fe80::1%25eth0]/x.jpg", .invalidHost),
        ])
    func refusesInvalidStrings(string: String, reason: ImageError.InvalidURLReason) {
        #expect(
            Self.invalidURL { () throws(ImageError) in try ImageRequest(string: string) } == InvalidURL(string, reason))
    }

    /// The URL and reason of the ``ImageError/invalidURL(_:reason:)`` `make` throws; `nil` for anything else.
    static func invalidURL(_ make: () throws(ImageError) -> ImageRequest) -> InvalidURL? {
        do {
            _ = try make()
            return nil
        } catch {
            guard case .invalidURL(let url, let reason) = error else { return nil }
            return InvalidURL(url, reason)
        }
    }

    struct InvalidURL: Equatable {
        let url: String
        let reason: ImageError.InvalidURLReason
        init(_ url: String, _ reason: ImageError.InvalidURLReason) { (self.url, self.reason) = (url, reason) }
    }

    @Test func refusesGarbage() {
        // Foundation may read "not a url" as a relative reference or reject it outright: either way it never loads.
        #expect(Self.invalidURL { () throws(ImageError) in try ImageRequest(string: "not a url at all") } != nil)
        #expect(
            Self.invalidURL { () throws(ImageError) in try ImageRequest(string: "http://exa mple.com/ cat.jpg") } != nil
        )
    }

    @Test func refusesAnInvalidURLValue() throws {
        let url = try #require(URL(string: "data:image/png;base64,AAAA"))
        #expect(
            Self.invalidURL { () throws(ImageError) in try ImageRequest(url: url) }
                == InvalidURL("data:image/png;base64,AAAA", .unsupportedScheme("data")))
    }

    @Test func aURLValueIsCheckedAsAStringIs() throws {
        let url = try #require(URL(string: "http://127.0.0.1:99999/x.jpg"))
        #expect(
            Self.invalidURL { () throws(ImageError) in try ImageRequest(url: url) }
                == InvalidURL(url.absoluteString, .invalidPort))
        // The request and the validation alone throw the one error type.
        #expect(
            Self.invalidURL { () throws(ImageError) in
                try ImageRequest.validate(url)
                return try ImageRequest(string: "http://example.com/")
            } == InvalidURL(url.absoluteString, .invalidPort))
    }

    @Test func errorsDescribeThemselves() {
        let error = ImageError.invalidURL("ftp://x/y", reason: .unsupportedScheme("ftp"))
        #expect(
            error.description == "invalid URL 'ftp://x/y': unsupported scheme 'ftp' (only http and https are loaded)")
        #expect(error.shortDescription == "invalidURL")
    }
}
