/// How long a cache entry lives after it is stored (Kingfisher's `StorageExpiration`): the memory and disk levels
/// take one per entry, beside their configuration's default.
///
/// ```swift
/// cache.setValue(image, forKey: key, cost: image.cost, expiration: .seconds(300))
/// try await disk.store(bytes, forKey: key, expiration: .days(30), extension: .none)
/// ```
public enum CacheExpiration: Sendable, Hashable {
    /// The entry stays until the cache's limits remove it.
    case never
    /// The entry expires this many seconds after it is stored.
    case seconds(Double)
    /// The entry expires this many days (of 86,400 seconds) after it is stored.
    case days(Int)
    /// The entry expires at this time (already expired when it is in the past).
    case date(UnixTime)

    /// When an entry stored at `time` expires; `nil` for ``never``.
    public func expiry(after time: UnixTime) -> UnixTime? {
        switch self {
        case .never: nil
        case .seconds(let seconds): UnixTime(seconds: time.seconds + seconds)
        case .days(let days): UnixTime(seconds: time.seconds + Double(days) * 86_400)
        case .date(let date): date
        }
    }
}

/// How a read moves an entry's expiry (Kingfisher's `ExpirationExtending`). Fixed for each entry when it is stored,
/// from the cache's configuration unless the store names one. A read never brings an expiry closer, and an entry
/// that has expired is not brought back.
public enum ExpirationExtension: Sendable, Hashable {
    /// Reads leave the expiry where it is.
    case none
    /// Each read gives the entry its whole lifetime again, counted from the read (an entry that expires at a
    /// ``CacheExpiration/date(_:)`` gets the time that date left it when it was stored).
    case cacheTime
    /// Each read sets the expiry to what this expiration gives from the read.
    case expiration(CacheExpiration)
}

/// An entry's expiry and how reads move it, resolved when it is stored, on a timeline of seconds: the disk cache's
/// Unix time, or the memory cache's own clock.
@usableFromInline
struct ExpiryRule: Sendable, Hashable {
    /// When the entry expires; `.infinity` for never.
    @usableFromInline var expiry: Double
    /// How a read moves ``expiry``: `nil` not at all; a positive value (`.infinity` included) is added to the read's
    /// time; a negative one is minus the time it moves to (an ``ExpirationExtension/expiration(_:)`` to a date).
    @usableFromInline var renewal: Double?

    @usableFromInline
    init(expiry: Double, renewal: Double?) {
        self.expiry = expiry
        self.renewal = renewal
    }

    /// The rule of an entry stored at `time` (on the cache's timeline) with `expiration` and `extension`; a date is
    /// moved onto the timeline by `dateOffset` (the timeline's time minus Unix time).
    init(_ expiration: CacheExpiration, extension: ExpirationExtension, storedAt time: Double, dateOffset: Double = 0) {
        // ``CacheExpiration/expiry(after:)`` on this timeline: a date moved by the offset, never at infinity.
        func expiry(_ expiration: CacheExpiration, from time: Double) -> Double {
            guard let expiry = expiration.expiry(after: UnixTime(seconds: time)) else { return .infinity }
            if case .date = expiration { return expiry.seconds + dateOffset }
            return expiry.seconds
        }
        self.expiry = expiry(expiration, from: time)
        // A renewal of nothing (or of a date before 1970) is none: the sign of the value tells its kind.
        let renewal: Double
        switch `extension` {
        case .none: renewal = 0
        case .cacheTime: renewal = self.expiry - time
        case .expiration(.date(let date)): renewal = -(date.seconds + dateOffset)
        case .expiration(let other): renewal = expiry(other, from: 0)
        }
        let isDate = if case .expiration(.date) = `extension` { true } else { false }
        self.renewal = (isDate ? renewal < 0 : renewal > 0) ? renewal : nil
    }

    /// Whether the entry has expired at `time`.
    @inlinable func hasExpired(at time: Double) -> Bool { time >= expiry }

    /// The expiry after a read at `time`: never earlier than it was.
    @inlinable func expiry(afterReadAt time: Double) -> Double {
        guard let renewal else { return expiry }
        return max(expiry, renewal < 0 ? -renewal : time + renewal)
    }
}
