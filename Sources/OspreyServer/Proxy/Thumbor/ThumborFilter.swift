import FoundationEssentials
import Osprey
import OspreyCodecs

/// One of thumbor's filters as a URL gives it (`quality(80)`, `fill(blur)`, `watermark(url,10,-10,50)`), its
/// arguments checked as thumbor's filter regexes check them. A filter thumbor has and Osprey does not do, an unknown
/// one, or one whose arguments thumbor would not match is refused (thumbor skips those silently: a request that
/// silently loses its watermark is worse than a 400).
enum ThumborFilter: Equatable {
    case format(String)
    case quality(Int)
    case fill(String, fillsTransparency: Bool)
    case backgroundColor(String)
    case blur(radius: Int, sigma: Double)
    case brightness(Int)
    case contrast(Int)
    case saturation(Double)
    case rgb(Int, Int, Int)
    case grayscale
    case roundCorner(horizontal: Int, vertical: Int, red: Int, green: Int, blue: Int, transparent: Bool)
    case rotate(Int)
    case sharpen(amount: Double, radius: Double, luminanceOnly: Bool)
    case stripEXIF
    case stripICC
    case noUpscale
    case upscale
    case stretch
    case maxBytes(Int)
    case focal(left: Int, top: Int, right: Int, bottom: Int)
    case proportion(Double)
    case watermark(url: String, x: String, y: String, alpha: Int, widthRatio: Int?, heightRatio: Int?)

    /// thumbor's filters Osprey does not do.
    static let unsupported: Set<String> = [
        "autojpg", "colorize", "convolution", "cover", "curve", "equalize", "extract_focal", "frame", "max_age",
        "noise", "redeye",
    ]

