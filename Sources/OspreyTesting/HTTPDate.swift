public import Foundation

/// HTTP dates (RFC 9110 §5.6.7, IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`).
public enum HTTPDate {
    /// Parses an IMF-fixdate; `nil` for anything else.
    public static func parse(_ string: String) -> Date? {
        formatter().date(from: string)
    }

    /// Formats `date` as an IMF-fixdate.
    public static func format(_ date: Date) -> String {
        formatter().string(from: date)
    }

    private static func formatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }
}
