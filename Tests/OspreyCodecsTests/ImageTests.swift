import OspreyCodecs
import Testing

@Suite struct ImageTests {
    @Test func stillImage() throws {
        let image = Image(pixels: try PixelBuffer(width: 4, height: 3, format: .rgba8), sourceFormat: .png)
        #expect(image.width == 4)
        #expect(image.height == 3)
        #expect(image.cost == 48)
        #expect(!image.isAnimated)
        #expect(image.frames.count == 1)
        #expect(image.duration == .zero)
        #expect(image.sourceFormat == .png)
        #expect(image.pixelFormat == .rgba8)
    }

    @Test func animationCostsEveryFrame() throws {
        let frame = try PixelBuffer(width: 10, height: 10, format: .rgba8)
        let image = try Image(
            frames: [
                ImageFrame(pixels: frame, duration: .milliseconds(100)),
                ImageFrame(pixels: frame, duration: .milliseconds(250)),
            ],
            loopCount: 3,
            sourceFormat: .gif
        )
        #expect(image.isAnimated)
        #expect(image.cost == 800)
        #expect(image.duration == .milliseconds(350))
        #expect(image.loopCount == 3)
    }

    @Test func framesMustAgree() throws {
        let small = ImageFrame(pixels: try PixelBuffer(width: 2, height: 2, format: .rgba8))
        let large = ImageFrame(pixels: try PixelBuffer(width: 3, height: 2, format: .rgba8))
        let gray = ImageFrame(pixels: try PixelBuffer(width: 2, height: 2, format: .gray8))
        #expect(throws: CodecError.self) { try Image(frames: [small, large]) }
        #expect(throws: CodecError.self) { try Image(frames: [small, gray]) }
        #expect(throws: CodecError.self) { try Image(frames: []) }
    }

    @Test func orientation() {
        #expect(ImageOrientation.allCases.map(\.rawValue) == Array(1...8))
        #expect(ImageOrientation.allCases.filter(\.swapsDimensions).map(\.rawValue) == [5, 6, 7, 8])
        #expect(ImageOrientation(exifValue: 6) == .right)
        #expect(ImageOrientation(exifValue: 0) == .up)
        #expect(ImageOrientation(exifValue: 9) == .up)
    }
}