    /// The filters of `text` (`filters:` and what follows, up to the source).
    ///
    /// - Throws: ``ProxyError/badRequest(_:)`` naming the filter at fault.
    static func parse(_ text: String) throws(ProxyError) -> [ThumborFilter] {
        var filters: [ThumborFilter] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            guard let open = rest.firstIndex(of: "(") else {
                throw .badRequest("thumbor filter '\(rest.prefix(40))' has no parenthesised arguments")
            }
            let name = String(rest[..<open])
            // The matching parenthesis: arguments hold no nested ones but a watermark URL may hold any character.
            var depth = 0
            var close: Substring.Index?
            for index in rest[open...].indices {
                if rest[index] == "(" { depth += 1 }
                if rest[index] == ")" {
                    depth -= 1
                    if depth == 0 {
                        close = index
                        break
                    }
                }
            }
            guard let close else { throw .badRequest("thumbor filter '\(name)': unbalanced parentheses") }
            let arguments = String(rest[rest.index(after: open)..<close])
            if arguments.contains("("), name != "watermark" {
                throw .badRequest("thumbor filter '\(name)': nested parentheses")
            }
            filters.append(try filter(name, arguments))
            guard filters.count <= ThumborURL.maximumFilters else {
                throw .badRequest("a thumbor URL may carry at most \(ThumborURL.maximumFilters) filters")
            }
            rest = rest[rest.index(after: close)...]
            if rest.hasPrefix(":") {
                rest = rest.dropFirst()
                guard !rest.isEmpty else { throw .badRequest("thumbor filters end with ':'") }
            } else if !rest.isEmpty {
                throw .badRequest("thumbor filters must be separated by ':'")
            }
        }
        return filters
    }

    /// The filter `name` with its comma-separated `arguments`.
    static func filter(_ name: String, _ arguments: String) throws(ProxyError) -> ThumborFilter {
        let args =
            arguments.isEmpty
            ? []
            : arguments.split(separator: ",", omittingEmptySubsequences: false)
                .map { $0.trimmingWhitespace() }
        func count(_ range: ClosedRange<Int>) throws(ProxyError) {
            guard range.contains(args.count) else {
                throw .badRequest(
                    "thumbor filter '\(name)' takes \(range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)") arguments, not \(args.count)"
                )
            }
        }
        func integer(_ index: Int, _ range: ClosedRange<Int>) throws(ProxyError) -> Int {
            guard let value = DecimalText.integer(args[index]), range.contains(value) else {
                throw .badRequest(
                    "thumbor filter '\(name)': argument \(index + 1) must be an integer from \(range.lowerBound) to \(range.upperBound)"
                )
            }
            return value
        }
        func number(_ index: Int, _ range: ClosedRange<Double>) throws(ProxyError) -> Double {
            guard let value = DecimalText.number(args[index]), range.contains(value) else {
                throw .badRequest(
                    "thumbor filter '\(name)': argument \(index + 1) must be a number from \(range.lowerBound.shortText) to \(range.upperBound.shortText)"
                )
            }
            return value
        }
        func boolean(_ index: Int) throws(ProxyError) -> Bool {
            guard args.count > index else { return false }
            switch args[index] {
            case "true", "True", "1": return true
            case "false", "False", "0": return false
            default: throw .badRequest("thumbor filter '\(name)': argument \(index + 1) must be true or false")
            }
        }
        switch name {
        case "format":
            try count(1...1)
            return .format(args[0].lowercased())
        case "quality":
            try count(1...1)
            return .quality(try integer(0, 0...100))
        case "fill":
            try count(1...2)
            guard !args[0].isEmpty, args[0].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
                throw .badRequest("thumbor filter 'fill': give a colour name, hex colour, auto or blur")
            }
            return .fill(args[0], fillsTransparency: try boolean(1))
        case "background_color":
            try count(1...1)
            return .backgroundColor(args[0])
        case "blur":
            try count(1...2)
            return .blur(radius: try integer(0, 1...150), sigma: args.count == 2 ? try number(1, 0...150) : 0)
        case "brightness":
            try count(1...1)
            return .brightness(try integer(0, -100...100))
        case "contrast":
            try count(1...1)
            return .contrast(try integer(0, -100...100))
        case "saturation":
            try count(1...1)
            return .saturation(try number(0, -10...10))
        case "rgb":
            try count(3...3)
            return .rgb(try integer(0, -100...100), try integer(1, -100...100), try integer(2, -100...100))
        case "grayscale":
            try count(0...0)
            return .grayscale
        case "round_corner":
            try count(4...5)
            let radii = args[0].split(separator: "|", omittingEmptySubsequences: false)
            guard (1...2).contains(radii.count), let horizontal = DecimalText.integer(radii[0]),
                (0...4096).contains(horizontal)
            else { throw .badRequest("thumbor filter 'round_corner': the radius is A or A|B, 0 to 4096") }
            let vertical = radii.count == 2 ? DecimalText.integer(radii[1]) : horizontal
            guard let vertical, (0...4096).contains(vertical) else {
                throw .badRequest("thumbor filter 'round_corner': the radius is A or A|B, 0 to 4096")
            }
            return .roundCorner(
                horizontal: horizontal, vertical: vertical, red: try integer(1, 0...255),
                green: try integer(2, 0...255),
                blue: try integer(3, 0...255), transparent: try boolean(4))
        case "rotate":
            try count(1...1)
            return .rotate(try integer(0, -3600...3600))
        case "sharpen":
            try count(3...3)
            return .sharpen(amount: try number(0, 0...10), radius: try number(1, 0...10), luminanceOnly: try boolean(2))
        case "strip_exif":
            try count(0...0)
            return .stripEXIF
        case "strip_icc":
            try count(0...0)
            return .stripICC
        case "no_upscale":
            try count(0...0)
            return .noUpscale
        case "upscale":
            try count(0...0)
            return .upscale
        case "stretch":
            try count(0...0)
            return .stretch
        case "max_bytes":
            try count(1...1)
            return .maxBytes(try integer(0, 1...RenderParameters.maximumBytes))
        case "focal":
            try count(1...1)
            let numbers = args[0].split(whereSeparator: { $0 == "x" || $0 == ":" }).compactMap {
                DecimalText.integer($0)
            }
            guard ThumborURL.isCrop(Substring(args[0])), numbers.count == 4 else {
                throw .badRequest("thumbor filter 'focal' takes LEFTxTOP:RIGHTxBOTTOM")
            }
            return .focal(left: numbers[0], top: numbers[1], right: numbers[2], bottom: numbers[3])
        case "proportion":
            try count(1...1)
            return .proportion(try number(0, 0...1))
        case "watermark":
            try count(4...6)
            func position(_ index: Int) throws(ProxyError) -> String {
                let text = args[index]
                let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
                let number = digits.hasSuffix("p") ? digits.dropLast() : digits
                guard
                    text == "center" || text == "repeat"
                        || (!number.isEmpty && number.count <= 6 && number.allSatisfy(\.isASCIIDigit))
                else { throw .badRequest("thumbor filter 'watermark': x and y are pixels, Np, center or repeat") }
                return text
            }
            func ratio(_ index: Int) throws(ProxyError) -> Int? {
                guard args.count > index, args[index] != "none" else { return nil }
                return try integer(index, 1...100)
            }
            return .watermark(
                url: args[0], x: try position(1), y: try position(2), alpha: try integer(3, 0...100),
                widthRatio: try ratio(4), heightRatio: try ratio(5))
        default:
            if unsupported.contains(name) { throw .badRequest("thumbor filter '\(name)' is not supported by Osprey") }
            throw .badRequest("unknown thumbor filter '\(name)'")
        }
    }

    /// A colour as thumbor's filters take it: hex without `#` (3 or 6 digits), or a name Pillow knows.
    static func color(_ text: String) -> PixelColor? {
        if let named = namedColors[text.lowercased()] { return named }
        return RenderParameters.color(hex: text)
    }

    /// The CSS colour names thumbor's fills are most often given.
    static let namedColors: [String: PixelColor] = [
        "black": .black, "white": .white, "red": PixelColor(red: 255, green: 0, blue: 0),
        "green": PixelColor(red: 0, green: 128, blue: 0), "blue": PixelColor(red: 0, green: 0, blue: 255),
        "yellow": PixelColor(red: 255, green: 255, blue: 0), "cyan": PixelColor(red: 0, green: 255, blue: 255),
        "magenta": PixelColor(red: 255, green: 0, blue: 255), "gray": PixelColor(red: 128, green: 128, blue: 128),
        "grey": PixelColor(red: 128, green: 128, blue: 128), "silver": PixelColor(red: 192, green: 192, blue: 192),
        "maroon": PixelColor(red: 128, green: 0, blue: 0), "olive": PixelColor(red: 128, green: 128, blue: 0),
        "lime": PixelColor(red: 0, green: 255, blue: 0), "aqua": PixelColor(red: 0, green: 255, blue: 255),
        "teal": PixelColor(red: 0, green: 128, blue: 128), "navy": PixelColor(red: 0, green: 0, blue: 128),
        "fuchsia": PixelColor(red: 255, green: 0, blue: 255), "purple": PixelColor(red: 128, green: 0, blue: 128),
        "orange": PixelColor(red: 255, green: 165, blue: 0), "pink": PixelColor(red: 255, green: 192, blue: 203),
        "brown": PixelColor(red: 165, green: 42, blue: 42), "gold": PixelColor(red: 255, green: 215, blue: 0),
        "lightblue": PixelColor(red: 173, green: 216, blue: 230),
        "lightgray": PixelColor(red: 211, green: 211, blue: 211),
        "darkgray": PixelColor(red: 169, green: 169, blue: 169), "transparent": .clear,
    ]
}
