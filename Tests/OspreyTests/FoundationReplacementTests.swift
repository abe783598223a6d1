import Foundation
import Testing

@testable import Osprey

/// The pieces Osprey writes itself instead of linking all of Foundation: HTTP dates, percent-encoding and trimming,
/// checked against the answers Foundation's own parsers give.
@Suite struct FoundationReplacementTests {
    @Test("the four HTTP date forms parse to the same instant; malformed and out-of-range dates do not parse")
    func httpDates() {
        let instant = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        for text in [
            "Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06-Nov-1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994", "sun, 06 nov 1994 08:49:37 utc",
        ] {
            #expect(HTTPDateParser.parse(text) == instant, "\(text)")
        }
        #expect(HTTPDateParser.parse("Thu, 01 Jan 1970 00:00:00 GMT") == Date(timeIntervalSince1970: 0))
        #expect(HTTPDateParser.parse("Wed, 01 Jan 2100 00:00:00 GMT") == Date(timeIntervalSince1970: 4_102_444_800))
        #expect(HTTPDateParser.parse("Thu, 29 Feb 2024 23:59:59 GMT") == Date(timeIntervalSince1970: 1_709_251_199))
        // A two-digit year below 70 is in the 2000s.
        #expect(HTTPDateParser.parse("Monday, 01-Jan-24 00:00:00 GMT") == Date(timeIntervalSince1970: 1_704_067_200))
        for text in [
            "", "yesterday", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 31 Nov 1994 08:49:37 GMT",
            "Thu, 29 Feb 2023 00:00:00 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49 GMT", "Sun Nov 6 08:49:37", "Sun, 0x6 Nov 1994 08:49:37 GMT",
        ] {
            #expect(HTTPDateParser.parse(text) == nil, "\(text)")
        }
    }

    @Test("percent-encoding keeps ASCII letters and digits only; decoding refuses a bad escape or bytes not UTF-8")
    func percentEncoding() {
        #expect(PercentEncoding.encodingAllButAlphanumerics("a b/é?1") == "a%20b%2F%C3%A9%3F1")
        #expect(PercentEncoding.decoding("a%20b%2f%C3%A9%3F1") == "a b/é?1")
        #expect(PercentEncoding.decoding("plain") == "plain")
        for text in ["%", "%2", "%zz", "a%2g", "%C3"] {
            #expect(PercentEncoding.decoding(text) == nil, "\(text)")
        }
        for text in ["", "x", "a b&c=d", "東京/ü?#%", "\u{0}\n"] {
            #expect(PercentEncoding.decoding(PercentEncoding.encodingAllButAlphanumerics(text)) == text)
            #expect(
                PercentEncoding.decoding(PercentEncoding.encodingAllButAlphanumerics(text))
                    == PercentEncoding.encodingAllButAlphanumerics(text).removingPercentEncoding)
        }
    }

    @Test("trimming removes spaces, tabs and line ends at either end only")
    func trimming() {
        #expect(" \t a b \r\n".trimmingWhitespace() == "a b")
        #expect("ab".trimmingWhitespace() == "ab")
        #expect(" \n ".trimmingWhitespace() == "")
        #expect("x=1; y".split(separator: ";")[1].trimmingWhitespace() == "y")
    }
}
