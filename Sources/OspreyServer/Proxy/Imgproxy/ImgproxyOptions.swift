import FoundationEssentials
import Osprey
import OspreyCodecs

/// imgproxy's processing options as a URL gives them (`rs:fill:300:200`, `g:sm`, `q:80`, …), read with imgproxy's
/// names, short names and argument forms (imgproxy's `options/parser/apply.go`), then turned into the
/// ``RenderParameters`` every URL style shares. An option of imgproxy's that Osprey does not do is refused, named.
struct ImgproxyOptions {
    /// imgproxy's gravity: a type with offsets, smart, or a focus point.
    enum Gravity: Equatable {
        case anchor(Anchor, x: Double, y: Double)
        case smart
        case focus(x: Double, y: Double)
    }

    var resizingType = "fit"
    var width = 0
    var height = 0
    var enlarge = false
    var extend: Gravity?
    var extendAspectRatio: Gravity?
    var minWidth = 0
    var minHeight = 0
    var zoomX = 1.0
    var zoomY = 1.0
    var dpr = 1.0
    var gravity = Gravity.anchor(.center, x: 0, y: 0)
    var crop: (width: Double, height: Double, gravity: Gravity?)?
    var trim: ImageProcessors.Trim?
    var padding: (top: Int, right: Int, bottom: Int, left: Int)?
    var rotate = 0
    var flipHorizontal = false
    var flipVertical = false
    var background: PixelColor?
    var blur = 0.0
    var sharpen = 0.0
    var pixelate = 0
    var adjust = ImageProcessors.Adjust()
    var watermark: WatermarkPlacement?
    var stripMetadata = true
    var keepCopyright = false
    var quality = 0
    var formatQualities: [ImageFormat: Int] = [:]
    var maxBytes = 0
    var format: String?
    var page: Int?
    var skipProcessing: [String] = []
    var raw = false
    var expires: Int?
    var filename: String?
    var attachment = false

    /// The gravity names imgproxy takes (`GravityTypes`).
    static let anchors: [String: Anchor] = [
        "ce": .center, "no": .top, "so": .bottom, "ea": .right, "we": .left, "noea": .topRight, "nowe": .topLeft,
        "soea": .bottomRight, "sowe": .bottomLeft,
    ]

    /// Options of imgproxy's that Osprey refuses, and why: what the 400 says.
    static let refused: [String: String] = [
        "enc": "encrypted sources are imgproxy Pro's",
        "best": "format best is imgproxy Pro's",
        "ra": "resizing_algorithm is imgproxy Pro's (Osprey resizes with Lanczos-3)",
        "resizing_algorithm": "resizing_algorithm is imgproxy Pro's (Osprey resizes with Lanczos-3)",
    ]

