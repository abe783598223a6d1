#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How much memory this process may use and how much of it is free: the cgroup's limit and working set when the
/// process runs in one with a limit (cgroup v2 `memory.max`, or v1 `memory.limit_in_bytes`), else the machine's
/// physical and available memory (`/proc/meminfo`).
public struct SystemMemory: Sendable, Equatable {
    /// The most memory the process may use, in bytes.
    public var limit: Int
    /// How much of ``limit`` is free or reclaimable (page cache that is not in active use), in bytes.
    public var available: Int

    /// Makes a reading.
    public init(limit: Int, available: Int) {
        self.limit = limit
        self.available = available
    }

    /// How tight memory is: ``MemoryPressure/critical`` under 5% available, ``MemoryPressure/warning`` under 10%.
    public var pressure: MemoryPressure {
        guard limit > 0 else { return .normal }
        let fraction = Double(available) / Double(limit)
        return fraction < 0.05 ? .critical : fraction < 0.10 ? .warning : .normal
    }

    /// Reads the memory available to this process now; `nil` where neither cgroups nor `/proc/meminfo` exist.
    public static func current() -> SystemMemory? {
        let machine = readFile("/proc/meminfo").flatMap(Self.parseMeminfo)
        let physical = machine?.limit ?? physicalMemory()
        guard let physical else { return nil }
        var reading = machine ?? SystemMemory(limit: physical, available: physical)
        if let group = cgroup(), group.limit < reading.limit {
            reading = SystemMemory(limit: group.limit, available: min(group.available, reading.available))
        }
        return reading
    }

    /// The default ``MemoryCache`` cost limit: 15% of the memory available to the process, capped at 1 GiB.
    public static let defaultCacheCostLimit: Int = {
        let limit = current()?.limit ?? physicalMemory() ?? (1 << 30)
        return min(Int(Double(limit) * 0.15), 1 << 30)
    }()

    // MARK: Parsing (pure, so tests can feed it text)

    /// `MemTotal` and `MemAvailable` from the text of `/proc/meminfo` (values in kB).
    static func parseMeminfo(_ text: String) -> SystemMemory? {
        var total: Int?
        var available: Int?
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, let kilobytes = Int(fields[1]) else { continue }
            switch fields[0] {
            case "MemTotal:": total = kilobytes * 1024
            case "MemAvailable:": available = kilobytes * 1024
            default: break
            }
        }
        guard let total else { return nil }
        return SystemMemory(limit: total, available: available ?? total)
    }

    /// A cgroup's limit from `memory.max` (v2; `max` means none) or `memory.limit_in_bytes` (v1; a huge value
    /// means none), its usage, and its inactive page cache from `memory.stat` (`inactive_file`, or v1's
    /// `total_inactive_file`), which the kernel reclaims before it runs out. `nil` without a limit.
    static func parseCgroup(limit: String, usage: String, stat: String?) -> SystemMemory? {
        let limitText = limit.trimmingWhitespace
        guard limitText != "max", let limit = Int(limitText), limit > 0, limit < 1 << 62 else { return nil }
        guard let usage = Int(usage.trimmingWhitespace) else { return nil }
        var inactiveFile = 0
        for line in (stat ?? "").split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 2, fields[0] == "inactive_file" || fields[0] == "total_inactive_file",
                let value = Int(fields[1])
            {
                inactiveFile = value
            }
        }
        let workingSet = max(usage - inactiveFile, 0)
        return SystemMemory(limit: limit, available: max(limit - workingSet, 0))
    }

    /// The v2 cgroup path of this process from the text of `/proc/self/cgroup` (the `0::` line).
    static func parseCgroupPath(_ text: String) -> String? {
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            return String(line.dropFirst(3))
        }
        return nil
    }

    // MARK: Reading the files

    private static func cgroup() -> SystemMemory? {
        // cgroup v2: the process's own group, then the root of the mount (a container's view).
        var directories = ["/sys/fs/cgroup"]
        if let path = readFile("/proc/self/cgroup").flatMap(parseCgroupPath), path != "/" {
            directories.insert("/sys/fs/cgroup" + path, at: 0)
        }
        for directory in directories {
            if let limit = readFile(directory + "/memory.max"), let usage = readFile(directory + "/memory.current") {
                return parseCgroup(limit: limit, usage: usage, stat: readFile(directory + "/memory.stat"))
            }
        }
        let v1 = "/sys/fs/cgroup/memory"
        if let limit = readFile(v1 + "/memory.limit_in_bytes"), let usage = readFile(v1 + "/memory.usage_in_bytes") {
            return parseCgroup(limit: limit, usage: usage, stat: readFile(v1 + "/memory.stat"))
        }
        return nil
    }

    private static func physicalMemory() -> Int? {
        let pages = sysconf(Int32(_SC_PHYS_PAGES))
        let pageSize = sysconf(Int32(_SC_PAGESIZE))
        return pages > 0 && pageSize > 0 ? pages * pageSize : nil
    }

    /// A small kernel-generated file's text (procfs and cgroupfs files are in memory: reading them does not block).
    static func readFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
