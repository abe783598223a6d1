import OspreyCodecs
import OspreyTesting
import Testing

@Suite struct SyntheticImagesTests {
    @Test func pngIsWellFormed() throws {
        // Given a PNG larger than one stored deflate block (65,535 bytes)
        let png = SyntheticImages.png(width: 200, height: 100)
        #expect(ImageFormat(sniffing: png) == .png)
        // libpng checks the signature and the IHDR CRC while reading the header.
        #expect(try ImageHeader(reading: png) == ImageHeader(format: .png, width: 200, height: 100))
        // 8 signature + 25 IHDR + 12 IEND + IDAT (12 + zlib: 2 header + 2 blocks × 5 + 80,100 raw + 4 Adler-32).
        #expect(png.count == 8 + 25 + 12 + 12 + 2 + 10 + 100 * (1 + 200 * 4) + 4)
        #expect(Array(png.suffix(12)) == [0, 0, 0, 0, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82])
    }

    @Test func headersAreDetected() throws {
        #expect(ImageFormat(sniffing: SyntheticImages.gifHeader(width: 1, height: 1)) == .gif)
        #expect(ImageFormat(sniffing: SyntheticImages.webpLosslessHeader(width: 1, height: 1)) == .webp)
        #expect(ImageFormat(sniffing: SyntheticImages.jpegHeader(width: 1, height: 1)) == .jpeg)
    }
}
