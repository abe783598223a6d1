import FoundationEssentials
import HTTPTypes
import Synchronization

/// The start of a body whose transfer broke, and the validator that proves a continuation belongs to it.
struct ResumableData: Sendable {
    let body: [UInt8]
    /// A strong `ETag` or a `Last-Modified` date, sent back as `If-Range`.
    let validator: String
}

/// Bodies broken off mid-transfer, kept so the next request for the same URL asks only for the rest (`Range`, with
/// `If-Range` so a changed resource comes whole). Bounded by count; the oldest goes first. Like Nuke's resumable
/// data, it lives in memory only.
final class ResumableDataStore: Sendable {
    private struct State {
        var entries: [String: ResumableData] = [:]
        var order: [String] = []
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// Keeps `body` for `url` when the origin said it takes byte ranges and gave a strong validator.
    func keep(_ body: [UInt8], headers: HTTPFields, for url: URL) {
        guard capacity > 0, !body.isEmpty,
            headers[values: .acceptRanges].contains(where: { $0.lowercased().contains("bytes") }),
            let validator = Self.validator(headers)
        else { return }
        let key = url.absoluteString
        state.withLock { state in
            if state.entries.updateValue(ResumableData(body: body, validator: validator), forKey: key) == nil {
                state.order.append(key)
            }
            while state.order.count > capacity {
                state.entries[state.order.removeFirst()] = nil
            }
        }
    }

    /// Takes what was kept for `url`, if anything: a transfer resumes it at most once.
    func take(for url: URL) -> ResumableData? {
        let key = url.absoluteString
        return state.withLock { state in
            guard let data = state.entries.removeValue(forKey: key) else { return nil }
            state.order.removeAll { $0 == key }
            return data
        }
    }

    /// A validator `If-Range` accepts: a strong entity tag (RFC 9110 §13.1.5), else the modification date.
    static func validator(_ headers: HTTPFields) -> String? {
        if let etag = headers[.eTag], !etag.hasPrefix("W/") { return etag }
        return headers[.lastModified]
    }
}
