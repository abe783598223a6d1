import NIOConcurrencyHelpers

/// A latch a test opens to let held ``OriginServer`` responses go, so a test controls exactly when the origin answers
/// instead of sleeping and hoping.
///
/// ```swift
/// let gate = OriginGate()
/// server.route("/a.jpg", .ok(bytes).held(by: gate))
/// // ... start several loads, await server.waitForRequests(to: "/a.jpg", count: 1) ...
/// gate.open()
/// ```
public final class OriginGate: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [@Sendable () -> Void] = []
    }

    private let state = NIOLockedValueBox(State())

    /// Makes a closed gate.
    public init() {}

    /// Whether ``open()`` has been called.
    public var isOpen: Bool { state.withLockedValue { $0.isOpen } }

    /// Opens the gate: every held response, and every later one, proceeds.
    public func open() {
        let waiters = state.withLockedValue { state in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter() }
    }

    /// Runs `action` once the gate is open: now if it already is.
    func whenOpen(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLockedValue { state in
            if !state.isOpen { state.waiters.append(action) }
            return state.isOpen
        }
        if runNow { action() }
    }
}
