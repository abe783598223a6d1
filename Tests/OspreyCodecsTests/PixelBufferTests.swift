import OspreyCodecs
import Testing

@Suite struct PixelBufferTests {
    @Test func allocatesZeroedPackedRows() throws {
        let buffer = try PixelBuffer(width: 3, height: 2, format: .rgb8)
        #expect(buffer.bytesPerRow == 9)
        #expect(buffer.byteCount == 18)
        buffer.withUnsafeBytes { bytes in
            #expect(bytes.count == 18)
            #expect(bytes.allSatisfy { $0 == 0 })
        }
    }

    @Test("a large buffer reused from the recycling pool comes back zeroed, and the pool keeps its bound")
    func recycledBuffersAreZeroed() throws {
        // 1,537 × 1,031 RGBA: 6.3 MB, an odd size no other test allocates, so the second buffer takes the first's
        // mapping from the pool (and would see its 0xAB bytes if reuse skipped the clearing).
        let (width, height) = (1_537, 1_031)
        for _ in 0..<3 {
            do {
                var dirty = try PixelBuffer(width: width, height: height, format: .rgba8)
                dirty.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0xAB) }
            }
            #expect(PixelBuffer.recycledByteCount > 0)
            #expect(PixelBuffer.recycledByteCount <= 256 << 20)
            let fresh = try PixelBuffer(width: width, height: height, format: .rgba8)
            fresh.withUnsafeBytes { bytes in
                #expect(bytes.allSatisfy { $0 == 0 })
            }
        }
    }

    @Test func honoursAStride() throws {
        let buffer = try PixelBuffer(width: 3, height: 2, format: .rgba8, bytesPerRow: 16)
        #expect(buffer.byteCount == 32)
        #expect(buffer.row(1).count == 12)
    }

    @Test(
        "invalid sizes throw",
        arguments: [(0, 1), (1, 0), (-5, 3), (Int.max, 2), (Int.max / 2, Int.max / 2)]
    )
    func rejectsInvalidSizes(width: Int, height: Int) {
        #expect(throws: CodecError.invalidDimensions(width: width, height: height)) {
            try PixelBuffer(width: width, height: height, format: .rgba8)
        }
    }

    @Test func rejectsAStrideShorterThanARow() {
        #expect(throws: CodecError.self) { try PixelBuffer(width: 4, height: 1, format: .rgba8, bytesPerRow: 15) }
    }

    @Test func copiesOnWrite() throws {
        // Given a buffer and a copy of it
        var original = try PixelBuffer(width: 2, height: 2, format: .gray8, bytes: [1, 2, 3, 4])
        let copy = original
        // When the original is written
        original.withUnsafeMutableBytes { $0[0] = 99 }
        // Then the copy keeps its bytes
        #expect(copy.row(0) == [1, 2])
        #expect(original.row(0) == [99, 2])
        #expect(original != copy)
    }

    @Test func equalityIgnoresStridePadding() throws {
        var padded = try PixelBuffer(width: 2, height: 2, format: .gray8, bytesPerRow: 4)
        padded.withUnsafeMutableBytes { bytes in
            bytes.copyBytes(from: [1, 2, 0xEE, 0xEE, 3, 4, 0xEE, 0xEE])
        }
        let packed = try PixelBuffer(width: 2, height: 2, format: .gray8, bytes: [1, 2, 3, 4])
        #expect(padded == packed)
        #expect(try PixelBuffer(width: 2, height: 2, format: .gray8, bytes: [1, 2, 3, 5]) != packed)
    }

    @Test func bytesMustMatchTheSize() {
        #expect(throws: CodecError.self) { try PixelBuffer(width: 2, height: 2, format: .rgba8, bytes: [1, 2, 3]) }
    }

    @Test func pixelFormats() {
        #expect(PixelFormat.allCases.map(\.bytesPerPixel) == [1, 2, 3, 4])
        #expect(PixelFormat.allCases.map(\.hasAlpha) == [false, true, false, true])
    }
}