    /// Reads one option segment (`name:arg:arg`) into the state; a preset's options are read where `pr` names it.
    ///
    /// - Throws: ``ProxyError/badRequest(_:)`` naming the option.
    mutating func apply(
        _ segment: String, presets: [String: [String]], server: ServerConfiguration, depth: Int
    ) throws(ProxyError) {
        var parts = segment.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let name = parts.removeFirst()
        let args = parts
        func need(_ minimum: Int, _ maximum: Int) throws(ProxyError) {
            guard (minimum...maximum).contains(args.count) else {
                throw .badRequest(
                    "imgproxy option '\(name)' takes \(minimum == maximum ? "\(minimum)" : "\(minimum) to \(maximum)") "
                        + "argument\(maximum == 1 ? "" : "s"), not \(args.count)")
            }
        }
        switch name {
        case "resize", "rs":
            // resizing_type:width:height:enlarge:extend[:gravity:x:y]
            try need(1, 8)
            if !args[0].isEmpty { try applyResizingType(args[0], name: name) }
            try applySize(Array(args.dropFirst()), name: name)
        case "size", "s":
            try need(1, 7)
            try applySize(args, name: name)
        case "resizing_type", "rt":
            try need(1, 1)
            try applyResizingType(args[0], name: name)
        case "width", "w":
            try need(1, 1)
            width = try Self.positiveInteger(args[0], name: name)
        case "height", "h":
            try need(1, 1)
            height = try Self.positiveInteger(args[0], name: name)
        case "min-width", "mw":
            try need(1, 1)
            minWidth = try Self.positiveInteger(args[0], name: name)
        case "min-height", "mh":
            try need(1, 1)
            minHeight = try Self.positiveInteger(args[0], name: name)
        case "zoom", "z":
            try need(1, 2)
            zoomX = try Self.positiveNonZeroNumber(args[0], name: name)
            zoomY = args.count == 2 ? try Self.positiveNonZeroNumber(args[1], name: name) : zoomX
        case "dpr":
            try need(1, 1)
            dpr = try Self.positiveNonZeroNumber(args[0], name: name)
        case "enlarge", "el":
            try need(1, 1)
            enlarge = try Self.bool(args[0], name: name)
        case "extend", "ex":
            try need(1, 4)
            extend = try Self.bool(args[0], name: name) ? try Self.gravity(Array(args.dropFirst()), name: name) : nil
        case "extend_aspect_ratio", "extend_ar", "exar":
            try need(1, 4)
            extendAspectRatio =
                try Self.bool(args[0], name: name) ? try Self.gravity(Array(args.dropFirst()), name: name) : nil
        case "gravity", "g":
            try need(1, 3)
            gravity = try Self.gravity(args, name: name, allowsSmart: true)
        case "crop", "c":
            try need(1, 5)
            let width = try Self.positiveNumber(args[0], name: name)
            let height = args.count > 1 ? try Self.positiveNumber(args[1], name: name) : 0
            let gravity = args.count > 2 ? try Self.gravity(Array(args.dropFirst(2)), name: name) : nil
            crop = (width, height, gravity)
        case "trim", "t":
            try need(1, 4)
            try applyTrim(args, name: name)
        case "padding", "pd":
            try need(1, 4)
            let sides = try args.map { text throws(ProxyError) in
                text.isEmpty ? nil : try Self.positiveInteger(text, name: name)
            }
            let top = sides[0] ?? 0
            let right = sides.count > 1 ? sides[1] ?? top : top
            let bottom = sides.count > 2 ? sides[2] ?? top : top
            let left = sides.count > 3 ? sides[3] ?? right : right
            padding = (top, right, bottom, left)
        case "auto_rotate", "ar":
            try need(1, 1)
            guard try Self.bool(args[0], name: name) else {
                throw .badRequest(
                    "imgproxy option '\(name)': Osprey always turns images upright by their EXIF orientation")
            }
        case "rotate", "rot":
            try need(1, 1)
            guard let angle = DecimalText.integer(args[0]), angle % 90 == 0, abs(angle) <= 3600 else {
                throw .badRequest("imgproxy option '\(name)' must be a multiple of 90")
            }
            rotate = ((angle % 360) + 360) % 360
        case "flip", "fl":
            try need(1, 2)
            if !args[0].isEmpty { flipHorizontal = try Self.bool(args[0], name: name) }
            if args.count > 1, !args[1].isEmpty { flipVertical = try Self.bool(args[1], name: name) }
        case "background", "bg":
            try applyBackground(args, name: name)
        case "blur", "bl":
            try need(1, 1)
            blur = try Self.positiveNumber(args[0], name: name)
        case "sharpen", "sh":
            try need(1, 1)
            sharpen = try Self.positiveNumber(args[0], name: name)
        case "pixelate", "pix":
            try need(1, 1)
            pixelate = try Self.positiveInteger(args[0], name: name)
        case "brightness", "br":
            try need(1, 1)
            adjust.brightness = try Self.number(args[0], name: name, in: -255...255)
        case "contrast", "co":
            try need(1, 1)
            adjust.contrast = try Self.number(args[0], name: name, in: 0...10)
        case "saturation", "sa":
            try need(1, 1)
            adjust.saturation = try Self.number(args[0], name: name, in: 0...10)
        case "adjust", "a":
            try need(1, 3)
            if !args[0].isEmpty { adjust.brightness = try Self.number(args[0], name: name, in: -255...255) }
            if args.count > 1, !args[1].isEmpty { adjust.contrast = try Self.number(args[1], name: name, in: 0...10) }
            if args.count > 2, !args[2].isEmpty { adjust.saturation = try Self.number(args[2], name: name, in: 0...10) }
        case "watermark", "wm":
            try need(1, 5)
            try applyWatermark(args, name: name, server: server)
        case "strip_metadata", "sm":
            try need(1, 1)
            stripMetadata = try Self.bool(args[0], name: name)
        case "keep_copyright", "kcr":
            try need(1, 1)
            keepCopyright = try Self.bool(args[0], name: name)
        case "strip_color_profile", "scp":
            try need(1, 1)
            guard try Self.bool(args[0], name: name) else {
                throw .badRequest(
                    "imgproxy option '\(name)': Osprey always converts to sRGB and strips the profile (browsers read "
                        + "untagged images as sRGB)")
            }
        case "quality", "q":
            try need(1, 1)
            quality = try Self.integer(args[0], name: name, in: 0...100)
        case "format_quality", "fq":
            guard !args.isEmpty, args.count % 2 == 0 else {
                throw .badRequest("imgproxy option '\(name)' takes format:quality pairs")
            }
            for index in Swift.stride(from: 0, to: args.count, by: 2) {
                let format = try Self.format(args[index], name: name, server: server)
                formatQualities[format] = try Self.integer(args[index + 1], name: name, in: 0...100)
            }
        case "max_bytes", "mb":
            try need(1, 1)
            maxBytes = try Self.integer(args[0], name: name, in: 0...RenderParameters.maximumBytes)
        case "format", "f", "ext":
            try need(1, 1)
            format = args[0]
        case "page", "pg":
            try need(1, 1)
            page = try Self.integer(args[0], name: name, in: 0...100_000)
        case "skip_processing", "skp":
            try need(1, 20)
            skipProcessing = args
        case "raw":
            try need(1, 1)
            raw = try Self.bool(args[0], name: name)
        case "cachebuster", "cb":
            // Changes nothing but the URL (and so the signature and the caches in front).
            try need(1, 1)
        case "expires", "exp":
            try need(1, 1)
            expires = try Self.integer(args[0], name: name, in: 0...RenderParameters.latestExpiry)
        case "filename", "fn":
            try need(1, 2)
            try applyFilename(args, name: name)
        case "return_attachment", "att":
            try need(1, 1)
            attachment = try Self.bool(args[0], name: name)
        case "preset", "pr":
            guard depth < 4 else { throw .badRequest("imgproxy presets nest more than 4 deep") }
            for preset in args {
                guard let options = presets[preset] else { throw .badRequest("unknown imgproxy preset '\(preset)'") }
                for option in options { try apply(option, presets: presets, server: server, depth: depth + 1) }
            }
        default:
            if let reason = Self.refused[name] { throw .badRequest("imgproxy option '\(name)': \(reason)") }
            throw .badRequest("unknown imgproxy option '\(name)'")
        }
    }

