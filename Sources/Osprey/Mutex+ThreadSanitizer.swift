#if OSPREY_TSAN
public import OspreyCodecs

/// Only in the ThreadSanitizer build: this module's `Mutex`, shadowing the standard library's, is the pthread-based
/// stand-in that TSan can see (OspreyCodecs' Mutex+ThreadSanitizer.swift explains why). It forwards to that one;
/// declared here, it is found without each file importing OspreyCodecs. Public (in this build only) so that the test
/// targets can share it.
///
/// `@unchecked Sendable`: it owns a lock, which guards the value.
public final class Mutex<Value>: @unchecked Sendable {
    @usableFromInline let base: OspreyCodecs.Mutex<Value>

    /// Makes a lock guarding `value`.
    public init(_ value: sending Value) {
        base = OspreyCodecs.Mutex(value)
    }

    /// Runs `body` with the value, holding the lock.
    @inlinable
    /// Runs `body` with the value while holding the lock.
    public func withLock<Result, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try base.withLock(body)
    }
}
#endif
