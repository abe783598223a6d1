import OspreyTesting
import Testing

@Suite struct TestClockTests {
    @Test func sleepersWakeOnlyWhenTheClockReachesTheirDeadline() async throws {
        let clock = TestClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(5)) }
        // Given a task sleeping 5 s
        await clock.waitForSleepers(count: 1)
        // When the clock moves 4 s, Then it still sleeps
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 1)
        #expect(clock.now == TestClock.Instant(offset: .seconds(4)))
        // When it moves the last second, Then it wakes
        clock.advance(by: .seconds(1))
        try await sleeper.value
        #expect(clock.sleeperCount == 0)
    }

    @Test func wakesOnlyTheDueSleepers() async throws {
        let clock = TestClock()
        let early = Task { try await clock.sleep(until: .init(offset: .seconds(1))) }
        let late = Task { try await clock.sleep(until: .init(offset: .seconds(10))) }
        await clock.waitForSleepers(count: 2)
        clock.advance(to: .init(offset: .seconds(2)))
        try await early.value
        #expect(clock.sleeperCount == 1)
        clock.advance(to: .init(offset: .seconds(10)))
        try await late.value
    }

    @Test func aPastDeadlineReturnsAtOnce() async throws {
        let clock = TestClock()
        clock.advance(by: .seconds(3))
        try await clock.sleep(until: .init(offset: .seconds(1)))
        try await clock.sleep(for: .zero)
        #expect(clock.sleeperCount == 0)
    }

    @Test func neverMovesBackwards() {
        let clock = TestClock()
        clock.advance(by: .seconds(3))
        clock.advance(to: .init(offset: .seconds(1)))
        #expect(clock.now.offset == .seconds(3))
    }

    @Test func cancellingASleeperThrowsAndForgetsIt() async throws {
        let clock = TestClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(60)) }
        await clock.waitForSleepers(count: 1)
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func measuresElapsedTimeOnItsOwnTimeline() {
        let clock = TestClock()
        let start = clock.now
        clock.advance(by: .milliseconds(1_500))
        #expect(start.duration(to: clock.now) == .milliseconds(1_500))
    }
}