    private mutating func applyResizingType(_ text: String, name: String) throws(ProxyError) {
        guard ["fit", "fill", "fill-down", "force", "auto"].contains(text) else {
            throw .badRequest(
                "imgproxy option '\(name)': the resizing type must be fit, fill, fill-down, force or auto")
        }
        resizingType = text
    }

    /// `width:height:enlarge:extend…`, each optional.
    private mutating func applySize(_ args: [String], name: String) throws(ProxyError) {
        if args.count > 0, !args[0].isEmpty { width = try Self.positiveInteger(args[0], name: name) }
        if args.count > 1, !args[1].isEmpty { height = try Self.positiveInteger(args[1], name: name) }
        if args.count > 2, !args[2].isEmpty { enlarge = try Self.bool(args[2], name: name) }
        if args.count > 3, !args[3].isEmpty {
            extend = try Self.bool(args[3], name: name) ? try Self.gravity(Array(args.dropFirst(4)), name: name) : nil
        }
    }

    private mutating func applyTrim(_ args: [String], name: String) throws(ProxyError) {
        let threshold = args[0].isEmpty ? 10 : try Self.number(args[0], name: name, in: 0...442)
        var background = ImageProcessors.Trim.Background.topLeft
        if args.count > 1, !args[1].isEmpty {
            guard let color = RenderParameters.color(hex: args[1]) else {
                throw .badRequest("imgproxy option '\(name)': the colour must be hexadecimal RRGGBB")
            }
            background = .color(color)
        }
        let horizontal = args.count > 2 && !args[2].isEmpty ? try Self.bool(args[2], name: name) : false
        let vertical = args.count > 3 && !args[3].isEmpty ? try Self.bool(args[3], name: name) : false
        trim = ImageProcessors.Trim(
            background: background, threshold: threshold, equalHorizontal: horizontal, equalVertical: vertical)
    }

