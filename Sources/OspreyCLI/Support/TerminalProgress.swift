import Dispatch
import FoundationEssentials
import OspreyCommandLine
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Progress bars on standard error, redrawn in place: one per download under way (bytes received of expected, or a
/// spinner when the length is unknown) and an overall line. Only on a terminal and without `--quiet`: otherwise it
/// prints nothing at all, so piped output has no escape codes. Colour unless `NO_COLOR` is set.
///
/// Results (standard output) are printed through ``printResult(_:)``, which lifts the bars, prints the line and puts
/// them back, so the two streams never garble each other on one terminal. Redraws are at most every 100 ms. The bars
/// are cleared, and the cursor shown again, by ``finish()`` and on Ctrl-C.
final class TerminalProgress: Sendable {
    struct Bar {
        var label: String
        var received = 0
        var expected: Int?
    }

    private struct State {
        var bars: [Int: Bar] = [:]
        var order: [Int] = []
        var done = 0
        var failed = 0
        var drawnLines = 0
        var lastDraw = ContinuousClock.now - .seconds(1)
        var spinner = 0
    }

    let isEnabled: Bool
    let usesColor: Bool
    private let total: Int
    private let verb: String
    private let state = Mutex(State())
    private let interrupt = Mutex<(any DispatchSourceSignal)?>(nil)

    /// A display for `total` items ("fetched 3/10"); enabled only when standard error is a terminal and not `quiet`.
    init(total: Int, verb: String, quiet: Bool, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.total = total
        self.verb = verb
        isEnabled = !quiet && isatty(STDERR_FILENO) == 1
        usesColor = isEnabled && (environment["NO_COLOR"] ?? "").isEmpty
        guard isEnabled else { return }
        write("\u{1B}[?25l")  // hide the cursor while drawing
        // Ctrl-C: clear the bars and show the cursor before exiting with the conventional 130.
        signal(SIGINT, SIG_IGN)
        interrupt.withLock { interrupt in
            let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
            source.setEventHandler { [self] in
                finish()
                exit(130)
            }
            source.resume()
            interrupt = source
        }
    }

    func start(_ id: Int, label: String) {
        guard isEnabled else { return }
        state.withLock { state in
            state.bars[id] = Bar(label: label)
            state.order.append(id)
        }
        redraw(force: true)
    }

    func update(_ id: Int, received: Int, expected: Int?) {
        guard isEnabled else { return }
        state.withLock { state in
            state.bars[id]?.received = received
            state.bars[id]?.expected = expected
        }
        redraw(force: false)
    }

    /// Ends item `id` (failed or not) and prints `line` on standard output above the bars.
    func complete(_ id: Int, failed: Bool, line: String?) {
        guard isEnabled else {
            if let line { print(line) }
            return
        }
        state.withLock { state in
            state.bars[id] = nil
            state.order.removeAll { $0 == id }
            state.done += 1
            if failed { state.failed += 1 }
        }
        if let line { printResult(line) } else { redraw(force: true) }
    }

    /// Counts from elsewhere (the prefetcher's): `done` of the total, `failed` of them failed.
    func setCounts(done: Int, failed: Int) {
        guard isEnabled else { return }
        state.withLock { state in
            state.done = done
            state.failed = failed
        }
        redraw(force: done == total)
    }

    /// Prints a result line on standard output, the bars lifted meanwhile.
    func printResult(_ line: String) {
        guard isEnabled else { return print(line) }
        state.withLock { state in
            erase(&state)
            // Unbuffered, so it reaches the terminal before the bars are drawn again.
            StandardStream.output.write(line + "\n")
            draw(&state)
        }
    }

    /// Clears the bars and shows the cursor again; nothing more is drawn.
    func finish() {
        guard isEnabled else { return }
        interrupt.withLock { source in
            source?.cancel()
            source = nil
        }
        state.withLock { state in
            erase(&state)
            state.order = []
            state.bars = [:]
        }
        write("\u{1B}[?25h")
    }

    // MARK: Drawing (under the lock)

    private func redraw(force: Bool) {
        state.withLock { state in
            let now = ContinuousClock.now
            guard force || now - state.lastDraw >= .milliseconds(100) else { return }
            erase(&state)
            draw(&state)
        }
    }

    private func erase(_ state: inout State) {
        guard state.drawnLines > 0 else { return }
        write(String(repeating: "\u{1B}[1A\u{1B}[2K", count: state.drawnLines) + "\r")
        state.drawnLines = 0
    }

    private func draw(_ state: inout State) {
        state.lastDraw = ContinuousClock.now
        state.spinner += 1
        var lines = state.order.prefix(8).compactMap { state.bars[$0] }.map { line(for: $0, spinner: state.spinner) }
        if state.order.count > 8 { lines.append("  … and \(state.order.count - 8) more") }
        let failed = state.failed > 0 ? ", \(state.failed) failed" : ""
        lines.append(
            "\(verb) \(state.done)/\(total)\(failed) "
                + bar(fraction: total == 0 ? 1 : Double(state.done) / Double(total)))
        write(lines.map { $0 + "\n" }.joined())
        state.drawnLines = lines.count
    }

    private func line(for bar: Bar, spinner: Int) -> String {
        let name = bar.label.count > 40 ? "…" + bar.label.suffix(39) : bar.label
        guard let expected = bar.expected, expected > 0 else {
            let frames: [Character] = ["|", "/", "-", "\\"]
            return "  \(frames[spinner % 4]) \(Self.size(bar.received))  \(name)"
        }
        let fraction = min(Double(bar.received) / Double(expected), 1)
        return
            "  \(self.bar(fraction: fraction)) \(Int(fraction * 100))% \(Self.size(bar.received))/\(Self.size(expected))  \(name)"
    }

    private func bar(fraction: Double) -> String {
        let width = 24
        let filled = Int((fraction * Double(width)).rounded(.down))
        let body = String(repeating: "=", count: filled) + String(repeating: " ", count: width - filled)
        return usesColor ? "[\u{1B}[32m\(body)\u{1B}[0m]" : "[\(body)]"
    }

    static func size(_ bytes: Int) -> String {
        switch bytes {
        case ..<1024: "\(bytes) B"
        case ..<(1 << 20): oneDecimal(Double(bytes) / 1024) + " KiB"
        default: oneDecimal(Double(bytes) / Double(1 << 20)) + " MiB"
        }
    }

    /// `value` rounded to one decimal place, as `%.1f` writes it (a half to even: sizes in KiB and MiB are exact
    /// binary fractions, so their tenths are too).
    static func oneDecimal(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded(.toNearestOrEven))
        return "\(tenths / 10).\(tenths % 10)"
    }

    private func write(_ text: String) {
        StandardStream.error.write(text)
    }
}
