// processor-benchmark thumbnail FILE ITERATIONS OUT   the thumbnail job: decode (scaled in the decoder where the
//                                                      format allows), fit inside 256x256, encode JPEG q80; the last
//                                                      result is written to OUT; prints each part's best time too
//                                                      ("decode", "resize", "encode") and the decoded size
// processor-benchmark cover|smart FILE ITERATIONS OUT  a 256x256 cover thumbnail (decode scaled, crop, JPEG q80),
//                                                      the window in the middle or by gravity=smart's interest
// processor-benchmark resize FILE ITERATIONS OUT       resize alone: FILE's pixels (made RGBA) to 800 px wide,
//                                                      Lanczos-3; the result is written to OUT as PNG
// processor-benchmark variants FILE ITERATIONS OUT     the proxy's "many variants" work on one source, in parts:
//                                                      one full decode, fit inside WxW for 15 widths (64…736),
//                                                      then each of the 15 encoded as JPEG and as WebP at q80 (the
//                                                      proxy's default); prints each part's best time, so that the
//                                                      encodes' share bounds what sharing decodes can gain; and the
//                                                      least any server decodes and resizes for the 15: one decode
//                                                      scaled for the largest ("scaledDecode", JPEG's DCT scaling)
//                                                      and the 15 resizes from it ("scaledResize"); the largest
//                                                      WebP is written to OUT
// processor-benchmark encode-avif FILE ITERATIONS OUT [QUALITY [SPEED]]
//                                                      FILE decoded once, then encoded as AVIF at QUALITY (80) and
//                                                      SPEED (EncodingOptions' default), 4:2:0 below quality 90; the
//                                                      result is written to OUT
// processor-benchmark encode-jxl FILE ITERATIONS OUT [QUALITY [EFFORT]]
//                                                      the same as JPEG XL, at QUALITY (80) and EFFORT
//                                                      (EncodingOptions' default)
// processor-benchmark encode-png FILE ITERATIONS OUT [LEVEL]
//                                                      FILE decoded once, then encoded as lossless PNG at zlib LEVEL
//                                                      (EncodingOptions' default); the result is written to OUT
// processor-benchmark ssimulacra2 REFERENCE ITERATIONS DISTORTED
//                                                      both files decoded once, then scored: prints the whole score
//                                                      (the reference prepared each time) and, as "candidate", the
//                                                      distorted image against a reference prepared once (what q=auto
//                                                      pays per candidate), with "score"
// processor-benchmark curve FILE 1 OUT FORMAT [STEP] FILE fit inside 1024x1024, then encoded as FORMAT at qualities
//                                                      10, 15, ... 100 (STEP 1: every quality from 1): prints one JSON
//                                                      line per quality with its bytes and SSIMULACRA 2 score
// processor-benchmark auto FILE ITERATIONS OUT FORMAT [TARGET|qN [EFFORT]]
//                                                      FILE fit inside 1024x1024, then ImageOutput's perceptual
//                                                      quality (q=auto:TARGET, 80 by default) or the fixed quality N
//                                                      as FORMAT: prints the encode's time, the quality, the bytes and
//                                                      the score, and as "prepare" what a cold request pays before
//                                                      (the scaled decode and the resize); EFFORT (1-9) is
//                                                      EncodingOptions.setEffort's; FORMAT best is format=best
//                                                      for a client that takes AVIF and WebP (qN: at the default
//                                                      target); the result is written to OUT
//                                                      (curve and auto: FIT=N in the environment fits inside N x N
//                                                      instead of 1024; curve: EFFORT=N encodes at that effort)
//
// Single thread. Prints one JSON line: {"best","median"} in seconds per run (variants: and its parts).
import Foundation
import Osprey
import OspreyCodecs

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 4, let iterations = Int(arguments[2]), iterations > 0,
    let data = FileManager.default.contents(atPath: arguments[1])
else {
    let usage =
        "usage: processor-benchmark thumbnail|cover|smart|resize|variants|encode-avif|encode-jxl|encode-png|ssimulacra2|"
        + "curve|auto FILE "
        + "ITERATIONS OUT [QUALITY [SPEED|EFFORT]]\n"
    FileHandle.standardError.write(Data(usage.utf8))
    exit(2)
}
let bytes = [UInt8](data)
let outputPath = arguments[3]

func measure(_ body: () throws -> [UInt8]) throws -> (times: [Double], output: [UInt8]) {
    var times: [Double] = []
    var output: [UInt8] = []
    for _ in 0..<iterations {
        let start = DispatchTime.now().uptimeNanoseconds
        output = try body()
        times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }
    return (times.sorted(), output)
}

