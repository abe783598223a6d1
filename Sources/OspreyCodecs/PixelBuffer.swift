internal import COspreyCodecShims

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A rectangle of pixels in one ``PixelFormat``, rows top to bottom, each `bytesPerRow` bytes apart.
///
/// Copying a `PixelBuffer` is O(1): copies share one allocation until one of them is mutated (copy on write), so
/// images pass between tasks and caches freely. The bytes live in one contiguous, zero-initialised C allocation that
/// can be handed to a C library directly through ``withUnsafeBytes(_:)`` and ``withUnsafeMutableBytes(_:)``.
///
/// ```swift
/// var pixels = try PixelBuffer(width: 64, height: 32, format: .rgba8)
/// pixels.withUnsafeMutableBytes { bytes in bytes[0] = 255 }
/// ```
public struct PixelBuffer: Sendable {
    /// Width in pixels, at least 1.
    public let width: Int
    /// Height in pixels, at least 1.
    public let height: Int
    /// The layout of each pixel.
    public let format: PixelFormat
    /// Distance in bytes from one row to the next, at least `width * format.bytesPerPixel`.
    public let bytesPerRow: Int
    private var storage: Storage

    /// Allocates a zeroed buffer.
    ///
    /// - Parameters:
    ///   - width: the width in pixels.
    ///   - height: the height in pixels.
    ///   - format: the pixel format.
    ///   - bytesPerRow: the row stride; `nil` (the default) packs rows tightly.
    /// - Throws: ``CodecError/invalidDimensions(width:height:)`` when a dimension is not positive, the stride is too
    ///   small, or the size in bytes overflows `Int`.
    public init(width: Int, height: Int, format: PixelFormat, bytesPerRow: Int? = nil) throws(CodecError) {
        let packed = width.multipliedReportingOverflow(by: format.bytesPerPixel)
        guard width > 0, height > 0, !packed.overflow else {
            throw .invalidDimensions(width: width, height: height)
        }
        let stride = bytesPerRow ?? packed.partialValue
        let total = stride.multipliedReportingOverflow(by: height)
        guard stride >= packed.partialValue, !total.overflow else {
            throw .invalidDimensions(width: width, height: height)
        }
        self.width = width
        self.height = height
        self.format = format
        self.bytesPerRow = stride
        self.storage = try Storage(byteCount: total.partialValue)
    }

    /// Makes a tightly packed buffer holding a copy of `bytes`, which must be exactly `width * height *
    /// format.bytesPerPixel` long.
    public init(width: Int, height: Int, format: PixelFormat, bytes: some Collection<UInt8>) throws(CodecError) {
        try self.init(width: width, height: height, format: format)
        guard bytes.count == byteCount else {
            throw .invalidDimensions(width: width, height: height)
        }
        storage.pointer.initializeMemory(as: UInt8.self, from: Array(bytes), count: byteCount)
    }

    /// Takes ownership of `pointer`, a block of `bytesPerRow * height` bytes from `osprey_pixels_allocate` that a C
    /// decoder filled; it is released when the last copy of the buffer goes.
    init(adopting pointer: UnsafeMutableRawPointer, width: Int, height: Int, format: PixelFormat, bytesPerRow: Int) {
        self.width = width
        self.height = height
        self.format = format
        self.bytesPerRow = bytesPerRow
        self.storage = Storage(adopting: pointer, byteCount: bytesPerRow * height)
    }

    /// The size of the pixel storage in bytes (`bytesPerRow * height`); what a memory cache charges for it.
    public var byteCount: Int { storage.byteCount }

    /// The bytes held for reuse: large pixel buffers (4 MiB and up) freed recently stay mapped, at most 4 of them and
    /// 256 MiB in all, so that the next buffer of about the same size is written into resident pages instead of
    /// fresh ones (a repeated 33-megapixel decode is 1.6x faster for it).
    public static var recycledByteCount: Int { osprey_pixels_recycled_bytes() }

    /// Unmaps the recycled buffers (``recycledByteCount`` becomes 0). The memory-pressure monitor calls this on a
    /// warning; call it after a burst of large decodes to give the memory back at once.
    public static func releaseRecycledMemory() { osprey_pixels_release_recycled() }

    /// Calls `body` with the pixel bytes, valid only for the duration of the call.
    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafeRawBufferPointer(start: storage.pointer, count: storage.byteCount))
    }

    /// Calls `body` with the pixel bytes for writing, first copying them if another buffer shares them.
    public mutating func withUnsafeMutableBytes<Result, Failure: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        if !isKnownUniquelyReferenced(&storage) {
            storage = storage.copy()
        }
        return try body(UnsafeMutableRawBufferPointer(start: storage.pointer, count: storage.byteCount))
    }

    /// The bytes of row `y` (0 is the top), `width * format.bytesPerPixel` long, without the stride's padding.
    public func row(_ y: Int) -> [UInt8] {
        precondition((0..<height).contains(y), "row \(y) is outside 0..<\(height)")
        return withUnsafeBytes { bytes in
            let start = y * bytesPerRow
            return Array(bytes[start..<start + width * format.bytesPerPixel])
        }
    }
}

extension PixelBuffer: Equatable {
    /// Two buffers are equal when their size, format and visible pixels are equal; stride padding is ignored.
    public static func == (lhs: PixelBuffer, rhs: PixelBuffer) -> Bool {
        guard lhs.width == rhs.width, lhs.height == rhs.height, lhs.format == rhs.format else { return false }
        if lhs.storage === rhs.storage { return true }
        let rowLength = lhs.width * lhs.format.bytesPerPixel
        return lhs.withUnsafeBytes { a in
            rhs.withUnsafeBytes { b in
                (0..<lhs.height).allSatisfy { y in
                    memcmp(a.baseAddress! + y * lhs.bytesPerRow, b.baseAddress! + y * rhs.bytesPerRow, rowLength) == 0
                }
            }
        }
    }
}

extension PixelBuffer {
    /// Owns the C allocation behind a `PixelBuffer`.
    ///
    /// `@unchecked Sendable` because it owns a C pointer: the bytes are written only through
    /// `PixelBuffer.withUnsafeMutableBytes`, which first makes sure this storage is not shared (copy on write), so no
    /// two tasks ever write, or read while another writes, the same allocation.
    private final class Storage: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        let byteCount: Int

        init(byteCount: Int) throws(CodecError) {
            // Zeroed; large buffers are mappings of their own, recycled (see osprey_pixels_allocate).
            guard let pointer = osprey_pixels_allocate(byteCount) else {
                throw .outOfMemory(byteCount: byteCount)
            }
            self.pointer = pointer
            self.byteCount = byteCount
        }

        init(adopting pointer: UnsafeMutableRawPointer, byteCount: Int) {
            self.pointer = pointer
            self.byteCount = byteCount
        }

        func copy() -> Storage {
            // The same size as an allocation that already succeeded: failing here means the process is out of memory,
            // which Swift treats as fatal for every allocation it makes.
            guard let copy = try? Storage(byteCount: byteCount) else {
                fatalError("out of memory copying \(byteCount) bytes of pixels")
            }
            copy.pointer.copyMemory(from: pointer, byteCount: byteCount)
            return copy
        }

        deinit {
            osprey_pixels_free(pointer, byteCount)
        }
    }
}
