public import Dispatch
import Foundation

#if canImport(Glibc)
public import Glibc
#endif

/// Runs a child with `posix_spawn`, for the tests that start thousands: Foundation's `Process.run()` on Linux (Swift
/// 6.3.1) reads 256 bytes of each `/proc/self/fd` entry however long it is, and now and then past the end of libc's
/// buffer into an unmapped page (swift-corelibs-foundation #5472, fixed after this toolchain): one crash of the
/// whole test process in a few suite runs. Standard input, output and error are files (or /dev/null); every other
/// descriptor is closed in the child.
public enum ChildProcess {
    public struct Outcome: Sendable {
        public let status: Int32
        /// The signal that ended the child, when one did.
        public let signal: Int32?
        public let timedOut: Bool
    }

    public struct SpawnFailed: Error {
        public let code: Int32
    }

    public typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// `posix_spawn_file_actions_addclosefrom_np`, when libc has it.
    public static let addCloseFrom: AddCloseFrom? = dlsym(
        UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np"
    )
    .map { unsafeBitCast($0, to: AddCloseFrom.self) }

    /// Runs `path` with `arguments` and `environment` (the test's own when `nil`), its output to the files named (or
    /// discarded); kills it after `timeout`. It blocks its thread until the child ends: from async code, call it in
    /// ``onOwnThread(_:)``, not on the few threads every task (and every in-process server) shares.
    /// Starts `path` with `arguments` (standard input, output and error from and to the files named, `/dev/null`
    /// when none, no other descriptor inherited) and returns its process id; the caller waits for it. `posix_spawn`,
    /// not Foundation's `Process`, whose `run()` crashed in a copy when tests on several threads started processes
    /// at once.
    public static func spawn(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil, input: String? = nil,
        output: String? = nil, error: String? = nil
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, input ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, error ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // glibc 2.34's closefrom action, which Swift's Glibc module does not declare: found at run time.
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard code == 0 else { throw SpawnFailed(code: code) }
        return pid
    }

    public static func run(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil, input: String? = nil,
        output: String? = nil, error: String? = nil, timeout: DispatchTimeInterval? = nil
    ) throws -> Outcome {
        let pid = try spawn(path, arguments, environment: environment, input: input, output: output, error: error)

        // The wait on a thread of its own, so that the timeout can kill the child while it is blocked.
        let ended = DispatchSemaphore(value: 0)
        let child = pid
        nonisolated(unsafe) var status: Int32 = 0
        let waiter = Thread {
            while waitpid(child, &status, 0) == -1 && errno == EINTR {}
            ended.signal()
        }
        waiter.start()
        var timedOut = false
        if let timeout, ended.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            kill(pid, SIGKILL)
            ended.wait()
        } else if timeout == nil {
            ended.wait()
        }
        let signaled = status & 0x7F != 0 && status & 0x7F != 0x7F
        return Outcome(
            status: signaled ? status & 0x7F : (status >> 8) & 0xFF,
            signal: signaled && !timedOut ? status & 0x7F : nil,
            timedOut: timedOut)
    }
}