    private mutating func applyBackground(_ args: [String], name: String) throws(ProxyError) {
        switch args.count {
        case 1 where args[0].isEmpty:
            background = nil
        case 1:
            guard let color = RenderParameters.color(hex: args[0]) else {
                throw .badRequest("imgproxy option '\(name)' must be a hexadecimal colour or R:G:B")
            }
            background = color
        case 3:
            let channels = try args.map { text throws(ProxyError) in
                UInt8(try Self.integer(text, name: name, in: 0...255))
            }
            background = PixelColor(red: channels[0], green: channels[1], blue: channels[2])
        default:
            throw .badRequest("imgproxy option '\(name)' must be a hexadecimal colour or R:G:B")
        }
    }

    private mutating func applyWatermark(
        _ args: [String], name: String, server: ServerConfiguration
    ) throws(ProxyError) {
        let opacity = try Self.number(args[0], name: name, in: 0...1)
        guard opacity > 0 else {
            watermark = nil
            return
        }
        guard server.watermark != nil else {
            throw .badRequest("imgproxy option '\(name)': this server has no watermark")
        }
        var placement = WatermarkPlacement(opacity: opacity)
        // imgproxy's default position is the centre.
        placement.anchor = .center
        if args.count > 1, !args[1].isEmpty {
            if args[1] == "re" {
                placement.tiled = true
            } else {
                guard let anchor = Self.anchors[args[1]] else {
                    throw .badRequest("imgproxy option '\(name)': the position must be a gravity type or re")
                }
                placement.anchor = anchor
            }
        }
        func offset(_ index: Int) throws(ProxyError) -> Int {
            guard args.count > index, !args[index].isEmpty else { return 0 }
            let value = try Self.number(args[index], name: name, in: -4096...4096)
            guard value == value.rounded() else {
                throw .badRequest("imgproxy option '\(name)': Osprey takes watermark offsets in whole pixels")
            }
            return Int(value)
        }
        (placement.x, placement.y) = (try offset(2), try offset(3))
        if args.count > 4, !args[4].isEmpty {
            let scale = try Self.number(args[4], name: name, in: 0...1)
            placement.scale = scale > 0 ? scale : nil
        }
        watermark = placement
    }

    private mutating func applyFilename(_ args: [String], name: String) throws(ProxyError) {
        var text = args[0]
        if args.count > 1, try Self.bool(args[1], name: name) {
            guard let bytes = Base64URL.decode(text), let decoded = String(bytes: bytes, encoding: .utf8) else {
                throw .badRequest("imgproxy option '\(name)': the filename is not valid base64url")
            }
            text = decoded
        } else {
            guard let decoded = PercentEncoding.decoding(text) else {
                throw .badRequest("imgproxy option '\(name)': the filename is not validly percent-encoded")
            }
            text = decoded
        }
        guard (1...200).contains(text.count), !text.contains(where: { $0.isNewline || $0 == "\"" }) else {
            throw .badRequest("imgproxy option '\(name)': the filename must be 1 to 200 characters, without quotes")
        }
        filename = text
    }
}
