import ArgumentParser
import FoundationEssentials
import Osprey
import OspreyCodecs
import OspreyCommandLine

/// `osprey compare REFERENCE DISTORTED`: how alike two images look, as SSIMULACRA 2 scores it.
struct CompareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare",
        abstract:
            "Score how alike two images look (SSIMULACRA 2: 100 identical, 90 visually lossless, 70 high, 50 medium).",
        discussion: """
            Decodes both images whole (colour-managed to sRGB, upright, their first frames) and prints one line, \
            the score its last field. They must be the same size. A reference with alpha is scored over a dark and \
            a light background, the lower score kept. Exits 0 with a score, 1 when either image cannot be read or \
            they differ in size.

            Examples:
              osprey compare photo.png photo-q75.jpg
              osprey compare --json original.jpg https://cdn.example.com/original.webp
            """
    )

    @Argument(help: "The reference image: a file, or an http/https URL (loaded through the disk cache).")
    var reference: String

    @Argument(help: "The distorted image (a re-encoded or processed copy of the reference), the same size.")
    var distorted: String

    @Flag(
        help: #"Print one JSON object: {"reference","distorted","ssimulacra2"}, or {"reference","distorted","error"}."#)
    var json = false

    @OptionGroup var limit: ByteLimitOption

    @OptionGroup var certificateAuthority: CertificateAuthorityOption

    func run() async throws {
        let reader = SourceReader(byteLimit: limit.maxBytes, certificateAuthorityFile: certificateAuthority.path)
        let outcome: Result<Double, CommandError>
        do throws(CommandError) {
            outcome = .success(try await score(reader: reader))
        } catch {
            outcome = .failure(error)
        }
        await reader.finish()
        switch outcome {
        case .success(let score):
            print(
                json
                    ? Self.json(Line(reference: reference, distorted: distorted, ssimulacra2: Self.rounded(score)))
                    : "\(reference) \(distorted): ssimulacra2 \(Self.formatted(score))")
        case .failure(let error):
            if json {
                print(Self.json(Line(reference: reference, distorted: distorted, error: error.message)))
            } else {
                printError("osprey compare: \(error.message)")
            }
            throw ExitCode(1)
        }
    }

    private func score(reader: SourceReader) async throws(CommandError) -> Double {
        let images = try await (decoded(reference, reader: reader), decoded(distorted, reader: reader))
        do {
            return try ImageQuality.ssimulacra2(reference: images.0, distorted: images.1)
        } catch let error as ImageQualityError {
            throw CommandError(message: error.description)
        } catch {
            throw CommandError(message: "\(error)")
        }
    }

    private func decoded(_ source: String, reader: SourceReader) async throws(CommandError) -> Image {
        let data: [UInt8]
        do throws(CommandError) {
            data = try await reader.bytes(of: source)
        } catch {
            throw CommandError(message: "\(source): \(error.message)")
        }
        do {
            return try ImageDecoder.decode(data)
        } catch {
            throw CommandError(message: "\(source): \(error)")
        }
    }

    /// Eight decimals, as libjxl's `ssimulacra2` tool prints.
    static func formatted(_ score: Double) -> String {
        let text = String(rounded(score))
        let decimals = text.split(separator: ".").last.map(\.count) ?? 0
        return text.contains(".") ? text + String(repeating: "0", count: max(0, 8 - decimals)) : text + ".00000000"
    }

    static func rounded(_ score: Double) -> Double {
        (score * 1e8).rounded() / 1e8
    }

    private struct Line: Encodable {
        var reference: String
        var distorted: String
        var ssimulacra2: Double?
        var error: String?
    }

    private static func json(_ line: Line) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(line)) ?? Data(), as: UTF8.self)
    }
}