let result: (times: [Double], output: [UInt8])
switch arguments[0] {
case "thumbnail":
    let thumbnail = ImageProcessors.Downsample(width: 256, height: 256)
    result = try measure {
        let image = try thumbnail.decode(bytes)
        return try ImageEncoder.encode(try thumbnail.process(image), as: .jpeg, quality: 80)
    }
    // Each part alone, best of the same count: what the decode, the resize and the encode each cost.
    var decoded = try thumbnail.decode(bytes)
    let decode = try measure {
        decoded = try thumbnail.decode(bytes)
        return []
    }
    var resized = decoded
    let resize = try measure {
        resized = try thumbnail.process(decoded)
        return []
    }
    let encode = try measure { try ImageEncoder.encode(resized, as: .jpeg, quality: 80) }
    try Data(result.output).write(to: URL(fileURLWithPath: outputPath))
    print(
        #"{"best":\#(result.times[0]),"median":\#(result.times[result.times.count / 2]),"#
            + #""decode":\#(decode.times[0]),"decoded":"\#(decoded.width)x\#(decoded.height)","#
            + #""resize":\#(resize.times[0]),"encode":\#(encode.times[0])}"#)
    exit(0)
case "cover", "smart":
    // A square cover thumbnail as the proxy makes it: decode scaled for a 256x256 cover, then the window in the
    // middle ("cover") or where the picture's interest is ("smart", gravity=smart), then JPEG q80.
    let hint = ImageProcessors.Downsample(width: 256, height: 256, fit: .cover)
    let crop: any ImageProcessing =
        arguments[0] == "smart"
        ? ImageProcessors.SmartCover(width: 256, height: 256)
        : ImageProcessors.Resize(width: 256, height: 256, fit: .cover)
    result = try measure {
        let image = try hint.decode(bytes)
        return try ImageEncoder.encode(try crop.process(image), as: .jpeg, quality: 80)
    }
case "resize":
    let source = try ImageDecoder.decode(bytes)
    let rgba = Image(pixels: try source.pixels.converted(to: .rgba8))
    // Every source pixel through the filter, as Pillow's resize() (whose reducing_gap is None by default).
    let resize = ImageProcessors.Resize(width: 800, reducingGap: nil)
    var resized = rgba
    let timed = try measure {
        resized = try resize.process(rgba)
        return []
    }
    result = (timed.times, try ImageEncoder.encode(resized, as: .png, quality: 100))
case "encode-avif", "encode-jxl":
    let format: ImageFormat = arguments[0] == "encode-avif" ? .avif : .jxl
    let source = try ImageDecoder.decode(bytes)
    var options = EncodingOptions()
    if arguments.count > 4, let quality = Int(arguments[4]) { options.quality = quality }
    if arguments.count > 5, let level = Int(arguments[5]) {
        // The speed/effort trade-off: libaom's speed for AVIF, libjxl's effort for JPEG XL.
        if format == .avif { options.avifSpeed = level } else { options.jxlEffort = level }
    }
    result = try measure { try ImageEncoder.encode(source, as: format, options: options) }
case "encode-png":
    let source = try ImageDecoder.decode(bytes)
    var options = EncodingOptions()
    if arguments.count > 4, let level = Int(arguments[4]) { options.pngCompressionLevel = level }
    result = try measure { try ImageEncoder.encode(source, as: .png, options: options) }
case "variants":
    // The part times are printed here, beside the whole: decode, resizes, encodes (best of the runs for each).
    let widths = Array(stride(from: 64, through: 736, by: 48))
    var decodes: [Double] = []
    var resizes: [Double] = []
    var encodes: [Double] = []
    var largest: [UInt8] = []
    func seconds(since start: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }
    let timed = try measure {
        var start = DispatchTime.now().uptimeNanoseconds
        let source = try ImageDecoder.decode(bytes)
        decodes.append(seconds(since: start))
        start = DispatchTime.now().uptimeNanoseconds
        let variants = try widths.map { width in
            try ImageProcessors.Downsample(width: width, height: width).process(source)
        }
        resizes.append(seconds(since: start))
        start = DispatchTime.now().uptimeNanoseconds
        for variant in variants {
            _ = try ImageEncoder.encode(variant, as: .jpeg, quality: 80)
            largest = try ImageEncoder.encode(variant, as: .webp, quality: 80)
        }
        encodes.append(seconds(since: start))
        return largest
    }
    // What no server can do with less: one decode scaled for the largest variant (every smaller one is covered by
    // it), and each variant resized from that.
    let largestFit = ImageProcessors.Downsample(width: widths.max()!, height: widths.max()!)
    var scaledDecodes: [Double] = []
    var scaledResizes: [Double] = []
    for _ in 0..<iterations {
        var start = DispatchTime.now().uptimeNanoseconds
        let source = try largestFit.decode(bytes)
        scaledDecodes.append(seconds(since: start))
        start = DispatchTime.now().uptimeNanoseconds
        for width in widths {
            _ = try ImageProcessors.Downsample(width: width, height: width).process(source)
        }
        scaledResizes.append(seconds(since: start))
    }
    try Data(timed.output).write(to: URL(fileURLWithPath: outputPath))
    print(
        #"{"best":\#(timed.times[0]),"median":\#(timed.times[timed.times.count / 2]),"decode":\#(decodes.min()!),"#
            + #""resize":\#(resizes.min()!),"encode":\#(encodes.min()!),"outputs":\#(widths.count * 2),"#
            + #""scaledDecode":\#(scaledDecodes.min()!),"scaledResize":\#(scaledResizes.min()!)}"#)
    exit(0)
case "ssimulacra2":
    let reference = try ImageDecoder.decode(bytes)
    let distorted = try ImageDecoder.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: outputPath))))
    var score = 0.0
    let whole = try measure {
        score = try ImageQuality.ssimulacra2(reference: reference, distorted: distorted)
        return []
    }
    let prepared = try ImageQuality.Reference(reference)
    let candidate = try measure {
        score = try prepared.ssimulacra2(distorted)
        return []
    }
    print(
        #"{"best":\#(whole.times[0]),"median":\#(whole.times[whole.times.count / 2]),"#
            + #""candidate":\#(candidate.times[0]),"score":\#(score)}"#)
    exit(0)
case "curve", "auto":
    let source = try ImageDecoder.decode(bytes)
    let fit = ProcessInfo.processInfo.environment["FIT"].flatMap { Int($0) } ?? 1024
    let image = try ImageProcessors.Resize(width: fit, height: fit).process(source)
    let formats: [String: ImageFormat] = ["jpeg": .jpeg, "webp": .webp, "avif": .avif, "jxl": .jxl, "png": .png]
    // auto's "best": format=best for a client that takes AVIF and WebP (Chrome's Accept), beside JPEG, PNG and GIF.
    let best = arguments[0] == "auto" && arguments.count > 4 && arguments[4] == "best"
    guard arguments.count > 4, let format = best ? .avif : formats[arguments[4]] else {
        FileHandle.standardError.write(
            Data("\(arguments[0]): a FORMAT (jpeg, webp, avif, jxl or png; best for auto) is needed\n".utf8))
        exit(2)
    }
    if arguments[0] == "curve" {
        let reference = try ImageQuality.Reference(image)
        let step = arguments.count > 5 ? Int(arguments[5]) ?? 5 : 5
        for quality in stride(from: step == 1 ? 1 : 10, through: 100, by: step) {
            var options = EncodingOptions()
            options.quality = quality
            if let effort = ProcessInfo.processInfo.environment["EFFORT"].flatMap({ Int($0) }) {
                options.setEffort(effort)
            }
            let encoded = try ImageEncoder.encode(image, as: format, options: options)
            let score = try reference.ssimulacra2(try ImageDecoder.decode(encoded))
            print(#"{"quality":\#(quality),"bytes":\#(encoded.count),"score":\#(score)}"#)
        }
        exit(0)
    }
    var output = ImageOutput(best ? .best(accepted: [.jpeg, .png, .gif, .webp, .avif]) : .format(format))
    let setting = arguments.count > 5 ? arguments[5] : "80"
    if setting.hasPrefix("q"), let quality = Int(setting.dropFirst()) {
        output.options.quality = quality
    } else {
        output.quality = .perceptual(target: Double(setting) ?? 80)
    }
    if arguments.count > 6, let effort = Int(arguments[6]) { output.options.setEffort(effort) }
    // What a cold request pays before encoding: the source decoded (scaled where the format allows) and resized.
    let hint = ImageProcessors.Downsample(width: fit, height: fit)
    let prepared = try measure {
        _ = try hint.process(try hint.decode(bytes))
        return []
    }
    var encoded: EncodedImage?
    let timed = try measure {
        encoded = try output.encode(image)
        return encoded!.bytes
    }
    let score = try ImageQuality.ssimulacra2(reference: image, distorted: try ImageDecoder.decode(encoded!.bytes))
    try Data(timed.output).write(to: URL(fileURLWithPath: outputPath))
    print(
        #"{"best":\#(timed.times[0]),"median":\#(timed.times[timed.times.count / 2]),"#
            + #""quality":\#(encoded!.quality ?? output.options.quality),"bytes":\#(encoded!.bytes.count),"#
            + #""format":"\#(encoded!.format.name)","#
            + #""score":\#(score),"prepare":\#(prepared.times[0])}"#)
    exit(0)
default:
    FileHandle.standardError.write(Data("unknown mode \(arguments[0])\n".utf8))
    exit(2)
}
try Data(result.output).write(to: URL(fileURLWithPath: outputPath))
let times = result.times
print(#"{"best":\#(times[0]),"median":\#(times[times.count / 2])}"#)
