import OspreyCodecs
import OspreyTesting
import Testing

/// The camera fields of EXIF, read from TIFF structures built here byte by byte, in both byte orders, and from hostile
/// ones (offsets past the end, huge counts, loops) that must give nothing rather than trap.
@Suite struct CameraMetadataTests {
    @Test(arguments: [true, false])
    func readsTheCameraFields(littleEndian: Bool) throws {
        let camera = try #require(ImageMetadata(exif: SyntheticEXIF.photo(littleEndian: littleEndian)).camera)
        #expect(camera.make == "Osprey Optics")
        #expect(camera.model == "Fish Eye 9")
        #expect(camera.lens == "50mm F1.8")
        #expect(camera.dateTaken == "2024-05-01T12:34:56+02:00")
        #expect(camera.exposureTime == 0.008)
        #expect(camera.fNumber == 2.8)
        #expect(camera.iso == 400)
        #expect(camera.focalLength == 50)
        let gps = try #require(camera.gps)
        #expect(abs(gps.latitude - (48 + 51.0 / 60 + 24.12 / 3600)) < 1e-9)
        #expect(abs(gps.longitude + (2 + 17.0 / 60 + 40.08 / 3600)) < 1e-9)
        #expect(gps.altitude == 35)
    }

    @Test func readsAfterTheExifMarker() {
        let exif = [0x45, 0x78, 0x69, 0x66, 0, 0] + SyntheticEXIF.photo(littleEndian: true)
        #expect(ImageMetadata(exif: exif).camera?.model == "Fish Eye 9")
    }

    @Test func fallsBackToDateTimeAndRefusesBlankDates() {
        let builder = SyntheticEXIF(littleEndian: true)
        let dated = builder.build([[(0x0132, .ascii("2019:12:31 23:59:59"))]], pointers: [])
        #expect(ImageMetadata(exif: dated).camera?.dateTaken == "2019-12-31T23:59:59")
        let blank = builder.build([[(0x0132, .ascii("    :  :     :  :  ")), (0x0110, .ascii("X"))]], pointers: [])
        #expect(ImageMetadata(exif: blank).camera?.dateTaken == nil)
        #expect(ImageMetadata(exif: blank).camera?.model == "X")
    }

    @Test func hostileStructuresGiveNothing() {
        var photo = SyntheticEXIF.photo(littleEndian: true)
        // Every truncation, and every single byte set to 0xFF: never a trap, never a read past the end.
        for length in 0..<photo.count { _ = ImageMetadata(exif: Array(photo.prefix(length))).camera }
        for index in photo.indices {
            let saved = photo[index]
            photo[index] = 0xFF
            _ = ImageMetadata(exif: photo).camera
            photo[index] = saved
        }
        // An IFD0 pointing at itself as the EXIF IFD, and a count of 2³²−1 values.
        let builder = SyntheticEXIF(littleEndian: true)
        let loop = builder.build([[(0x8769, .long(8)), (0x0110, .ascii("Loop"))]], pointers: [])
        #expect(ImageMetadata(exif: loop).camera?.model == "Loop")
        var huge = builder.build([[(0x0110, .ascii("Camera model"))]], pointers: [])
        huge.replaceSubrange(14..<18, with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(ImageMetadata(exif: huge).camera == nil)
        #expect(ImageMetadata(exif: [0x49, 0x49, 42, 0]).camera == nil)
        #expect(ImageMetadata().camera == nil)
    }

    @Test("corpus photos with EXIF give their camera", .requiresTestData)
    func corpusCameras() throws {
        let manifest = try TestData.manifest()
        var cameras = 0
        for entry in manifest.entries where entry.format == "jpeg" {
            let bytes = try manifest.bytes(of: entry)
            if let camera = ImageMetadata(embeddedIn: bytes).camera, camera.make != nil { cameras += 1 }
        }
        print("camera EXIF in \(cameras) corpus JPEGs")
        #expect(cameras > 0)
    }
}
