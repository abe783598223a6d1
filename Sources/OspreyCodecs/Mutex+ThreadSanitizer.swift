#if OSPREY_TSAN
#if canImport(Glibc)
public import Glibc
#elseif canImport(Musl)
public import Musl
#elseif canImport(Darwin)
public import Darwin
#endif

/// Only in the ThreadSanitizer build (`make test-tsan` defines `OSPREY_TSAN`): a pthread mutex standing in
/// for the standard library's `Mutex`, which it shadows within this module.
///
/// The standard library's `Mutex` locks with atomics and futexes inside the standard library, which is not built with
/// ThreadSanitizer, so TSan sees no ordering between two threads' locked sections and reports every guarded access as
/// a race. `pthread_mutex_lock` and `pthread_mutex_unlock` are intercepted by TSan, so with this lock it checks what
/// matters: that every shared access is made under the lock. The code under test is otherwise the same.
///
/// It lives in the lowest Swift layer, which locks with it too (``IncrementalImageDecoder``); `Osprey` declares a
/// `Mutex` of its own that forwards to it. Public in this build only.
///
/// `@unchecked Sendable`: it owns a lock (and a C pointer to it), and `value` is only touched while holding it.
public final class Mutex<Value>: @unchecked Sendable {
    @usableFromInline let handle: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    /// Makes a lock guarding `value`.
    public init(_ value: sending Value) {
        self.value = value
        handle = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        handle.initialize(to: pthread_mutex_t())
        pthread_mutex_init(handle, nil)
    }

    deinit {
        pthread_mutex_destroy(handle)
        handle.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    @inlinable
    /// Runs `body` with the value while holding the lock.
    public func withLock<Result, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(handle)
        defer { pthread_mutex_unlock(handle) }
        return try body(&value)
    }
}
#endif
