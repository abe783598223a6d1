public import FoundationEssentials
import Synchronization

/// An HTTP cookie as RFC 6265 §5.3 stores it.
public struct Cookie: Sendable, Hashable {
    /// The cookie's name.
    public var name: String
    /// The cookie's value.
    public var value: String
    /// The host (host-only cookie) or domain it is sent to, lowercased, without a leading dot.
    public var domain: String
    /// Whether only `domain` itself gets it, not its subdomains (no `Domain` attribute was given).
    public var isHostOnly: Bool
    /// The path it is sent for: requests under it.
    public var path: String
    /// When it expires; `nil` for a session cookie, which lasts as long as the store.
    public var expires: Date?
    /// Sent over `https` only.
    public var isSecure: Bool
    /// Kept for HTTP only: ``CookieStore/cookies(for:includingHTTPOnly:)`` leaves it out unless asked.
    public var isHTTPOnly: Bool
}

/// The cookies a downloader keeps for requests that handle cookies, in memory, by RFC 6265.
///
/// Domain and path matching, expiry (`Expires`, `Max-Age`), `Secure` and `HttpOnly` follow §5; the public-suffix
/// check is not made (a `Domain=com` cookie is refused only as not matching the host), and `SameSite` does not apply
/// to a client that follows no cross-site navigation.
public final class CookieStore: Sendable {
    private let state = Mutex<[Cookie]>([])
    private let now: @Sendable () -> Date

    /// Makes an empty store; `now` is the clock expiry is judged by.
    public init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
    }

    /// The cookies that a request to `url` would send, most specific path first. `HttpOnly` cookies are left out
    /// unless `includingHTTPOnly` (they are for the HTTP layer, not for code reading the store).
    public func cookies(for url: URL, includingHTTPOnly: Bool = false) -> [Cookie] {
        guard let host = url.host(percentEncoded: false)?.lowercased() else { return [] }
        let isSecure = url.scheme?.lowercased() == "https"
        let path = url.path.isEmpty ? "/" : url.path
        let date = now()
        return state.withLock { cookies in
            cookies.removeAll { $0.expires.map { $0 <= date } ?? false }
            return cookies.filter { cookie in
                (includingHTTPOnly || !cookie.isHTTPOnly) && (!cookie.isSecure || isSecure)
                    && Self.domainMatches(host, cookie.domain, hostOnly: cookie.isHostOnly)
                    && Self.pathMatches(path, cookie.path)
            }
        }
        .sorted { $0.path.count > $1.path.count }
    }

    /// Every cookie kept, `HttpOnly` ones included.
    public var allCookies: [Cookie] { state.withLock { $0 } }

    /// Forgets every cookie.
    public func removeAll() {
        state.withLock { $0.removeAll() }
    }

    /// The `Cookie` header for a request to `url`, or `nil` when there is none to send.
    func headerValue(for url: URL) -> String? {
        let cookies = cookies(for: url, includingHTTPOnly: true)
        return cookies.isEmpty ? nil : cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    /// Keeps the cookies of `setCookie` header values received from `url` (§5.2, §5.3).
    public func store(_ setCookie: [String], from url: URL) {
        guard let host = url.host(percentEncoded: false)?.lowercased() else { return }
        let date = now()
        let parsed = setCookie.compactMap { Self.parse($0, host: host, requestPath: url.path, now: date) }
        guard !parsed.isEmpty else { return }
        state.withLock { cookies in
            for cookie in parsed {
                cookies.removeAll { $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path }
                // An expiry in the past is how an origin deletes a cookie.
                if cookie.expires.map({ $0 > date }) ?? true { cookies.append(cookie) }
            }
        }
    }

    // MARK: RFC 6265

    static func parse(_ header: String, host: String, requestPath: String, now: Date) -> Cookie? {
        let parts = header.split(separator: ";", omittingEmptySubsequences: false)
        guard let pair = parts.first, let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmingWhitespace()
        let value = pair[pair.index(after: equals)...].trimmingWhitespace()
        guard !name.isEmpty else { return nil }
        var cookie = Cookie(
            name: name, value: value, domain: host, isHostOnly: true, path: defaultPath(requestPath), expires: nil,
            isSecure: false, isHTTPOnly: false)
        var maxAge: Date?
        for attribute in parts.dropFirst() {
            let pieces = attribute.split(separator: "=", maxSplits: 1)
            let key = pieces.first?.trimmingWhitespace().lowercased() ?? ""
            let argument = pieces.count > 1 ? pieces[1].trimmingWhitespace() : ""
            switch key {
            case "expires":
                if let date = HTTPDateParser.parse(argument) { cookie.expires = date }
            case "max-age":
                if let seconds = Int(argument) {
                    maxAge = seconds <= 0 ? .distantPast : now.addingTimeInterval(TimeInterval(seconds))
                }
            case "domain":
                var domain = argument.lowercased()
                if domain.hasPrefix(".") { domain.removeFirst() }
                guard !domain.isEmpty else { continue }
                // §5.3 step 6: a domain the request host is not within is refused outright.
                guard domainMatches(host, domain, hostOnly: false) else { return nil }
                cookie.domain = domain
                cookie.isHostOnly = false
            case "path":
                if argument.hasPrefix("/") { cookie.path = argument }
            case "secure":
                cookie.isSecure = true
            case "httponly":
                cookie.isHTTPOnly = true
            default:
                continue
            }
        }
        if let maxAge { cookie.expires = maxAge }  // Max-Age wins over Expires (§5.3 step 3).
        return cookie
    }

    /// §5.1.3: the host is the domain, or a name within it (never for an IP address).
    static func domainMatches(_ host: String, _ domain: String, hostOnly: Bool) -> Bool {
        if host == domain { return true }
        guard !hostOnly, host.hasSuffix("." + domain) else { return false }
        return !host.allSatisfy { $0.isNumber || $0 == "." } && !host.contains(":")
    }

    /// §5.1.4: the request path is the cookie path, or below it.
    static func pathMatches(_ requestPath: String, _ cookiePath: String) -> Bool {
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return requestPath.count == cookiePath.count || cookiePath.hasSuffix("/")
            || requestPath.dropFirst(cookiePath.count).first == "/"
    }

    /// §5.1.4: the directory of the request path.
    static func defaultPath(_ requestPath: String) -> String {
        guard requestPath.hasPrefix("/"), let slash = requestPath.lastIndex(of: "/"), slash != requestPath.startIndex
        else { return "/" }
        return String(requestPath[..<slash])
    }
}

