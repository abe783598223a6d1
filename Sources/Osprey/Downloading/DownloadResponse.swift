public import FoundationEssentials
public import HTTPTypes

/// What a download brought back: the body, or word that the cached copy is still current.
public struct DownloadResponse: Sendable {
    /// The URL that was asked for.
    public let requestedURL: URL
    /// The URL that answered, after any redirects.
    public let url: URL
    /// The final status: 200, 203, 206 after a resumed transfer, ... or 304 (see ``isNotModified``).
    public let statusCode: Int
    /// The final response's headers.
    public let headers: HTTPFields
    /// The whole body; empty when ``isNotModified``.
    public let body: [UInt8]
    /// How many of the body's bytes came from an earlier, interrupted transfer (0 unless resumed).
    public let resumedBytes: Int

    /// Whether the origin answered 304 Not Modified to a conditional request: the caller's copy is current.
    public var isNotModified: Bool { statusCode == 304 }

    /// The response's `ETag`, `Last-Modified` and `Cache-Control: max-age`, for a later conditional request.
    public var validators: HTTPValidators { HTTPValidators(headers) }

    /// Makes a response; loaders other than ``ImageDownloader`` use it.
    public init(
        requestedURL: URL, url: URL, statusCode: Int, headers: HTTPFields, body: [UInt8], resumedBytes: Int = 0
    ) {
        self.requestedURL = requestedURL
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
        self.resumedBytes = resumedBytes
    }
}

/// How far a download has come, with the bytes that arrived.
public struct DownloadProgress: Sendable {
    /// Body bytes received so far.
    public let receivedBytes: Int
    /// The body's full length, or `nil` when the origin did not say (chunked transfer encoding).
    public let expectedBytes: Int?
    /// The bytes received since this caller's previous report. A caller that joins a transfer already under way gets
    /// every byte so far in its first report, so the reports' bytes always add up to the body so far: an incremental
    /// decoder can be fed with them.
    public let newBytes: [UInt8]

    /// Makes a report; loaders other than ``ImageDownloader`` use it.
    public init(receivedBytes: Int, expectedBytes: Int?, newBytes: [UInt8]) {
        self.receivedBytes = receivedBytes
        self.expectedBytes = expectedBytes
        self.newBytes = newBytes
    }

    /// The fraction received, from 0 to 1, or `nil` when the length is unknown.
    public var fractionCompleted: Double? {
        guard let expectedBytes, expectedBytes > 0 else { return nil }
        return min(1, Double(receivedBytes) / Double(expectedBytes))
    }
}

extension HTTPValidators {
    /// The validators in a response's headers.
    public init(_ headers: HTTPFields) {
        let maxAge = headers[values: .cacheControl].lazy
            .flatMap { $0.split(separator: ",") }
            .compactMap { directive -> Duration? in
                let parts = directive.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmingWhitespace().lowercased() == "max-age",
                    let seconds = Int(parts[1].trimmingWhitespace()), seconds >= 0
                else { return nil }
                return .seconds(seconds)
            }
            .first
        self.init(
            etag: headers[.eTag], lastModified: headers[.lastModified], maxAge: maxAge,
            isPrivate: StoragePermission(headers) == .privateCacheOnly)
    }
}
