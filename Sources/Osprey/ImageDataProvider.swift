public import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a request's bytes come from when they do not come from a URL: a closure, a local file, a database, an
/// archive (Kingfisher's `ImageDataProvider`, Nuke's closure sources). A request made with one
/// (``ImageRequest/init(provider:options:processors:priority:)``) goes through the same pipeline as a download —
/// the caches under the provider's own key, the decode, the processors, the variants — only its bytes are asked of
/// the provider instead of the network.
///
/// ```swift
/// let request = ImageRequest(provider: ClosureDataProvider(cacheKey: "avatar-42") { try await store.avatar(42) })
/// let avatar = try await manager.image(for: request)
/// ```
public protocol ImageDataProvider: Sendable {
    /// The key the image is cached under: providers with equal keys give the same image.
    var cacheKey: String { get }
    /// The image's encoded bytes. A thrown error fails the load with
    /// ``ImageError/providerFailed(cacheKey:error:)``, the error kept as it was thrown.
    func data() async throws -> [UInt8]
}

/// A provider that calls a closure for the bytes.
public struct ClosureDataProvider: ImageDataProvider {
    /// The key the image is cached under.
    public let cacheKey: String
    private let load: @Sendable () async throws -> [UInt8]

    /// Makes a provider whose bytes `load` gives, cached under `cacheKey`.
    public init(cacheKey: String, _ load: @escaping @Sendable () async throws -> [UInt8]) {
        self.cacheKey = cacheKey
        self.load = load
    }

    /// Calls the closure for the bytes.
    public func data() async throws -> [UInt8] {
        try await load()
    }
}

/// A provider that reads a local file: how a caller that allows it loads `file://` images (an ``ImageRequest`` made
/// from a URL or a string still refuses every scheme but `http` and `https`, so nothing reads local files unless its
/// caller made this provider — the proxy does only for `local:` sources under the directory its operator named). The
/// file is read whole, off the caller's thread, and refused when it is larger than `maximumSize`.
public struct LocalFileDataProvider: ImageDataProvider {
    /// The file's path.
    public let path: String
    /// The largest file read, in bytes: 64 MiB by default, as the downloader's body limit.
    public let maximumSize: Int

    /// Makes a provider for the file at `path` (a `file://` URL's path, or any absolute path).
    public init(path: String, maximumSize: Int = 64 << 20) {
        self.path = path
        self.maximumSize = maximumSize
    }

    /// Makes a provider for a `file://` URL; `nil` for any other URL.
    public init?(fileURL: URL, maximumSize: Int = 64 << 20) {
        guard fileURL.isFileURL else { return nil }
        self.init(path: fileURL.path(percentEncoded: false), maximumSize: maximumSize)
    }

    /// `file:` and the path: a file is cached apart from any URL.
    public var cacheKey: String { "file:" + path }

    /// Reads the file's bytes (off the caller's task).
    public func data() async throws -> [UInt8] {
        let (path, limit) = (self.path, maximumSize)
        return try await Task.detached {
            let bytes: [UInt8]?
            do {
                bytes = try FileSystem.read(path, maximumSize: limit)
            } catch let error as FileSystem.Error where error.code == EFBIG {
                throw Refusal("\(path) is larger than \(limit) bytes")
            }
            guard let bytes else { throw FileSystem.Error(operation: "open", path: path, code: ENOENT) }
            return bytes
        }.value
    }
}
