import Foundation
import HTTPTypes
import Osprey
import OspreyTesting
import Testing

@Suite("FailedURLs")
struct FailedURLsTests {
    let url = URL(string: "https://example.com/missing.jpg")!
    let other = URL(string: "https://example.com/other.jpg")!

    @Test func lastingFailuresEnterAndTransientOnesNever() {
        let failed = FailedURLs(clock: TestClock())
        // Transient: each of the kinds the seeds name
        for error in [
            DownloadError.timedOut, .cancelled, .cannotConnect(reason: "dns"), .connectionLost(reason: "reset"),
            .incompleteBody(expected: 10, received: 5), .httpStatus(code: 503, headers: [:]),
            .httpStatus(code: 429, headers: [:]), .httpStatus(code: 500, headers: [:]),
        ] {
            failed.record(url, error: error)
            #expect(!failed.contains(url), "\(error) must not enter the list")
        }
        // Lasting
        for error in [
            DownloadError.httpStatus(code: 404, headers: [:]), .httpStatus(code: 403, headers: [:]),
            .tooLarge(limit: 1), .tooManyRedirects(limit: 10), .invalidRedirect(location: "file:///x"),
        ] {
            failed.removeAll()
            failed.record(url, error: error)
            #expect(failed.contains(url), "\(error) must enter the list")
            #expect(!failed.contains(other))
        }
    }

    @Test func anEntryStaysWithoutATimeToLiveAndGoesWhenRemoved() {
        let clock = TestClock()
        let failed = FailedURLs(clock: clock)
        #expect(failed.isEmpty)
        failed.record(url, lastingFailure: true)
        failed.record(other, lastingFailure: true)
        clock.advance(by: .seconds(365 * 24 * 3600))
        #expect(failed.contains(url) && !failed.isEmpty)
        failed.remove(url)
        #expect(!failed.contains(url))
        #expect(failed.contains(other) && !failed.isEmpty)
        failed.removeAll()
        #expect(failed.count == 0 && failed.isEmpty)
    }

    @Test func anEntryExpiresAfterItsTimeToLive() {
        let clock = TestClock()
        let failed = FailedURLs(timeToLive: .seconds(60), clock: clock)
        failed.record(url, lastingFailure: true)
        clock.advance(by: .seconds(59))
        #expect(failed.contains(url))
        clock.advance(by: .seconds(1))
        #expect(!failed.contains(url))
        #expect(failed.count == 0 && failed.isEmpty)
        // A new failure starts a new lifetime
        failed.record(url, lastingFailure: true)
        clock.advance(by: .seconds(30))
        #expect(failed.contains(url))
    }
}
