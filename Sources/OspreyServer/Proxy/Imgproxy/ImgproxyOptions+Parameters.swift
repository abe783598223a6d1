import FoundationEssentials
import Osprey
import OspreyCodecs

// imgproxy's options as Osprey's render parameters, and the argument forms imgproxy's parser takes.
extension ImgproxyOptions {
    /// The render these options ask of `source`, in the parameters every URL style shares: a render also expressible
    /// as `/img` gets the same parameters, so the same cache entry.
    ///
    /// - Throws: ``ProxyError/badRequest(_:)`` when the options ask what Osprey refuses (a format it does not write,
    ///   a smart crop gravity), or a size over the output limit.
    func parameters(source text: String, server: ServerConfiguration) throws(ProxyError) -> RenderParameters {
        var parameters: RenderParameters
        if text.hasPrefix("local:///"), server.localRoot != nil, let url = URL(string: text) {
            parameters = RenderParameters(source: url)
            parameters.localPath = url.path(percentEncoded: false)
        } else {
            parameters = RenderParameters(source: try RenderParameters.sourceURL(text))
        }
        // dpr multiplies the size, the least size, absolute offsets and the padding, as imgproxy's does.
        func scaled(_ value: Int, limit: Int = RenderParameters.maximumSide) -> Int? {
            value > 0 ? min(max(Int((Double(value) * dpr).rounded()), 1), limit) : nil
        }
        func offset(_ value: Double) -> Double { abs(value) >= 1 ? (value * dpr).rounded() : value }
        parameters.width = scaled(width)
        parameters.height = scaled(height)
        if let width = parameters.width, let height = parameters.height, width * height > server.maxOutputPixels {
            throw .badRequest("the size is more than the output limit of \(server.maxOutputPixels) pixels")
        }
        let bothSides = parameters.width != nil && parameters.height != nil
        switch resizingType {
        case "fill": parameters.fit = enlarge ? .cover : .clip
        case "fill-down": parameters.fit = .cover
        case "force": parameters.fit = .fill
        case "auto": parameters.fit = .auto
        default: parameters.fit = .inside
        }
        // One side given: every fit keeps the aspect ratio (imgproxy's force keeps the source's other side).
        if !bothSides { parameters.fit = .inside }
        let crops = bothSides && [.cover, .clip, .auto].contains(parameters.fit)
        parameters.enlarges = enlarge
        parameters.minWidth = scaled(minWidth)
        parameters.minHeight = scaled(minHeight)
        parameters.zoomX = min(zoomX, RenderParameters.maximumZoom)
        parameters.zoomY = min(zoomY, RenderParameters.maximumZoom)
        switch gravity {
        case .anchor(let anchor, let x, let y):
            // The centre without offsets is the default: left unset, so that the render keys as `/img`'s does.
            if crops || extend != nil, anchor != .center || x != 0 || y != 0 {
                parameters.gravity = anchor
                (parameters.gravityOffsetX, parameters.gravityOffsetY) = (offset(x), offset(y))
            }
        case .smart: if crops { parameters.smartGravity = true }
        case .focus(let x, let y): if crops { parameters.focus = Anchor(x: x, y: y) }
        }
        if let crop {
            switch crop.gravity ?? gravity {
            case .anchor(let anchor, let x, let y):
                parameters.crop = .gravity(
                    width: crop.width, height: crop.height, anchor: anchor, offsetX: x, offsetY: y)
            case .focus(let x, let y): parameters.crop = .focus(width: crop.width, height: crop.height, x: x, y: y)
            case .smart: throw .badRequest("imgproxy option 'crop': Osprey's smart gravity places resizes, not crops")
            }
        }
        parameters.trim = trim
        if let padding {
            func side(_ value: Int) -> Int { scaled(value, limit: RenderParameters.maximumPadding) ?? 0 }
            parameters.padding = (side(padding.top), side(padding.right), side(padding.bottom), side(padding.left))
        }
        parameters.quarterTurns = rotate / 90
        (parameters.flipsHorizontally, parameters.flipsVertically) = (flipHorizontal, flipVertical)
        parameters.background = background
        if blur > 0 { parameters.blur = min(max(blur, 0.1), 100) }
        if sharpen > 0 { parameters.sharpen = min(max(sharpen, 0.1), 10) }
        if pixelate > 1 { parameters.pixelate = min(pixelate, 1024) }
        if !adjust.isIdentity { parameters.adjustments = [adjust] }
        if let extend {
            parameters.extends = true
            parameters.extendPlacement = Self.placement(extend, offset: offset)
        }
        if let extendAspectRatio, bothSides {
            parameters.extendsAspectRatio = true
            parameters.extendAspectRatioPlacement = Self.placement(extendAspectRatio, offset: offset)
        }
        if var watermark {
            (watermark.x, watermark.y) = (Int(offset(Double(watermark.x))), Int(offset(Double(watermark.y))))
            parameters.watermark = watermark
        }
        parameters.metadata = stripMetadata ? (keepCopyright ? .copyright : .strip) : .all
        if quality > 0 { parameters.quality = quality }
        parameters.formatQualities = formatQualities.filter { $0.value > 0 }
        if maxBytes > 0 { parameters.maxBytes = maxBytes }
        if let format { parameters.format = .encoded(try Self.format(format, name: "format", server: server)) }
        parameters.frame = page
        for name in skipProcessing {
            guard let format = ImageFormat.named(name, coders: server.coders) else {
                throw .badRequest("imgproxy option 'skip_processing': '\(name)' is not an image format Osprey reads")
            }
            parameters.skipProcessing.insert(format)
        }
        parameters.raw = raw
        parameters.expires = expires
        parameters.filename = filename
        parameters.attachment = attachment
        return parameters
    }

