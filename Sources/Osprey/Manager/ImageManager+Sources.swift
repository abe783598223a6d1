import FoundationEssentials
import HTTPTypes
import Logging

extension ImageRequest {
    /// Where the image may come from, in the order they are tried: ``url``, then ``alternativeURLs``.
    var sources: [URL] { [url] + alternativeURLs }
}

extension ImageManager {
    /// Whether every source of `request` is on the failed list (and `retryFailed` does not ask to try them anyway):
    /// then the load fails at once with ``ImageError/previouslyFailed(_:reason:)`` for its URL.
    func hasNoSourceLeft(_ request: ImageRequest) -> Bool {
        // On every load, memory hits included: no array of the sources is made (and an empty list answers at once).
        guard !request.options.contains(.retryFailed), failedURLs.contains(request.url) else { return false }
        return request.alternativeURLs.allSatisfy(failedURLs.contains)
    }

    /// Downloads the first source of `request` that answers — its URL (or its data provider), then its alternatives in order, skipping those
    /// on the failed list unless `retryFailed` — at `priority`, conditionally on `validators` for the URL itself.
    /// Each lasting failure enters the failed list; when every source fails, the URL's own failure is the outcome
    /// (the alternatives' are logged). `started` is told of each source's task as it starts.
    func downloadFirstSource(
        of request: ImageRequest, loader: any DataLoading, priority: DownloadPriority, validators: HTTPValidators?,
        progress: (@Sendable (DownloadProgress) -> Void)?, started: (any DataLoadingTask) -> Void
    ) async -> Result<DownloadResponse, ImageError> {
        var firstFailure: ImageError?
        for (index, url) in request.sources.enumerated() {
            if !request.options.contains(.retryFailed), failedURLs.contains(url) { continue }
            if index == 0, let provider = request.provider {
                do {
                    let body = try await provider.data()
                    return .success(
                        DownloadResponse(requestedURL: url, url: url, statusCode: 200, headers: [:], body: body))
                } catch {
                    if Task.isCancelled { return .failure(.cancelled) }
                    firstFailure = .providerFailed(cacheKey: provider.cacheKey, error: error)
                    continue
                }
            }
            var download = DownloadRequest(url: url, priority: priority)
            if request.options.contains(.handlesCookies) { download.handlesCookies = true }
            if request.options.contains(.allowsInvalidCertificates) { download.allowsInvalidCertificates = true }
            if index == 0 { download.validators = validators }
            let task = loader.download(download, progress: progress)
            started(task)
            do {
                return .success(try await task.response)
            } catch {
                if Task.isCancelled { return .failure(.cancelled) }
                failedURLs.record(url, error: error)
                if index > 0 {
                    configuration.logger.info(
                        "alternative source failed", metadata: ["osprey.url": "\(url)", "osprey.error": "\(error)"])
                }
                firstFailure = firstFailure ?? .downloadFailed(error)
            }
        }
        return .failure(firstFailure ?? .previouslyFailed(request.url, reason: failedURLs.failure(for: request.url)))
    }
}
