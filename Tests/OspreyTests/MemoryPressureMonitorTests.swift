import Osprey
import OspreyTesting
import Synchronization
import Testing

@Suite struct MemoryPressureMonitorTests {
    /// Records the levels it is told about.
    final class Recorder: MemoryPressureResponder {
        let levels = Mutex<[MemoryPressure]>([])
        func handleMemoryPressure(_ pressure: MemoryPressure) { levels.withLock { $0.append(pressure) } }
    }

    @Test("responders hear of every reading above normal and of the return to normal")
    func levels() async {
        // Given a monitor reading a scripted memory level every 5 s of a test clock
        let clock = TestClock()
        let memory = Mutex(SystemMemory(limit: 1000, available: 500))
        let monitor = MemoryPressureMonitor(interval: .seconds(5), clock: clock) { memory.withLock { $0 } }
        let recorder = Recorder()

        // When a responder registers, and memory then runs short, stays short, and recovers
        monitor.register(recorder)
        await clock.waitForSleepers(count: 1)
        #expect(recorder.levels.withLock { $0 } == [])
        memory.withLock { $0.available = 80 }
        clock.advance(by: .seconds(5))
        await clock.waitForSleepers(count: 1)
        #expect(monitor.pressure == .warning)
        clock.advance(by: .seconds(5))
        await clock.waitForSleepers(count: 1)
        memory.withLock { $0.available = 10 }
        clock.advance(by: .seconds(5))
        await clock.waitForSleepers(count: 1)
        memory.withLock { $0.available = 600 }
        clock.advance(by: .seconds(5))
        await clock.waitForSleepers(count: 1)

        // Then it heard warning twice, critical, then normal
        #expect(recorder.levels.withLock { $0 } == [.warning, .warning, .critical, .normal])
        monitor.unregister(recorder)
    }

    @Test("a cache registered with a monitor trims itself under pressure")
    func cacheTrims() async {
        // Given a cache of ten entries registered with a monitor that reads a warning level
        let clock = TestClock()
        let memory = Mutex(SystemMemory(limit: 1000, available: 500))
        let monitor = MemoryPressureMonitor(interval: .seconds(1), clock: clock) { memory.withLock { $0 } }
        var configuration = MemoryCache<Int, Int>.Configuration(costLimit: 1000)
        configuration.respondsToMemoryPressure = false
        let cache = MemoryCache<Int, Int>(configuration: configuration)
        for key in 0..<10 { cache.setValue(key, forKey: key, cost: 10) }
        monitor.register(cache)
        await clock.waitForSleepers(count: 1)
        #expect(cache.totalCost == 100)

        // When memory runs short
        memory.withLock { $0.available = 50 }
        clock.advance(by: .seconds(1))
        await clock.waitForSleepers(count: 1)

        // Then the cache has shed half its cost, oldest first
        #expect(cache.totalCost == 50)
        #expect(cache.containsValue(forKey: 9))
        #expect(!cache.containsValue(forKey: 0))
        monitor.unregister(cache)
    }
}
