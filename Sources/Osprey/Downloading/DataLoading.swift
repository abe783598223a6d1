/// Loads the bytes of a URL: the seam between the manager and the network.
///
/// ``ImageDownloader`` is the default; a manager takes any loader, so tests and callers with their own transport can
/// plug one in. A loader starts each download at once and hands back a ``DataLoadingTask`` through which the caller
/// waits, changes priority or leaves.
public protocol DataLoading: Sendable {
    /// Starts downloading `request`; `progress`, when given, is called for every chunk of the body, in order, from
    /// the loader's own tasks.
    func download(_ request: DownloadRequest, progress: (@Sendable (DownloadProgress) -> Void)?) -> any DataLoadingTask
}

/// One caller's share of a download.
public protocol DataLoadingTask: AnyObject, Sendable {
    /// Waits for the outcome. Cancelling the waiting Swift task makes the caller leave (as ``cancel()``).
    var response: DownloadResponse { get async throws(DownloadError) }
    /// The caller's current priority.
    var priority: DownloadPriority { get }
    /// Changes the caller's priority, while queued or running; the transfer runs at the highest of its callers'.
    func setPriority(_ priority: DownloadPriority)
    /// Leaves the download: the outcome becomes ``DownloadError/cancelled``, other callers are not disturbed, and the
    /// transfer stops when its last caller leaves (unless detached).
    func cancel()
}

extension DataLoading {
    /// Downloads `request` and returns the response; cancelling the calling task leaves the download.
    public func data(
        for request: DownloadRequest, progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) async throws(DownloadError) -> DownloadResponse {
        try await download(request, progress: progress).response
    }
}
