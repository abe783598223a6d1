public import FoundationEssentials

/// Something a downloader did: for activity indicators, logs and metrics.
public enum DownloadEvent: Sendable {
    /// A transfer to the origin began (a coalesced request does not start another).
    case started(url: URL)
    /// A transfer ended, `duration` after it began.
    case finished(url: URL, outcome: Outcome, duration: Duration)

    /// How a transfer ended.
    public enum Outcome: Sendable {
        /// The origin answered `statusCode` (304 included) with `bytes` of body.
        case succeeded(statusCode: Int, bytes: Int)
        /// The transfer failed.
        case failed(DownloadError)

        init(_ result: Result<DownloadResponse, DownloadError>) {
            switch result {
            case .success(let response): self = .succeeded(statusCode: response.statusCode, bytes: response.body.count)
            case .failure(let error): self = .failed(error)
            }
        }
    }
}
