public import Dispatch
import Foundation

#if canImport(Glibc)
public import Glibc
#endif

/// Starts children with `posix_spawn`, for every test that runs a process: Foundation's `Process.run()` on Linux
/// (Swift 6.3.1) reads 256 bytes of each `/proc/self/fd` entry however long it is, and now and then past the end of
/// libc's buffer into an unmapped page (swift-corelibs-foundation #5472, fixed after this toolchain): one crash of
/// the whole test process in a few suite runs, more often when tests on several threads start processes at once.
/// Standard input, output and error are what ``Stream`` says; every other descriptor is closed in the child.
public enum ChildProcess {
    /// How a child process ended.
    public struct Outcome: Sendable {
        /// Its exit status (or the signal that ended it).
        public let status: Int32
        /// The signal that ended the child, when one did.
        public let signal: Int32?
        /// Whether it was killed for running past its time limit.
        public let timedOut: Bool
    }

    /// `posix_spawn` could not start the process.
    public struct SpawnFailed: Error {
        /// The error number `posix_spawn` returned.
        public let code: Int32
    }

    /// Where one of the child's standard streams comes from or goes to.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// The file at the path, read, or created (truncated) and written.
        case file(String)
        /// A copy of the descriptor: the read or write end of a ``pipe()``, or 1 for standard error to go where
        /// standard output goes.
        case descriptor(Int32)

        /// The file at `path`, or `/dev/null` when there is none.
        public static func path(_ path: String?) -> Stream { path.map(Stream.file) ?? .null }
    }

    /// The type of `posix_spawn_file_actions_addclosefrom_np`, looked up at run time.
    public typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// `posix_spawn_file_actions_addclosefrom_np`, when libc has it.
    public static let addCloseFrom: AddCloseFrom? = dlsym(
        UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np"
    )
    .map { unsafeBitCast($0, to: AddCloseFrom.self) }

    /// Starts `path` with `arguments` and `environment` (the test's own when `nil`), its standard streams as given, no
    /// other descriptor inherited, and returns its process id; the caller waits for it with ``wait(_:)``.
    public static func spawn(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil, input: Stream = .null,
        output: Stream = .null, error: Stream = .null
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // In order: standard error may copy standard output, opened just before it.
        for (descriptor, stream) in [(Int32(0), input), (1, output), (2, error)] {
            switch stream {
            case .null:
                let flags = descriptor == 0 ? O_RDONLY : O_WRONLY
                posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", flags, 0)
            case .file(let file):
                let flags = descriptor == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC
                posix_spawn_file_actions_addopen(&actions, descriptor, file, flags, 0o644)
            case .descriptor(let source):
                posix_spawn_file_actions_adddup2(&actions, source, descriptor)
            }
        }
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

    /// Waits for the child `pid` to end, blocking the calling thread (from async code, in ``onOwnThread(_:)``).
    public static func wait(_ pid: pid_t) -> Outcome {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return outcome(status, timedOut: false)
    }

    /// A pipe whose ends are closed on `exec`, so that no other child inherits them and keeps the reader from seeing
    /// the end; ``spawn(_:_:environment:input:output:error:)`` copies an end onto the child's stream. (`pipe2`, which
    /// would set the flag atomically, is not in Swift's Glibc module; every child started here closes what it
    /// inherits past its standard streams anyway.)
    public static func pipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        guard Glibc.pipe(&ends) == 0 else { throw SpawnFailed(code: errno) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    /// Everything readable from `descriptor` until its end (then closes it), blocking the calling thread.
    public static func readToEnd(_ descriptor: Int32) -> [UInt8] {
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                bytes += buffer[..<count]
            } else if count == 0 || errno != EINTR {
                return bytes
            }
        }
    }

    /// Runs `path` with `arguments` and `environment` (the test's own when `nil`) to its end, its streams as given;
    /// kills it after `timeout`. It blocks its thread until the child ends: from async code, call it in
    /// ``onOwnThread(_:)``, not on the few threads every task (and every in-process server) shares.
    public static func run(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil, input: Stream = .null,
        output: Stream = .null, error: Stream = .null, timeout: DispatchTimeInterval? = nil
    ) throws -> Outcome {
        let pid = try spawn(path, arguments, environment: environment, input: input, output: output, error: error)
        guard let timeout else { return wait(pid) }

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
        if ended.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            kill(pid, SIGKILL)
            ended.wait()
        }
        return outcome(status, timedOut: timedOut)
    }

    private static func outcome(_ status: Int32, timedOut: Bool) -> Outcome {
        let signaled = status & 0x7F != 0 && status & 0x7F != 0x7F
        return Outcome(
            status: signaled ? status & 0x7F : (status >> 8) & 0xFF,
            signal: signaled && !timedOut ? status & 0x7F : nil,
            timedOut: timedOut)
    }
}