/// Parses the date formats cookies and HTTP headers use (RFC 9110 §5.6.7 and the Netscape cookie form), all in GMT:
/// IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, the Netscape cookie form `Sun, 06-Nov-1994 08:49:37 GMT`, RFC 850
/// `Sunday, 06-Nov-94 08:49:37 GMT` (a two-digit year below 70 is in the 2000s, as RFC 6265 reads it) and asctime
/// `Sun Nov  6 08:49:37 1994`.
enum HTTPDateParser {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    static func parse(_ string: String) -> Date? {
        let separators: Set<Character> = [" ", ",", "-", ":", "\t"]
        var fields = string.split(whereSeparator: { separators.contains($0) }).map { $0.lowercased() }
        // The weekday carries nothing the date does not.
        if let first = fields.first, first.allSatisfy(\.isLetter), month(first) == nil { fields.removeFirst() }
        let (day, month, year, hour, minute, second): (Int?, Int?, Int?, Int?, Int?, Int?)
        if fields.count == 6, let asctimeMonth = Self.month(fields[0]) {
            (month, day, hour, minute, second, year) =
                (asctimeMonth, Int(fields[1]), Int(fields[2]), Int(fields[3]), Int(fields[4]), Int(fields[5]))
        } else if fields.count == 7, ["gmt", "utc", "ut", "z"].contains(fields[6]) {
            (day, month, year, hour, minute, second) =
                (Int(fields[0]), Self.month(fields[1]), Int(fields[2]), Int(fields[3]), Int(fields[4]), Int(fields[5]))
        } else {
            return nil
        }
        guard let day, let month, var year, let hour, let minute, let second else { return nil }
        if year < 100 { year += year < 70 ? 2000 : 1900 }
        guard (1...daysIn(month: month, year: year)).contains(day), (0..<24).contains(hour), (0..<60).contains(minute),
            (0...60).contains(second)
        else { return nil }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: Double(((days * 24 + hour) * 60 + minute) * 60 + second))
    }

    private static func month(_ name: String) -> Int? {
        months.firstIndex(of: name).map { $0 + 1 }
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the given date of the proleptic Gregorian calendar (Howard Hinnant's
    /// `days_from_civil`).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
