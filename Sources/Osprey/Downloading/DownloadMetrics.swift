import Metrics
import Synchronization

/// The downloader's swift-metrics instruments. With no metrics backend bootstrapped they cost next to nothing.
///
/// | metric | type | dimensions |
/// | --- | --- | --- |
/// | `osprey_download_requests_total` | counter | `coalesced`: whether the request joined a transfer under way |
/// | `osprey_download_transfers_total` | counter | `outcome`: `ok`, `not_modified`, or the error's short description |
/// | `osprey_download_bytes_total` | counter | |
/// | `osprey_download_duration_seconds` | timer | `outcome` |
final class DownloadMetrics: Sendable {
    private let factory: any MetricsFactory
    private let joined: Counter
    private let alone: Counter
    private let bytes: Counter
    /// The transfer counter and timer of each outcome, made on first use rather than per transfer.
    private let byOutcome = Mutex<[String: (transfers: Counter, duration: Timer)]>([:])

    /// Instruments made by `factory`, or by the process's bootstrapped metrics system when `nil`.
    init(factory: (any MetricsFactory)?) {
        let factory = factory ?? MetricsSystem.factory
        self.factory = factory
        joined = Counter(label: "osprey_download_requests_total", dimensions: [("coalesced", "true")], factory: factory)
        alone = Counter(label: "osprey_download_requests_total", dimensions: [("coalesced", "false")], factory: factory)
        bytes = Counter(label: "osprey_download_bytes_total", factory: factory)
    }

    func recordCaller(coalesced: Bool) {
        (coalesced ? joined : alone).increment()
    }

    func recordTransfer(_ outcome: Result<DownloadResponse, DownloadError>, duration: Duration) {
        let label: String
        switch outcome {
        case .success(let response):
            label = response.isNotModified ? "not_modified" : "ok"
            bytes.increment(by: response.body.count)
        case .failure(let error):
            label = error.shortDescription
        }
        let instruments = byOutcome.withLock { made in
            if let existing = made[label] { return existing }
            let dimensions = [("outcome", label)]
            let new = (
                transfers: Counter(label: "osprey_download_transfers_total", dimensions: dimensions, factory: factory),
                duration: Timer(label: "osprey_download_duration_seconds", dimensions: dimensions, factory: factory)
            )
            made[label] = new
            return new
        }
        instruments.transfers.increment()
        let (seconds, attoseconds) = duration.components
        instruments.duration.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
