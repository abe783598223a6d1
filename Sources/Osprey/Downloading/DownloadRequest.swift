public import FoundationEssentials
public import HTTPTypes

/// One download: the URL and how to fetch it.
///
/// Requests that are the same *effective* request (same URL, headers, credentials, certificate policy, cookies,
/// validators, modifier, response validator, data modifier, limits) while one of them is under way share one transfer.
///
/// ```swift
/// var request = DownloadRequest(url: url)
/// request.priority = .high
/// request.headers[HTTPField.Name("X-Client")!] = "thumbnailer"
/// let response = try await ImageDownloader.shared.data(for: request)
/// ```
public struct DownloadRequest: Sendable {
    /// The URL to download: `http` or `https`.
    public var url: URL
    /// Where it waits in the queue. `.normal` by default; a running task's priority can change
    /// (``DataLoadingTask/setPriority(_:)``).
    public var priority: DownloadPriority = .normal
    /// Headers sent besides (and overriding) the downloader's. None by default.
    public var headers: HTTPFields = [:]
    /// A time limit for the whole download, redirects and body included. `nil` (the downloader's
    /// ``ImageDownloader/Configuration/deadline``) by default.
    public var deadline: Duration?
    /// Credentials for basic authentication; the downloader's by default (`nil`). Sent to the request's origin only,
    /// never across a redirect to another origin.
    public var credentials: Credentials?
    /// Accept any certificate from an `https` origin (expired, self-signed, wrong host). `false` by default; the
    /// request then goes through a separate HTTP client with its own TLS configuration.
    public var allowsInvalidCertificates = false
    /// Send the downloader's cookies for this URL and keep those the origin sets. `nil` (the downloader's
    /// ``ImageDownloader/Configuration/handlesCookies``, off by default) by default.
    public var handlesCookies: Bool?
    /// Ask the origin whether the copy these describe is still current (`If-None-Match`, `If-Modified-Since`): an
    /// answer of 304 is a response with ``DownloadResponse/isNotModified``, not an error. `nil` by default.
    public var validators: HTTPValidators?
    /// Let the transfer run to the end even if every caller leaves; a later caller for the same request
    /// joins it. `false` by default.
    public var isDetached = false
    /// A hook that may change the headers just before the request is sent, or throw to cancel it. `nil` (the
    /// downloader's) by default.
    public var modifier: RequestModifier?
    /// Sees the response's status and headers before its body is read, and may refuse it. `nil` (the downloader's
    /// ``ImageDownloader/Configuration/responseValidator``) by default.
    public var responseValidator: ResponseValidator?
    /// Transforms the complete body before anything else sees it (decryption, unwrapping). `nil` (the downloader's
    /// ``ImageDownloader/Configuration/dataModifier``) by default.
    public var dataModifier: DataModifier?
    /// When and how often the transfer is tried again after a failure. `nil` (the downloader's
    /// ``ImageDownloader/Configuration/retryStrategy``, none by default) by default.
    public var retryStrategy: RetryStrategy?
    /// The largest body accepted, in bytes; the downloader's ``ImageDownloader/Configuration/maximumBodySize`` (64 MiB)
    /// when `nil`, the default.
    public var maximumBodySize: Int?

    /// Makes a request for `url` with the defaults above.
    public init(url: URL, priority: DownloadPriority = .normal) {
        self.url = url
        self.priority = priority
    }

    /// What makes two requests the same effective request: everything that can change what the origin answers.
    var coalescingKey: CoalescingKey {
        let headerPairs = headers.map { "\($0.name.canonicalName):\($0.value)" }.sorted()
        return CoalescingKey(
            url: url.absoluteString,
            headers: headerPairs,
            credentials: credentials?.identity,
            allowsInvalidCertificates: allowsInvalidCertificates,
            handlesCookies: handlesCookies,
            etag: validators?.etag,
            lastModified: validators?.lastModified,
            modifier: modifier?.identifier,
            responseValidator: responseValidator?.identifier,
            dataModifier: dataModifier?.identifier,
            deadline: deadline,
            maximumBodySize: maximumBodySize
        )
    }

    /// The identity of an effective request; see ``DownloadRequest/coalescingKey``.
    struct CoalescingKey: Sendable, Hashable {
        let url: String
        let headers: [String]
        let credentials: String?
        let allowsInvalidCertificates: Bool
        let handlesCookies: Bool?
        let etag: String?
        let lastModified: String?
        let modifier: String?
        let responseValidator: String?
        let dataModifier: String?
        let deadline: Duration?
        let maximumBodySize: Int?
    }
}

/// Basic-authentication credentials, given outright or looked up per request.
public enum Credentials: Sendable {
    /// A user name and password.
    case basic(user: String, password: String)
    /// Asks `provider` for credentials each time a request is sent (a rotating password, a vault); it may return
    /// `nil` to send none, or throw to cancel the request.
    case provider(CredentialProvider)

    /// What two requests with the same credentials share; the password never leaves this process.
    var identity: String {
        switch self {
        case .basic(let user, let password): "basic:\(user):\(password.hashValue)"
        case .provider(let provider): "provider:\(provider.identifier)"
        }
    }
}

/// Looks up basic-authentication credentials for a URL when a request is sent.
public struct CredentialProvider: Sendable {
    /// Names the provider: requests with providers of the same identifier may share a transfer.
    public let identifier: String
    let lookUp: @Sendable (URL) async throws -> (user: String, password: String)?

    /// Makes a provider named `identifier` that calls `lookUp` for each request.
    public init(
        identifier: String, lookUp: @escaping @Sendable (URL) async throws -> (user: String, password: String)?
    ) {
        self.identifier = identifier
        self.lookUp = lookUp
    }
}

/// Changes a request's headers just before it is sent (a fresh auth token, a signature), or throws to cancel it.
///
/// ```swift
/// request.modifier = RequestModifier(identifier: "auth") { url, headers in
///     headers[.authorization] = "Bearer \(try await tokens.current())"
/// }
/// ```
public struct RequestModifier: Sendable {
    /// Names the modifier: requests with modifiers of the same identifier may share a transfer.
    public let identifier: String
    let modify: @Sendable (URL, inout HTTPFields) async throws -> Void

    /// Makes a modifier named `identifier` that runs `modify` with the URL and the headers about to be sent.
    public init(identifier: String, modify: @escaping @Sendable (URL, inout HTTPFields) async throws -> Void) {
        self.identifier = identifier
        self.modify = modify
    }
}
