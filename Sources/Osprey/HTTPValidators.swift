/// What an origin said about a resource's version and freshness: the downloader reads them from a response, the disk
/// cache keeps them beside the bytes, and a later conditional request sends them back.
public struct HTTPValidators: Sendable, Hashable {
    /// The `ETag` response header, sent back as `If-None-Match`.
    public var etag: String?
    /// The `Last-Modified` response header, sent back as `If-Modified-Since`.
    public var lastModified: String?
    /// `Cache-Control: max-age`: how long the resource is fresh after it was received.
    public var maxAge: Duration?
    /// `Cache-Control: private`: only a private cache may keep the resource. A disk cache records it with the entry,
    /// so that a shared cache reading the same directory (``DiskCache/Configuration/isShared``) does not serve it.
    public var isPrivate: Bool

    /// Makes validators; all absent by default.
    public init(etag: String? = nil, lastModified: String? = nil, maxAge: Duration? = nil, isPrivate: Bool = false) {
        self.etag = etag
        self.lastModified = lastModified
        self.maxAge = maxAge
        self.isPrivate = isPrivate
    }

    /// Whether there is anything to validate with (`ETag` or `Last-Modified`).
    public var canValidate: Bool { etag != nil || lastModified != nil }
}
