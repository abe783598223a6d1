import OspreyCodecs
import Synchronization

/// How short of memory the process is.
public enum MemoryPressure: Int, Sendable, Comparable, CustomStringConvertible {
    /// Plenty left.
    case normal
    /// Under 10% of the process's limit left: caches shed half of what they hold.
    case warning
    /// Under 5% left: caches shed everything.
    case critical

    /// Whether `lhs` is milder than `rhs`.
    public static func < (lhs: MemoryPressure, rhs: MemoryPressure) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The value as logs and messages print it.
    public var description: String {
        switch self {
        case .normal: "normal"
        case .warning: "warning"
        case .critical: "critical"
        }
    }
}

/// Something that sheds memory when told to: ``MemoryCache`` is one.
public protocol MemoryPressureResponder: AnyObject, Sendable {
    /// Called from the monitor's task whenever the pressure level changes, and again on every reading while it stays
    /// above normal (so a cache that refilled is trimmed again).
    func handleMemoryPressure(_ pressure: MemoryPressure)
}

/// Reads the process's memory (``SystemMemory``) every ``interval`` while at least one responder is registered, and
/// tells the responders when memory is short. Linux has no memory-pressure notification a library can subscribe to
/// without privileges, so this polls: one read of two small kernel files per interval, in one task per monitor.
///
/// Caches register with ``shared`` on their own (``MemoryCache/Configuration/respondsToMemoryPressure``). Responders
/// are held weakly; the polling task ends when the last one is gone.
public final class MemoryPressureMonitor: Sendable {
    /// The process-wide monitor, reading ``SystemMemory/current()`` every 5 seconds.
    public static let shared = MemoryPressureMonitor()

    /// How often memory is read while a responder is registered.
    public let interval: Duration

    private let read: @Sendable () -> SystemMemory?
    private let sleep: @Sendable (Duration) async throws -> Void
    private let state = Mutex(State())

    private struct State {
        var responders: [ObjectIdentifier: WeakResponder] = [:]
        var isPolling = false
        var pressure = MemoryPressure.normal
    }

    private struct WeakResponder {
        weak var responder: (any MemoryPressureResponder)?
    }

    /// Makes a monitor that reads memory with `read` every `interval` of `clock`.
    public init<C: Clock>(
        interval: Duration = .seconds(5),
        clock: C,
        read: @escaping @Sendable () -> SystemMemory? = { SystemMemory.current() }
    ) where C.Duration == Duration {
        self.interval = interval
        self.read = read
        self.sleep = { try await clock.sleep(for: $0) }
    }

    /// Makes a monitor that reads ``SystemMemory/current()`` every `interval` of the continuous clock.
    public convenience init(interval: Duration = .seconds(5)) {
        self.init(interval: interval, clock: ContinuousClock())
    }

    /// The level seen at the last reading.
    public var pressure: MemoryPressure { state.withLock { $0.pressure } }

    /// Adds `responder` (held weakly), starting the polling task if it is not running.
    public func register(_ responder: some MemoryPressureResponder) {
        let starts = state.withLock { state in
            state.responders[ObjectIdentifier(responder)] = WeakResponder(responder: responder)
            defer { state.isPolling = true }
            return !state.isPolling
        }
        if starts {
            Task.detached { [self] in await poll() }
        }
    }

    /// Removes `responder`.
    public func unregister(_ responder: some MemoryPressureResponder) {
        let identifier = ObjectIdentifier(responder)
        state.withLock { _ = $0.responders.removeValue(forKey: identifier) }
    }

    /// Reads memory until no responder is left, telling them about every reading above normal and every change.
    private func poll() async {
        while true {
            let reading = read()?.pressure ?? .normal
            let responders = state.withLock { state -> [any MemoryPressureResponder]? in
                state.responders = state.responders.filter { $0.value.responder != nil }
                guard !state.responders.isEmpty else {
                    state.isPolling = false
                    return nil
                }
                let changed = reading != state.pressure
                state.pressure = reading
                return changed || reading > .normal ? state.responders.values.compactMap(\.responder) : []
            }
            guard let responders else { return }
            // The decoders' recycled pixel buffers are memory nobody uses: the first thing to give back.
            if reading > .normal { PixelBuffer.releaseRecycledMemory() }
            // Outside the lock: a responder may take its own locks, or register another responder.
            for responder in responders {
                responder.handleMemoryPressure(reading)
            }
            do {
                try await sleep(interval)
            } catch {
                state.withLock { $0.isPolling = false }
                return
            }
        }
    }
}
