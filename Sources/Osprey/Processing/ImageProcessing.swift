public import OspreyCodecs

/// Turns one image into another: a resize, a crop, a filter. The seam between the manager and the
/// processors.
///
/// A processor is a value with no shared mutable state: the manager runs it on its processing executor, possibly on
/// several images at once. Long work should check `Task.isCancelled` between rows or frames and throw
/// `CancellationError` when it is set.
///
/// ```swift
/// struct Invert: ImageProcessing {
///     var identifier: String { "invert" }
///     func process(_ image: Image) throws -> Image { ... }
/// }
/// let result = try await manager.image(for: ImageRequest(url: url, processors: [Invert()]))
/// ```
public protocol ImageProcessing: Sendable {
    /// Names the processor and every parameter that changes its output, canonically formatted: equal processors have
    /// equal identifiers, different ones never collide. It becomes part of the cache key.
    var identifier: String { get }

    /// Returns the processed image.
    func process(_ image: Image) throws -> Image

    /// Whether every image comes back with its pixels as they were (a limit that only checks): an encoded load may
    /// then answer with the source's own bytes (``ImageOutput/keepsSmallerSource``). `false` unless a processor says.
    var keepsPixels: Bool { get }
}

extension ImageProcessing {
    /// `false`: a processor changes pixels unless it says otherwise.
    public var keepsPixels: Bool { false }
}

extension [any ImageProcessing] {
    /// The identifiers of the processors, in order, joined: what the cache key carries for the list.
    var compositeIdentifier: String { map(\.identifier).joined(separator: "|") }
}