    /// Where an extended canvas puts the image, from an extend option's gravity.
    private static func placement(_ gravity: Gravity, offset: (Double) -> Double) -> RenderParameters.Placement {
        switch gravity {
        case .anchor(let anchor, let x, let y):
            RenderParameters.Placement(anchor: anchor, offsetX: offset(x), offsetY: offset(y))
        case .focus(let x, let y): RenderParameters.Placement(anchor: Anchor(x: x, y: y))
        case .smart: RenderParameters.Placement()
        }
    }

    // MARK: Arguments

    /// imgproxy's booleans: `1`, `t`, `true`; `0`, `f`, `false`.
    static func bool(_ text: String, name: String) throws(ProxyError) -> Bool {
        switch text {
        case "1", "t", "true": return true
        case "0", "f", "false": return false
        default: throw .badRequest("imgproxy option '\(name)' takes 1, t, true, 0, f or false, not '\(text)'")
        }
    }

    static func integer(_ text: String, name: String, in range: ClosedRange<Int>) throws(ProxyError) -> Int {
        guard let value = DecimalText.integer(text), range.contains(value) else {
            throw .badRequest(
                "imgproxy option '\(name)' takes an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    static func positiveInteger(_ text: String, name: String) throws(ProxyError) -> Int {
        try integer(text, name: name, in: 0...RenderParameters.maximumCropSide)
    }

    static func number(_ text: String, name: String, in range: ClosedRange<Double>) throws(ProxyError) -> Double {
        guard let value = DecimalText.number(text), range.contains(value) else {
            throw .badRequest(
                "imgproxy option '\(name)' takes a number from \(range.lowerBound.shortText) to "
                    + range.upperBound.shortText)
        }
        return value
    }

    static func positiveNumber(_ text: String, name: String) throws(ProxyError) -> Double {
        try number(text, name: name, in: 0...Double(RenderParameters.maximumCropSide))
    }

    static func positiveNonZeroNumber(_ text: String, name: String) throws(ProxyError) -> Double {
        let value = try number(text, name: name, in: 0...RenderParameters.maximumZoom)
        guard value > 0 else { throw .badRequest("imgproxy option '\(name)' must be greater than 0") }
        return value
    }

    /// `type[:x:y]`, `sm` (when `allowsSmart`) or `fp:x:y`.
    static func gravity(_ args: [String], name: String, allowsSmart: Bool = false) throws(ProxyError) -> Gravity {
        guard let type = args.first, !type.isEmpty else { return .anchor(.center, x: 0, y: 0) }
        switch type {
        case "sm" where allowsSmart:
            guard args.count == 1 else { throw .badRequest("imgproxy option '\(name)': sm takes no offsets") }
            return .smart
        case "fp":
            guard args.count == 3 else { throw .badRequest("imgproxy option '\(name)': fp takes x:y") }
            return .focus(x: try number(args[1], name: name, in: 0...1), y: try number(args[2], name: name, in: 0...1))
        case "obj", "objw", "sm":
            throw .badRequest("imgproxy option '\(name)': gravity '\(type)' is not supported here")
        default:
            guard let anchor = anchors[type], args.count == 1 || args.count == 3 else {
                throw .badRequest(
                    "imgproxy option '\(name)': the gravity must be ce, no, so, ea, we, noea, nowe, soea, sowe, "
                        + (allowsSmart ? "sm or fp:x:y" : "or fp:x:y") + ", with :x:y offsets or not")
            }
            guard args.count == 3 else { return .anchor(anchor, x: 0, y: 0) }
            let range = -Double(RenderParameters.maximumCropSide)...Double(RenderParameters.maximumCropSide)
            return .anchor(
                anchor, x: args[1].isEmpty ? 0 : try number(args[1], name: name, in: range),
                y: args[2].isEmpty ? 0 : try number(args[2], name: name, in: range))
        }
    }

    /// An output format imgproxy names (`jpg`, `png`, `webp`, `avif`, `gif`, `jxl`, …) that Osprey writes.
    static func format(_ text: String, name: String, server: ServerConfiguration) throws(ProxyError) -> ImageFormat {
        if let format = server.coders.encodableFormat(named: text) { return format }
        if text == "best" { throw .badRequest("imgproxy option '\(name)': format best is imgproxy Pro's") }
        let written = server.coders.encodableFormats.map(\.name).joined(separator: ", ")
        throw .badRequest("imgproxy option '\(name)': Osprey writes \(written), not '\(text)'")
    }
}

extension ImageFormat {
    /// The format a decoder or encoder of `coders` reads or writes whose name or file extension is `name`.
    static func named(_ name: String, coders: ImageCoderRegistry) -> ImageFormat? {
        let name = name.lowercased()
        if let format = coders.encodableFormat(named: name) { return format }
        return [.jpeg, .png, .gif, .webp, .avif, .heic, .jxl].first { $0.name == name || $0.fileExtension == name }
    }
}
