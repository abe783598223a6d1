/// How urgently a download should start, relative to the others waiting in the same downloader's queue.
///
/// The queue starts the highest priority first; within one priority, the downloader's ``ImageDownloader/Order``
/// decides. `normal` by default.
public enum DownloadPriority: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    case veryLow = 0
    case low = 1
    case normal = 2
    case high = 3
    case veryHigh = 4

    /// Whether `lhs` is lower than `rhs`.
    public static func < (lhs: DownloadPriority, rhs: DownloadPriority) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The value as logs and messages print it.
    public var description: String {
        switch self {
        case .veryLow: "veryLow"
        case .low: "low"
        case .normal: "normal"
        case .high: "high"
        case .veryHigh: "veryHigh"
        }
    }
}
