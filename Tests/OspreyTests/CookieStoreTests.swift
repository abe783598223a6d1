import Foundation
import Synchronization
import Testing

@testable import Osprey

/// RFC 6265's storage and matching rules, with an injected clock.
@Suite("CookieStore")
struct CookieStoreTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// A date the test moves by hand.
    final class ManualDate: Sendable {
        private let date: Mutex<Date>
        init(_ date: Date) { self.date = Mutex(date) }
        var now: Date { date.withLock { $0 } }
        func advance(by seconds: TimeInterval) { date.withLock { $0.addTimeInterval(seconds) } }
    }

    func store(at clock: ManualDate) -> CookieStore {
        CookieStore { clock.now }
    }

    func url(_ string: String) -> URL { URL(string: string)! }

    @Test func aHostOnlyCookieGoesToItsHostAloneAndADomainCookieToSubdomainsToo() {
        let clock = ManualDate(start)
        let cookies = store(at: clock)
        cookies.store(["host=1"], from: url("https://img.example.com/a.jpg"))
        cookies.store(["wide=2; Domain=.example.com"], from: url("https://img.example.com/a.jpg"))
        #expect(cookies.cookies(for: url("https://img.example.com/b.jpg")).map(\.name).sorted() == ["host", "wide"])
        #expect(cookies.cookies(for: url("https://cdn.example.com/b.jpg")).map(\.name) == ["wide"])
        #expect(cookies.cookies(for: url("https://example.com/b.jpg")).map(\.name) == ["wide"])
        #expect(cookies.cookies(for: url("https://badexample.com/b.jpg")).isEmpty)
    }

    @Test func aDomainTheHostIsNotWithinIsRefused() {
        let cookies = store(at: ManualDate(start))
        cookies.store(
            ["evil=1; Domain=other.com", "also=1; Domain=mg.example.com"], from: url("https://img.example.com/"))
        #expect(cookies.allCookies.isEmpty)
    }

    @Test func pathsMatchByDirectoryAndTheDefaultPathIsTheRequestsDirectory() {
        let cookies = store(at: ManualDate(start))
        cookies.store(["deep=1"], from: url("http://example.com/photos/2026/a.jpg"))
        cookies.store(["root=1; Path=/"], from: url("http://example.com/photos/2026/a.jpg"))
        cookies.store(["exact=1; Path=/photos"], from: url("http://example.com/"))
        #expect(cookies.allCookies.first { $0.name == "deep" }?.path == "/photos/2026")
        // Most specific path first
        #expect(
            cookies.cookies(for: url("http://example.com/photos/2026/b.jpg")).map(\.name) == ["deep", "exact", "root"])
        #expect(cookies.cookies(for: url("http://example.com/photos/x.jpg")).map(\.name) == ["exact", "root"])
        // "/photos" does not match "/photosphere"
        #expect(cookies.cookies(for: url("http://example.com/photosphere/x.jpg")).map(\.name) == ["root"])
    }

    @Test func secureCookiesGoOverHTTPSOnly() {
        let cookies = store(at: ManualDate(start))
        cookies.store(["s=1; Secure", "p=1"], from: url("https://example.com/"))
        #expect(cookies.cookies(for: url("https://example.com/")).map(\.name).sorted() == ["p", "s"])
        #expect(cookies.cookies(for: url("http://example.com/")).map(\.name) == ["p"])
    }

    @Test func cookiesExpireByMaxAgeWhichWinsOverExpires() {
        let clock = ManualDate(start)
        let cookies = store(at: clock)
        cookies.store(
            [
                "short=1; Max-Age=60; Expires=Wed, 01 Jan 2100 00:00:00 GMT",
                "dated=1; Expires=Wed, 01 Jan 2100 00:00:00 GMT",
                "session=1",
            ], from: url("https://example.com/"))
        #expect(cookies.cookies(for: url("https://example.com/")).count == 3)
        clock.advance(by: 61)
        #expect(cookies.cookies(for: url("https://example.com/")).map(\.name).sorted() == ["dated", "session"])
    }

    @Test func anOriginDeletesACookieWithAnExpiryInThePastOrAZeroMaxAge() {
        let cookies = store(at: ManualDate(start))
        cookies.store(["a=1", "b=1"], from: url("https://example.com/"))
        cookies.store(
            ["a=gone; Expires=Thu, 01 Jan 1970 00:00:00 GMT", "b=gone; Max-Age=0"], from: url("https://example.com/"))
        #expect(cookies.allCookies.isEmpty)
    }

    @Test func aCookieWithTheSameNameDomainAndPathReplacesTheOldOne() {
        let cookies = store(at: ManualDate(start))
        cookies.store(["a=1"], from: url("https://example.com/"))
        cookies.store(["a=2"], from: url("https://example.com/"))
        #expect(cookies.allCookies.map(\.value) == ["2"])
        #expect(cookies.headerValue(for: url("https://example.com/")) == "a=2")
    }

    @Test func httpOnlyCookiesAreSentButKeptOutOfThePublicView() {
        let cookies = store(at: ManualDate(start))
        cookies.store(["secret=1; HttpOnly", "open=1"], from: url("https://example.com/"))
        #expect(cookies.cookies(for: url("https://example.com/")).map(\.name) == ["open"])
        #expect(cookies.headerValue(for: url("https://example.com/"))?.contains("secret=1") == true)
    }

    @Test func malformedHeadersAreIgnored() {
        let cookies = store(at: ManualDate(start))
        cookies.store(["", "novalue", "=nameless", "; Path=/"], from: url("https://example.com/"))
        #expect(cookies.allCookies.isEmpty)
        cookies.removeAll()
    }

    @Test func anIPAddressHostGetsHostOnlyCookiesOnly() {
        #expect(CookieStore.domainMatches("10.0.0.1", "10.0.0.1", hostOnly: false))
        #expect(!CookieStore.domainMatches("1.10.0.0.1", "0.0.1", hostOnly: false))
    }
}
