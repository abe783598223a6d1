import ArgumentParser
import OspreyCodecs

/// `--keep-metadata` and `--keep-profile`: what `fetch` and `convert` carry into the images they write. By default,
/// no EXIF or XMP, and pixels converted to sRGB without a profile.
struct MetadataOptions: ParsableArguments {
    @Option(
        name: .customLong("keep-metadata"),
        help: "Keep EXIF and XMP in written images: copyright (Artist, Copyright, dc:creator, dc:rights) or all.")
    var keepMetadata: KeptMetadata?

    @Flag(
        name: .customLong("keep-profile"),
        help: "Keep the source's colour profile (pixels as stored) instead of converting to sRGB.")
    var keepProfile = false

    /// What the written images keep of their metadata.
    var policy: ImageMetadata.Policy {
        switch keepMetadata {
        case .copyright: .copyright
        case .all: .all
        case nil: .strip
        }
    }

    /// How sources are decoded: their profile kept with `--keep-profile`, else converted to sRGB.
    var colorHandling: ColorHandling { keepProfile ? .keepProfile : .convertToSRGB }

    /// The encoding options with these choices applied.
    func applied(to options: EncodingOptions) -> EncodingOptions {
        var options = options
        options.metadata = policy
        options.embedsColorProfile = keepProfile
        return options
    }
}

/// `--keep-metadata`'s values.
enum KeptMetadata: String, ExpressibleByArgument, CaseIterable {
    case copyright, all
}
