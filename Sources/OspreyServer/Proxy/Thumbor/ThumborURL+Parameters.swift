import FoundationEssentials
import Osprey
import OspreyCodecs

extension ThumborURL {
    /// What a thumbor path said, before it becomes render parameters.
    struct Parsed {
        var meta = false
        var trim: ImageProcessors.Trim?
        var crop: (left: Int, top: Int, right: Int, bottom: Int)?
        var fitIn: Substring?
        var width = 0
        var height = 0
        var flipsHorizontally = false
        var flipsVertically = false
        var halign: Substring = "center"
        var valign: Substring = "middle"
        var smart = false
        var filters: [ThumborFilter] = []

        /// `[-]Wx[-]H`; `orig` is refused (the source's side is not known before it is fetched).
        mutating func readSize(_ segment: Substring) throws(ProxyError) {
            let sides = segment.split(separator: "x", maxSplits: 1, omittingEmptySubsequences: false)
            func side(_ text: Substring) throws(ProxyError) -> (flips: Bool, value: Int) {
                let flips = text.hasPrefix("-")
                let digits = flips ? text.dropFirst() : text
                if digits == "orig" { throw .badRequest("thumbor size 'orig' is not supported by Osprey: give 0") }
                guard let value = digits.isEmpty ? 0 : DecimalText.integer(digits),
                    value <= RenderParameters.maximumSide
                else { throw .badRequest("thumbor size: each side is at most \(RenderParameters.maximumSide)") }
                return (flips, value)
            }
            (flipsHorizontally, width) = try side(sides[0])
            (flipsVertically, height) = try side(sides[1])
        }

        /// The render these parts ask of `source`, in the parameters every URL style shares.
        func parameters(source: URL, server: ServerConfiguration) throws(ProxyError) -> RenderParameters {
            var parameters = RenderParameters(source: source)
            parameters.meta = meta
            parameters.trim = trim
            if let crop, crop.right > crop.left, crop.bottom > crop.top {
                parameters.crop = .rect(
                    x: crop.left, y: crop.top, width: crop.right - crop.left, height: crop.bottom - crop.top)
            }
            var upscale = false
            var noUpscale = false
            var stretch = false
            var turns = 0
            for filter in filters {
                switch filter {
                case .upscale: upscale = true
                case .noUpscale: noUpscale = true
                case .stretch: stretch = true
                case .rotate(let degrees) where degrees % 90 == 0:
                    // thumbor turns counter-clockwise; /img's turns are clockwise.
                    turns = (turns + 4 - ((degrees / 90) % 4 + 4) % 4) % 4
                default: try apply(filter, to: &parameters, server: server)
                }
            }
            let (w, h) = (width > 0 ? width : nil, height > 0 ? height : nil)
            if w != nil || h != nil {
                if let fitIn {
                    // fit-in fits inside the box (never enlarging; upscale() does, as thumbor's filter does);
                    // full-fit-in covers it, enlarging.
                    let full = fitIn.hasSuffix("full-fit-in")
                    (parameters.fit, parameters.enlarges) = (full ? .outside : .inside, full)
                    parameters.adaptive = fitIn.hasPrefix("adaptive")
                    if upscale, !full, let w, let h { parameters.thumborUpscale = ThumborUpscale(width: w, height: h) }
                } else if smart, w != nil, h != nil, parameters.focalRect == nil {
                    // Osprey's smart crop (where the picture's interest is) in place of thumbor's detectors.
                    (parameters.fit, parameters.enlarges, parameters.smartGravity) = (.cover, !noUpscale, true)
                } else {
                    // thumbor's own crop to the box's aspect ratio and resize to it.
                    let x: Double = halign == "left" ? 0 : halign == "right" ? 1 : 0.5
                    let y: Double = valign == "top" ? 0 : valign == "bottom" ? 1 : 0.5
                    parameters.thumborCrop = ThumborCrop(
                        width: width, height: height, alignment: Anchor(x: x, y: y), focal: parameters.focalRect,
                        noUpscale: noUpscale, stretch: stretch)
                }
            }
            parameters.focalRect = nil
            // The box is the result's before the turn: as /img's w and h are the turned result's, they swap; and a
            // flip before an odd turn is the other flip after it.
            parameters.quarterTurns = turns
            parameters.width = turns % 2 == 1 ? h : w
            parameters.height = turns % 2 == 1 ? w : h
            if let width = parameters.width, let height = parameters.height, width * height > server.maxOutputPixels {
                throw .badRequest("the size is more than the output limit of \(server.maxOutputPixels) pixels")
            }
            (parameters.flipsHorizontally, parameters.flipsVertically) =
                turns % 2 == 1 ? (flipsVertically, flipsHorizontally) : (flipsHorizontally, flipsVertically)
            return parameters
        }

