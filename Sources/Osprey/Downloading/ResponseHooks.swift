public import FoundationEssentials
public import HTTPTypes

/// What a download's final response says before its body is read: where it came from, its status and headers.
public struct DownloadResponseHead: Sendable {
    /// The URL that answered, after redirects.
    public let url: URL
    /// The HTTP status: 2xx (a response about to be read).
    public let statusCode: Int
    /// The response's headers.
    public let headers: HTTPFields

    /// Makes a head (tests of a validator make their own).
    public init(url: URL, statusCode: Int, headers: HTTPFields) {
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
    }
}

/// Sees each successful response's status and headers before its body is read, and may refuse it, so that an
/// unwanted body is not downloaded (a refused body is read no further than 64 KiB, which keeps a short one's
/// connection for reuse): an HTML error page served with 200, a type the caller does not take, a header the origin
/// must send (Kingfisher's `ResponseDelegate`, SDWebImage's `responseModifier`).
///
/// ```swift
/// configuration.responseValidator = ResponseValidator(identifier: "images-only") { head in
///     guard head.headers.first(name: "Content-Type")?.hasPrefix("image/") ?? true else {
///         throw Refusal("not an image")
///     }
/// }
/// ```
///
/// A refused response fails the download with ``DownloadError/responseRejected(identifier:error:)``, a lasting
/// failure that carries the thrown error as it was thrown (``Refusal``, or a type of one's own).
public struct ResponseValidator: Sendable {
    /// Names the validator: requests with validators of the same identifier may share a transfer.
    public let identifier: String
    let validate: @Sendable (DownloadResponseHead) throws -> Void

    /// Makes a validator named `identifier` that calls `validate` with each 2xx response's head; throwing refuses it.
    public init(identifier: String, validate: @escaping @Sendable (DownloadResponseHead) throws -> Void) {
        self.identifier = identifier
        self.validate = validate
    }
}

/// Transforms a downloaded body before anything else sees it — decryption, unwrapping a container, stripping a
/// prefix (SDWebImage's `decryptor`, Kingfisher's `ImageDataModifier`): the caches keep, and the decoder reads, what
/// it returns. It runs once per transfer, on the complete body (a resumed transfer included), in the transfer's task;
/// a 304 has no body and is not passed to it.
///
/// ```swift
/// configuration.dataModifier = DataModifier(identifier: "xor-v1") { body, url in
///     body.map { $0 ^ 0x5A }
/// }
/// ```
///
/// Throwing fails the download with ``DownloadError/dataModificationFailed(identifier:error:)``, a lasting failure
/// that carries the thrown error as it was thrown.
/// What it returns is held to the same size limit as a body.
public struct DataModifier: Sendable {
    /// Names the modifier: requests with modifiers of the same identifier may share a transfer, and the identifier
    /// is what tells two modifiers' outputs apart.
    public let identifier: String
    let modify: @Sendable ([UInt8], URL) throws -> [UInt8]

    /// Makes a modifier named `identifier` that calls `modify` with each complete body and the URL that sent it.
    public init(identifier: String, modify: @escaping @Sendable ([UInt8], URL) throws -> [UInt8]) {
        self.identifier = identifier
        self.modify = modify
    }
}

/// An error with a message, for a ``ResponseValidator`` or ``DataModifier`` to throw.
public struct Refusal: Error, Sendable, CustomStringConvertible {
    /// Why the response was rejected, as the hook said it.
    public let description: String

    /// Makes a refusal that says `reason`.
    public init(_ reason: String) { description = reason }
}
