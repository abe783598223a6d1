import COspreyCodecShims
import Glibc
import Synchronization
import Testing

/// The recycling pool's policy, on pools of the tests' own (the allocator's is shared with every other test running),
/// which report each mapping, or end of one, they give back.
@Suite struct PixelPoolTests {
    static let mebibyte = 1 << 20

    /// What a pool gave back, in order: (start address, length in MiB).
    final class Unmapped: Sendable {
        let ranges = Mutex<[(start: Int, mebibytes: Int)]>([])
        var all: [(start: Int, mebibytes: Int)] { ranges.withLock { $0 } }
    }

    /// The address of `pointer` plus `mebibytes` MiB, as ``Unmapped`` records it.
    func address(_ pointer: UnsafeMutableRawPointer, plus mebibytes: Int = 0) -> Int {
        Int(bitPattern: pointer) + mebibytes * Self.mebibyte
    }

    /// A fresh anonymous mapping of `mebibytes` MiB, each page written once (so it is resident).
    func mapping(_ mebibytes: Int) throws -> UnsafeMutableRawPointer {
        let length = mebibytes * Self.mebibyte
        let pointer = try #require(
            mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                .flatMap { $0 == MAP_FAILED ? nil : $0 })
        for page in stride(from: 0, to: length, by: 4096) {
            pointer.storeBytes(of: 1, toByteOffset: page, as: UInt8.self)
        }
        return pointer
    }

    func withPool(byteLimit: Int = 256 << 20, _ body: (OpaquePointer, Unmapped) throws -> Void) throws {
        let unmapped = Unmapped()
        let context = Unmanaged.passRetained(unmapped)
        defer { context.release() }
        let record: osprey_unmap_function = { context, pixels, length in
            guard let context, let pixels else { return }
            Unmanaged<Unmapped>.fromOpaque(context).takeUnretainedValue().ranges.withLock {
                $0.append((Int(bitPattern: pixels), length / PixelPoolTests.mebibyte))
            }
            munmap(pixels, length)
        }
        let pool = try #require(osprey_pixel_pool_create(byteLimit, record, context.toOpaque()))
        defer { osprey_pixel_pool_destroy(pool) }
        try body(pool, unmapped)
    }

    @Test("the smallest mapping that fits is taken, and its pages past the request are given back")
    func takesTheSmallestFit() throws {
        try withPool { pool, unmapped in
            let (large, medium) = (try mapping(16), try mapping(12))
            osprey_pixel_pool_give(pool, large, 16 * Self.mebibyte)
            osprey_pixel_pool_give(pool, medium, 12 * Self.mebibyte)

            let taken = try #require(osprey_pixel_pool_take(pool, 8 * Self.mebibyte))
            #expect(taken == medium)
            #expect(unmapped.all.map(\.start) == [address(medium, plus: 8)])
            #expect(unmapped.all.map(\.mebibytes) == [4])
            #expect(osprey_pixel_pool_bytes(pool) == 16 * Self.mebibyte)
            munmap(taken, 8 * Self.mebibyte)

            // The exact size is still served whole
            #expect(osprey_pixel_pool_take(pool, 16 * Self.mebibyte) == large)
            #expect(unmapped.all.count == 1)
            #expect(osprey_pixel_pool_bytes(pool) == 0)
            munmap(large, 16 * Self.mebibyte)
        }
    }

    @Test("a mapping more than twice the request stays for a buffer of its own size")
    func leavesAMuchLargerMapping() throws {
        try withPool { pool, unmapped in
            let large = try mapping(32)
            osprey_pixel_pool_give(pool, large, 32 * Self.mebibyte)
            #expect(osprey_pixel_pool_take(pool, 15 * Self.mebibyte) == nil)
            #expect(osprey_pixel_pool_take(pool, 33 * Self.mebibyte) == nil)
            #expect(osprey_pixel_pool_bytes(pool) == 32 * Self.mebibyte)
            #expect(osprey_pixel_pool_take(pool, 16 * Self.mebibyte) == large)
            #expect(unmapped.all.map(\.start) == [address(large, plus: 16)])
            munmap(large, 16 * Self.mebibyte)
        }
    }

    @Test("the pool keeps at most four mappings and its byte limit, giving back the oldest first")
    func keepsItsBounds() throws {
        try withPool(byteLimit: 40 << 20) { pool, unmapped in
            let mappings = try (0..<5).map { _ in try mapping(8) }
            for pointer in mappings { osprey_pixel_pool_give(pool, pointer, 8 * Self.mebibyte) }
            #expect(osprey_pixel_pool_bytes(pool) == 32 * Self.mebibyte)
            #expect(unmapped.all.map(\.start) == [address(mappings[0])])

            // 16 MiB more: the oldest goes for its slot, and the 40 MiB limit is met
            let big = try mapping(16)
            osprey_pixel_pool_give(pool, big, 16 * Self.mebibyte)
            #expect(osprey_pixel_pool_bytes(pool) == 40 * Self.mebibyte)
            #expect(unmapped.all.map(\.start) == mappings.prefix(2).map { address($0) })

            // 16 MiB more again: the oldest goes for its slot, and the next oldest for the byte limit
            let bigger = try mapping(16)
            osprey_pixel_pool_give(pool, bigger, 16 * Self.mebibyte)
            #expect(osprey_pixel_pool_bytes(pool) == 40 * Self.mebibyte)
            #expect(unmapped.all.map(\.start) == mappings.prefix(4).map { address($0) })

            // A mapping over the whole limit is not kept at all
            let huge = try mapping(48)
            osprey_pixel_pool_give(pool, huge, 48 * Self.mebibyte)
            #expect(unmapped.all.last?.start == address(huge))
            #expect(osprey_pixel_pool_bytes(pool) == 40 * Self.mebibyte)

            // Draining gives back the rest, oldest first
            osprey_pixel_pool_drain(pool)
            #expect(unmapped.all.suffix(3).map(\.start) == [mappings[4], big, bigger].map { address($0) })
            #expect(osprey_pixel_pool_bytes(pool) == 0)
        }
    }
}
