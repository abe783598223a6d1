import OspreyCodecs
import Testing

@testable import Osprey

/// The decode stage in the job table: one decode of a source for every job that needs it, widened to the largest need
/// of the jobs that joined, cancelled when the last job waiting for it leaves, its outcome kept while a job of the
/// source remains. (The random walk in `JobTableTests` holds the invariants under every order of these events.)
@Suite("The job table's decodes")
struct JobTableDecodeTests {
    typealias Table = JobTable<String, String>

    /// A table with `count` jobs, one per key.
    private func table(jobs count: Int) -> (Table, [Table.JobID]) {
        var table = Table()
        let jobs = (1...count).map { number in
            table.subscribe(Table.SubscriberID(rawValue: number), to: "k\(number)", priority: .normal, detached: false)!
                .job
        }
        return (table, jobs)
    }

    /// A decoder asking for `side` × `side` (`nil`: full size).
    private func decoder(_ side: Int?) -> JobDecoder {
        var options = DecodingOptions()
        options.targetSize = side.map { ImageSize(width: $0, height: $0) }
        return JobDecoder(options: options)
    }

    private func ask(_ side: Int?, bytes: [UInt8] = [1, 2, 3], firstFrameOnly: Bool = false) -> DecodeAsk {
        DecodeAsk(
            bytes: bytes, size: side.map { ImageSize(width: $0, height: $0) }, firstFrameOnly: firstFrameOnly,
            isOneFrame: false)
    }

    private func header() throws -> ImageHeader {
        let pixels = try PixelBuffer(width: 4, height: 4, format: .rgb8, bytes: [UInt8](repeating: 9, count: 48))
        return try ImageHeader(reading: ImageEncoder.encode(Image(pixels: pixels), as: .png))
    }

    @Test func jobsOfASourceShareOneDecodeAtTheLargestSizeTheyNeed() throws {
        var (table, jobs) = table(jobs: 4)
        let header = try header()
        // Given three jobs of source "s" needing 100, 200 and 50 pixels
        table.joinSource("s", job: jobs[0], decoder: decoder(100))
        table.joinSource("s", job: jobs[1], decoder: decoder(200))
        table.joinSource("s", job: jobs[2], decoder: decoder(50))
        // When the first has the bytes, it starts one decode at 200, which the others wait for
        guard
            case .start(let decode, let asked, let forgotten) =
                table.decode(for: jobs[0], source: "s", ask: ask(100), header: header)
        else {
            Issue.record("the first job did not start a decode")
            return
        }
        #expect(asked.size == ImageSize(width: 200, height: 200) && forgotten.isEmpty)
        guard case .share(decode) = table.decode(for: jobs[1], source: "s", ask: ask(200), header: header),
            case .share(decode) = table.decode(for: jobs[2], source: "s", ask: ask(50), header: header)
        else {
            Issue.record("the others did not share it")
            return
        }
        #expect(table.decodes[decode]?.waiting == Set(jobs[0...2]))
        // When a fourth job needs the full size, or other bytes, it decodes again
        table.joinSource("s", job: jobs[3], decoder: decoder(nil))
        guard
            case .start(let larger, let full, _) =
                table.decode(for: jobs[3], source: "s", ask: ask(nil), header: header)
        else {
            Issue.record("a larger need shared a smaller decode")
            return
        }
        #expect(larger != decode && full.size == nil)
        // When the first decode ends, its waiting jobs get it; it is not kept (a later decode is the source's)
        let ended = table.endDecode(decode)
        #expect(ended.waiting == Array(jobs[0...2]) && !ended.keepsOutcome)
        #expect(table.decodes[decode] == nil)
    }

    @Test func theLastJobToStopWaitingCancelsTheDecodeAndTheNextStartsAnother() throws {
        var (table, jobs) = table(jobs: 3)
        for job in jobs { table.joinSource("s", job: job, decoder: decoder(64)) }
        guard case .start(let decode, _, _) = table.decode(for: jobs[0], source: "s", ask: ask(64), header: nil),
            case .share(decode) = table.decode(for: jobs[1], source: "s", ask: ask(64), header: nil)
        else {
            Issue.record("no shared decode")
            return
        }
        // When one of two leaves, the decode goes on; when the other leaves too, it is cancelled
        let cancels = [table.stopWaiting(jobs[0], for: decode), table.stopWaiting(jobs[1], for: decode)]
        #expect(cancels == [false, true])
        #expect(table.decodes[decode]?.phase == .cancelled)
        let again = table.stopWaiting(jobs[1], for: decode)
        #expect(!again)  // Leaving twice changes nothing.
        // Then a job that comes later starts a decode of its own rather than wait for the cancelled one
        guard case .start(let next, _, _) = table.decode(for: jobs[2], source: "s", ask: ask(64), header: nil) else {
            Issue.record("a job waited for a cancelled decode")
            return
        }
        #expect(next != decode)
        // And the cancelled decode leaves the table when its decoder returns, resuming nobody
        let ended = table.endDecode(decode)
        #expect(ended.waiting.isEmpty && !ended.keepsOutcome)
        #expect(table.decodes[decode] == nil)
    }

    @Test func anEndedDecodeIsKeptWhileAJobOfItsSourceRemains() throws {
        var (table, jobs) = table(jobs: 3)
        for job in jobs { table.joinSource("s", job: job, decoder: decoder(64)) }
        guard case .start(let decode, _, _) = table.decode(for: jobs[0], source: "s", ask: ask(64), header: nil)
        else {
            Issue.record("no decode")
            return
        }
        let ended = table.endDecode(decode)
        #expect(ended.waiting == [jobs[0]] && ended.keepsOutcome)
        // A job reaching its decode after the end takes the kept outcome, without waiting
        guard case .share(decode) = table.decode(for: jobs[1], source: "s", ask: ask(32), header: nil) else {
            Issue.record("the ended decode was not shared")
            return
        }
        #expect(table.decodes[decode]?.waiting.isEmpty == true)
        // When every job of the source has left, the outcome is let go
        let forgotten = jobs.map { table.leaveSource("s", job: $0) }
        #expect(forgotten == [[], [], [decode]])
        #expect(table.decodes.isEmpty && table.sources.isEmpty)
    }

    @Test func aDecodeOfItsOwnIsNeverShared() {
        var (table, jobs) = table(jobs: 2)
        guard case .start(let first, _, _) = table.decode(for: jobs[0], source: nil, ask: ask(64), header: nil),
            case .start(let second, _, _) = table.decode(for: jobs[1], source: nil, ask: ask(64), header: nil)
        else {
            Issue.record("a decode of its own was shared")
            return
        }
        #expect(first != second)
        let ended = table.endDecode(first)
        #expect(ended.waiting == [jobs[0]] && !ended.keepsOutcome)
        #expect(table.decodes[first] == nil && table.sources.isEmpty)
    }
}
