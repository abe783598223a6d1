import FoundationEssentials
public import HTTPTypes

/// Which caches an origin lets keep a response, from its `Cache-Control` header (RFC 9111 §5.2.2.3 and §5.2.2.7).
///
/// The manager honours it (see ``ImageManager/Configuration/isSharedCache``): a `no-store` image is never written to
/// the disk cache, and a cache that serves many users, as a proxy's does, treats `private` the same and keeps neither
/// kind in memory either.
public enum StoragePermission: Sendable, Hashable {
    /// Any cache may keep it: no `no-store`, no `private`.
    case anyCache
    /// `Cache-Control: private`: a cache that serves one user (an application's, the command line's) may keep it; a
    /// shared one (a proxy's) may not.
    case privateCacheOnly
    /// `Cache-Control: no-store`: no cache may keep it.
    case none

    /// The permission the `Cache-Control` headers in `headers` give; `no-store` wins over `private`. Directive names
    /// are case-insensitive, and `private="Set-Cookie"` (a qualified `private`) counts as `private`.
    public init(_ headers: HTTPFields) {
        var permission = StoragePermission.anyCache
        for value in headers[values: .cacheControl] {
            for directive in value.split(separator: ",") {
                let name = directive.split(separator: "=", maxSplits: 1).first?
                    .trimmingWhitespace().lowercased()
                switch name {
                case "no-store":
                    self = .none
                    return
                case "private": permission = .privateCacheOnly
                default: break
                }
            }
        }
        self = permission
    }

    /// Whether a cache that serves many users (`shared`) or one may keep the response.
    func allowsStoring(inSharedCache shared: Bool) -> Bool {
        switch self {
        case .anyCache: true
        case .privateCacheOnly: !shared
        case .none: false
        }
    }
}

extension DownloadResponse {
    /// Which caches the origin lets keep this response (its `Cache-Control`).
    public var storagePermission: StoragePermission { StoragePermission(headers) }
}