        /// A filter that is not geometry, applied to `parameters` in the URL's order.
        private func apply(
            _ filter: ThumborFilter, to parameters: inout RenderParameters, server: ServerConfiguration
        ) throws(ProxyError) {
            switch filter {
            case .format(let name):
                guard let format = server.coders.encodableFormat(named: name == "heif" ? "heic" : name) else {
                    throw .badRequest("thumbor filter 'format': Osprey does not write '\(name)'")
                }
                parameters.format = .encoded(format)
            case .quality(let quality): parameters.quality = max(quality, 1)
            case .fill(let color, let fillsTransparency):
                switch color {
                case "auto": parameters.letterbox = .median
                case "blur": parameters.letterbox = .blurred(sigma: 50)
                default:
                    guard let parsed = ThumborFilter.color(color) else {
                        throw .badRequest("thumbor filter 'fill': '\(color)' is not a colour Osprey knows")
                    }
                    parameters.letterbox = .color(parsed)
                }
                parameters.letterboxFillsTransparency = fillsTransparency
            case .backgroundColor(let color):
                guard let parsed = ThumborFilter.color(color) else {
                    throw .badRequest("thumbor filter 'background_color': '\(color)' is not a colour Osprey knows")
                }
                parameters.flattenColor = parsed
            case .blur(let radius, let sigma): parameters.blur = min(sigma > 0 ? sigma : Double(radius), 100)
            case .brightness(let value):
                parameters.adjustments.append(ImageProcessors.Adjust(brightness: Double(255 * value / 100)))
            case .contrast(let value):
                let factor = (value + 100) * (value + 100) / 100
                parameters.adjustments.append(ImageProcessors.Adjust(contrast: Double(factor) / 100))
            case .saturation(let value):
                parameters.adjustments.append(ImageProcessors.Adjust(saturation: max(value, 0)))
            case .rgb(let red, let green, let blue):
                parameters.adjustments.append(
                    ImageProcessors.Adjust(
                        red: Double(255 * red / 100), green: Double(255 * green / 100), blue: Double(255 * blue / 100)))
            case .grayscale: parameters.grayscale = true
            case .roundCorner(let horizontal, let vertical, let red, let green, let blue, let transparent):
                let color = PixelColor(red: UInt8(red), green: UInt8(green), blue: UInt8(blue))
                parameters.corners = ImageProcessors.RoundCorners(
                    radius: horizontal, verticalRadius: vertical, color: transparent ? nil : color)
            case .sharpen(let amount, let radius, _):
                guard amount > 0, radius > 0 else { return }
                parameters.sharpen = min(max(radius, 0.1), 10)
                parameters.sharpenAmount = amount
            case .stripEXIF, .stripICC:
                // Osprey strips EXIF and XMP and converts to sRGB without a profile by default.
                break
            case .maxBytes(let bytes): parameters.maxBytes = bytes
            case .focal(let left, let top, let right, let bottom):
                if right > left, bottom > top { parameters.focalRect = (left, top, right, bottom) }
            case .proportion(let value): if value > 0, value < 1 { parameters.proportion = value }
            case .watermark(let url, let x, let y, let alpha, let widthRatio, let heightRatio):
                let mark: URL
                do throws(ProxyError) {
                    mark = try ThumborURL.sourceURL(Substring(url))
                } catch {
                    throw .badRequest("thumbor filter 'watermark': the image URL is not an http or https URL")
                }
                parameters.markSource = ThumborWatermark.Source(
                    url: mark, x: x, y: y, alpha: alpha, widthRatio: widthRatio, heightRatio: heightRatio)
            case .upscale, .noUpscale, .stretch, .rotate: break
            }
        }
    }
}
