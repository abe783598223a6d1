import Foundation
public import Testing

/// Where the third-party image corpus (`../shared/testdata`) is, and whether tests must have it.
///
/// The corpus is found through `OSPREY_TESTDATA` (the `testdata` folder, or its `images` folder), else at
/// `../shared/testdata` beside the repository. Tests that need it carry ``Testing/Trait/requiresTestData``: they are
/// skipped, saying why, when it is absent — unless `OSPREY_REQUIRE_TESTDATA=1` (as CI sets), when they run and fail.
public enum TestData {
    /// The corpus's `images` folder (holding `MANIFEST.tsv`), or `nil` when it cannot be found.
    public static let imagesDirectory: String? = {
        var candidates: [String] = []
        if let configured = ProcessInfo.processInfo.environment["OSPREY_TESTDATA"], !configured.isEmpty {
            candidates += [configured + "/images", configured]
        }
        // Sources/OspreyTesting/TestData.swift → the repository root → its sibling shared/.
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(repository.deletingLastPathComponent().path + "/shared/testdata/images")
        candidates.append(FileManager.default.currentDirectoryPath + "/../shared/testdata/images")
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/MANIFEST.tsv") }
            .map { URL(fileURLWithPath: $0).standardizedFileURL.path }
    }()

    /// Whether the corpus was found.
    public static var isAvailable: Bool { imagesDirectory != nil }

    /// Whether `OSPREY_REQUIRE_TESTDATA=1` is set: a missing corpus then fails the tests that need it.
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["OSPREY_REQUIRE_TESTDATA"] == "1" }

    /// The corpus manifest.
    ///
    /// - Throws: ``TestDataError/missing`` when the corpus is absent, or a parse error.
    public static func manifest() throws -> Manifest {
        guard let imagesDirectory else { throw TestDataError.missing }
        return try Manifest(contentsOf: imagesDirectory + "/MANIFEST.tsv")
    }

    /// The second manifest, `MANIFEST-modern.tsv`: AVIF, HEIC/HEIF, JPEG XL and colour-managed files.
    ///
    /// - Throws: ``TestDataError/missing`` when the corpus is absent, or a parse error.
    public static func modernManifest() throws -> Manifest {
        guard let imagesDirectory else { throw TestDataError.missing }
        return try Manifest(contentsOf: imagesDirectory + "/MANIFEST-modern.tsv")
    }

    /// The bytes of the corpus file at `relativePath` (relative to the `images` folder).
    public static func bytes(_ relativePath: String) throws -> [UInt8] {
        guard let imagesDirectory else { throw TestDataError.missing }
        return Array(try Data(contentsOf: URL(fileURLWithPath: imagesDirectory + "/" + relativePath)))
    }
}

/// Why the corpus could not be used.
public enum TestDataError: Error, CustomStringConvertible {
    /// The corpus was not found at `$OSPREY_TESTDATA` or `../shared/testdata`.
    case missing
    /// `MANIFEST.tsv` is not what this parser expects.
    case malformedManifest(String)

    /// What went wrong, in a sentence for logs and error messages.
    public var description: String {
        switch self {
        case .missing:
            "the image corpus was not found: set OSPREY_TESTDATA or put it at ../shared/testdata"
        case .malformedManifest(let reason):
            "MANIFEST.tsv: \(reason)"
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only when the image corpus is present, or when `OSPREY_REQUIRE_TESTDATA=1` demands it (then a
    /// missing corpus fails the test instead of skipping it).
    public static var requiresTestData: Self {
        .enabled(
            if: TestData.isAvailable || TestData.isRequired,
            "the image corpus is absent (set OSPREY_TESTDATA or put it at ../shared/testdata)"
        )
    }
}
