/// Why a cache could not store what it was given: the error of every store into a ``DataCaching`` (a
/// ``DiskCache``'s, or one's own).
public enum CacheError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The disk cache could not store `key` because the disk (or the user's quota) is full. Nothing already stored
    /// was lost.
    case diskFull(key: String)

    /// The disk cache could not store `key`: `reason` is the system's message. Nothing already stored was lost.
    case cacheWriteFailed(key: String, reason: String)

    /// A label without associated values, for metrics and logs.
    public var shortDescription: String {
        switch self {
        case .diskFull: "diskFull"
        case .cacheWriteFailed: "cacheWriteFailed"
        }
    }

    /// What went wrong, in a sentence for logs and error messages.
    public var description: String {
        switch self {
        case .diskFull(let key): "cannot cache '\(key)': the disk is full"
        case .cacheWriteFailed(let key, let reason): "cannot cache '\(key)': \(reason)"
        }
    }
}
