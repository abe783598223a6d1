internal import COspreyCodecShims

/// Stops a decode under way: set one on ``DecodingOptions/cancellation``, call ``cancel()`` from any thread, and the
/// decode throws ``CodecError/cancelled`` at its decoder's next checkpoint. JPEG checks at every row group of every
/// scan it reads (a progressive file's passes included) and every batch of rows it writes, PNG before every row
/// libpng decodes (the fast path of intact 8-bit files inflates in one call); every decoder checks before it starts.
/// Other formats' libraries decode to their end once started.
///
/// ```swift
/// let cancellation = DecodingCancellation()
/// var options = DecodingOptions()
/// options.cancellation = cancellation
/// let decode = Task.detached { try ImageDecoder.decode(bytes, options: options) }
/// cancellation.cancel()          // the decode throws CodecError.cancelled soon after
/// ```
///
/// Every cancellation compares equal and hashes alike: it does not change what a decode makes, so options that
/// differ only in it decode the same image.
public final class DecodingCancellation: @unchecked Sendable, Hashable {
    // @unchecked Sendable: it owns a C flag, written and read only with atomic operations (osprey_cancel_set/get),
    // which the decoder's thread reads while another thread sets it.
    let flag: UnsafeMutablePointer<Int32>

    /// Makes a cancellation not yet cancelled.
    public init() {
        flag = .allocate(capacity: 1)
        flag.initialize(to: 0)
    }

    deinit {
        flag.deallocate()
    }

    /// Asks every decode using it to stop at its next checkpoint.
    public func cancel() {
        osprey_cancel_set(flag)
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { osprey_cancel_get(flag) != 0 }

    /// Every cancellation is equal: see the type's documentation.
    public static func == (lhs: DecodingCancellation, rhs: DecodingCancellation) -> Bool { true }

    /// Hashes nothing: every cancellation is equal.
    public func hash(into hasher: inout Hasher) {}
}
