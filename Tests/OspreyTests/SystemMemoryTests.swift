import Testing

@testable import Osprey

@Suite struct SystemMemoryTests {
    @Test("MemTotal and MemAvailable are read from /proc/meminfo text")
    func meminfo() {
        let text = """
            MemTotal:       24684084 kB
            MemFree:         1000000 kB
            MemAvailable:   23768756 kB
            Buffers:          123456 kB
            """
        #expect(
            SystemMemory.parseMeminfo(text) == SystemMemory(limit: 24_684_084 * 1024, available: 23_768_756 * 1024))
        #expect(SystemMemory.parseMeminfo("garbage") == nil)
    }

    @Test("a cgroup limit counts reclaimable page cache as available")
    func cgroup() {
        // v2: 1 GiB limit, 900 MiB used of which 300 MiB is inactive page cache
        let stat = "anon 629145600\nfile 314572800\ninactive_file 314572800\nactive_file 0\n"
        #expect(
            SystemMemory.parseCgroup(limit: "1073741824\n", usage: "943718400\n", stat: stat)
                == SystemMemory(limit: 1_073_741_824, available: 1_073_741_824 - 629_145_600))
        // No limit: v2's "max", v1's huge page-rounded maximum
        #expect(SystemMemory.parseCgroup(limit: "max\n", usage: "1000", stat: nil) == nil)
        #expect(SystemMemory.parseCgroup(limit: "9223372036854771712\n", usage: "1000", stat: nil) == nil)
        // v1's memory.stat names it total_inactive_file
        #expect(
            SystemMemory.parseCgroup(limit: "1000", usage: "900", stat: "total_inactive_file 400")
                == SystemMemory(limit: 1000, available: 500))
        #expect(
            SystemMemory.parseCgroupPath("12:memory:/x\n0::/system.slice/osprey.service\n")
                == "/system.slice/osprey.service")
    }

    @Test("pressure levels: warning under 10% available, critical under 5%")
    func pressure() {
        #expect(SystemMemory(limit: 100, available: 50).pressure == .normal)
        #expect(SystemMemory(limit: 100, available: 10).pressure == .normal)
        #expect(SystemMemory(limit: 100, available: 9).pressure == .warning)
        #expect(SystemMemory(limit: 100, available: 4).pressure == .critical)
    }

    @Test("this machine's reading, and the default cache limit derived from it")
    func current() throws {
        let memory = try #require(SystemMemory.current())
        #expect(memory.limit > 0)
        #expect((0...memory.limit).contains(memory.available))
        #expect(SystemMemory.defaultCacheCostLimit == min(Int(Double(memory.limit) * 0.15), 1 << 30))
    }
}
