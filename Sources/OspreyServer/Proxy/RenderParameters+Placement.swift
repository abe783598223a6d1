import FoundationEssentials
import Osprey
import OspreyCodecs

// The cropping and placement parameters of `/img`: gravity, fp, crop, extend, pad, bg, rot, flip, sharpen, dpr.
extension RenderParameters {
    /// `gravity=` names, long and short (imgproxy's): where a cover crop or an extended canvas puts the image.
    static let gravities: [String: Anchor] = [
        "center": .center, "ce": .center, "north": .top, "no": .top, "south": .bottom, "so": .bottom,
        "east": .right, "ea": .right, "west": .left, "we": .left, "northeast": .topRight, "noea": .topRight,
        "northwest": .topLeft, "nowe": .topLeft, "southeast": .bottomRight, "soea": .bottomRight,
        "southwest": .bottomLeft, "sowe": .bottomLeft,
    ]

    /// The long name of a `gravity=` anchor, as the canonical form writes it.
    static func gravityName(_ anchor: Anchor) -> String {
        let names = ["center", "north", "south", "east", "west", "northeast", "northwest", "southeast", "southwest"]
        return names.first { gravities[$0] == anchor } ?? "center"
    }

    /// Reads the placement parameters from `values`, then multiplies the size by `dpr` within the limits.
    mutating func parsePlacement(_ values: [String: String], maxOutputPixels: Int) throws(ProxyError) {
        if let text = values["gravity"] {
            // NAME[:X:Y]: offsets from the named edge, pixels (1 or more) or fractions (less than 1), as imgproxy's.
            let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            if parts == ["smart"] || parts == ["sm"] {
                smartGravity = true
            } else if parts.count == 1 || parts.count == 3, let anchor = Self.gravities[parts[0]] {
                gravity = anchor
                if parts.count == 3 {
                    let range = -Double(Self.maximumCropSide)...Double(Self.maximumCropSide)
                    guard let x = DecimalText.number(parts[1]), let y = DecimalText.number(parts[2]),
                        range.contains(x), range.contains(y)
                    else { throw .badRequest("'gravity' offsets must be numbers: NAME:X:Y") }
                    (gravityOffsetX, gravityOffsetY) = (x, y)
                }
            } else {
                throw .badRequest(
                    "'gravity' must be smart, center, north, south, east, west, northeast, northwest, "
                        + "southeast or southwest (or sm, ce, no, so, ea, we, noea, nowe, soea, sowe), "
                        + "with :X:Y offsets or not")
            }
        }
        if let text = values["fp"] {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false).map { DecimalText.number($0) }
            guard parts.count == 2, let x = parts[0], let y = parts[1], (0...1).contains(x), (0...1).contains(y) else {
                throw .badRequest("'fp' must be x:y, each from 0 to 1")
            }
            guard gravity == nil, !smartGravity else { throw .badRequest("give 'gravity' or 'fp', not both") }
            focus = Anchor(x: x, y: y)
        }
        if let text = values["crop"] {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false).map { DecimalText.integer($0) }
            guard parts.count == 4, let x = parts[0], let y = parts[1], let w = parts[2], let h = parts[3],
                (0...Self.maximumCropSide).contains(x), (0...Self.maximumCropSide).contains(y),
                (1...Self.maximumCropSide).contains(w), (1...Self.maximumCropSide).contains(h)
            else { throw .badRequest("'crop' must be x:y:w:h, pixels of the source (w and h at least 1)") }
            crop = .rect(x: x, y: y, width: w, height: h)
        }
        extends = try Self.flag(values["extend"], name: "extend")
        if extends, width == nil || height == nil { throw .badRequest("'extend' needs both 'w' and 'h'") }
        extendsAspectRatio = try Self.flag(values["exar"], name: "exar")
        if extendsAspectRatio, width == nil || height == nil { throw .badRequest("'exar' needs both 'w' and 'h'") }
        if let text = values["pad"] {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false).map { DecimalText.integer($0) }
            let range = 0...Self.maximumPadding
            guard parts.count == 1 || parts.count == 4, parts.allSatisfy({ $0.map(range.contains) ?? false }) else {
                throw .badRequest("'pad' must be N or top:right:bottom:left, each from 0 to \(Self.maximumPadding)")
            }
            let sides = parts.compactMap { $0 }
            padding =
                sides.count == 1 ? (sides[0], sides[0], sides[0], sides[0]) : (sides[0], sides[1], sides[2], sides[3])
        }
        if let text = values["bg"] {
            guard let color = Self.color(hex: text) else { throw .badRequest("'bg' must be RRGGBB or RRGGBBAA in hex") }
            background = color
        }
        if let degrees = try Self.integer(values["rot"], name: "rot", in: 0...270) {
            guard degrees % 90 == 0 else { throw .badRequest("'rot' must be 0, 90, 180 or 270") }
            quarterTurns = degrees / 90
        }
        if let text = values["flip"] {
            guard ["h", "v", "hv", "vh"].contains(text) else { throw .badRequest("'flip' must be h, v or hv") }
            (flipsHorizontally, flipsVertically) = (text.contains("h"), text.contains("v"))
        }
        sharpen = try Self.number(values["sharpen"], name: "sharpen", in: 0.1...10)
        if smartGravity, fit != .cover || width == nil || height == nil {
            throw .badRequest("'gravity' smart places a fit=cover crop: give fit=cover, 'w' and 'h'")
        }
        if gravity != nil, fit != .cover, fit != .clip, fit != .auto, !extends, !extendsAspectRatio {
            throw .badRequest("'gravity' places a fit=cover crop or an extend=1 canvas: give one of them")
        }
        if focus != nil, fit != .cover || width == nil || height == nil {
            throw .badRequest("'fp' places a fit=cover crop: give fit=cover, 'w' and 'h'")
        }
        if let text = values["dpr"] {
            guard let ratio = DecimalText.number(text), ratio.isFinite, (1...4).contains(ratio) else {
                throw .badRequest("'dpr' must be a number from 1 to 4")
            }
            applyPixelRatio(ratio, maxOutputPixels: maxOutputPixels)
            givesPixelRatio = true
        }
    }

    /// Multiplies `w`, `h` and the padding by `ratio` (a screen's device pixel ratio), then brings them back down,
    /// keeping their proportions, until `w`×`h` fits the output pixel limit and each side the largest one (and the
    /// padding its own limit).
    mutating func applyPixelRatio(_ ratio: Double, maxOutputPixels: Int) {
        guard ratio > 1 else { return }
        var scale = ratio
        let sides = [width, height].compactMap { $0 }
        if let largest = sides.max() { scale = min(scale, Double(Self.maximumSide) / Double(largest)) }
        if let width, let height {
            scale = min(scale, (Double(maxOutputPixels) / Double(width * height)).squareRoot())
        }
        scale = max(scale, 1)
        func scaled(_ value: Int) -> Int { max(1, Int((Double(value) * scale).rounded(.down))) }
        width = width.map(scaled)
        height = height.map(scaled)
        if let padding {
            // Within the padding's own limit, as the canonical form must parse again.
            func side(_ value: Int) -> Int { min(Int(Double(value) * scale), Self.maximumPadding) }
            self.padding = (side(padding.top), side(padding.right), side(padding.bottom), side(padding.left))
        }
    }
}

/// A `fit=cover` resize whose window sits as near a focus as the image allows: a point of the source (0…1 each way;
/// `fp=x:y`), or the centre of a rectangle of it in pixels (thumbor's `focal(AxB:CxD)`). Enlarges only when asked.
struct FocalCover: ImageProcessing {
    /// What the window is centred on.
    enum Focus: Sendable {
        case point(Anchor)
        case pixels((left: Int, top: Int, right: Int, bottom: Int))
    }

    let width: Int
    let height: Int
    let focus: Focus
    var upscale = false

    var identifier: String {
        let centre =
            switch focus {
            case .point(let point): "\(point)"
            case .pixels(let rect): "\(rect.left)x\(rect.top):\(rect.right)x\(rect.bottom)"
            }
        return "focalcover(\(width)x\(height),focus=\(centre)" + (upscale ? ",upscale)" : ")")
    }

    func process(_ image: Image) throws -> Image {
        let turned = image.orientation.swapsDimensions
        let (sourceWidth, sourceHeight) = turned ? (image.height, image.width) : (image.width, image.height)
        let point: Anchor
        switch focus {
        case .point(let anchor): point = anchor
        case .pixels(let rect):
            point = Anchor(
                x: Double(rect.left + rect.right) / 2 / Double(max(sourceWidth, 1)),
                y: Double(rect.top + rect.bottom) / 2 / Double(max(sourceHeight, 1)))
        }
        let anchor = Self.anchor(
            focus: point, sourceWidth: sourceWidth, sourceHeight: sourceHeight, width: width, height: height,
            upscale: upscale)
        return try ImageProcessors.Resize(width: width, height: height, fit: .cover, anchor: anchor, upscale: upscale)
            .process(image)
    }

    /// The resize anchor that centres the `width`×`height` window on `focus`, or brings it as near as the edges let.
    static func anchor(
        focus: Anchor, sourceWidth: Int, sourceHeight: Int, width: Int, height: Int, upscale: Bool = false
    ) -> Anchor {
        let cover = max(Double(width) / Double(sourceWidth), Double(height) / Double(sourceHeight))
        let scale = upscale ? cover : min(cover, 1)
        let (scaledWidth, scaledHeight) = (Double(sourceWidth) * scale, Double(sourceHeight) * scale)
        func along(_ point: Double, full: Double, window: Double) -> Double {
            let slack = full - window
            guard slack >= 1 else { return 0.5 }
            return min(max((point * full - window / 2) / slack, 0), 1)
        }
        let (x, y) = focus.clamped
        return Anchor(
            x: along(x, full: scaledWidth, window: min(Double(width), scaledWidth)),
            y: along(y, full: scaledHeight, window: min(Double(height), scaledHeight)))
    }
}

/// Where `wm=OPACITY[:POSITION[:X:Y[:SCALE]]]` puts the server's watermark: opacity 0–1, a `gravity` name (the
/// bottom right by default) or `re` (tiled over the whole image), offsets in from the anchored edges (0–4096
/// pixels; the spacing of tiles), and a width as a fraction of the result's (0–1; 0, the default, for the mark's own
/// size).
struct WatermarkPlacement: Sendable {
    var opacity: Double
    var anchor: Anchor = .bottomRight
    var x = 0
    var y = 0
    var scale: Double?
    /// `re`: the mark repeated over the whole image.
    var tiled = false

    init(opacity: Double) {
        self.opacity = opacity
    }

    init(parsing text: String) throws(ProxyError) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let form =
            "'wm' must be OPACITY[:POSITION[:X:Y[:SCALE]]]: opacity 0 to 1, a gravity, offsets 0 to "
            + "\(RenderParameters.maximumPadding), scale 0 to 1"
        guard [1, 2, 4, 5].contains(parts.count), let opacity = DecimalText.number(parts[0]), (0...1).contains(opacity)
        else {
            throw .badRequest(form)
        }
        self.opacity = opacity
        if parts.count >= 2 {
            if parts[1] == "re" {
                tiled = true
            } else {
                guard let anchor = RenderParameters.gravities[parts[1]] else { throw .badRequest(form) }
                self.anchor = anchor
            }
        }
        if parts.count >= 4 {
            let range = 0...RenderParameters.maximumPadding
            guard let x = DecimalText.integer(parts[2]), let y = DecimalText.integer(parts[3]), range.contains(x),
                range.contains(y)
            else {
                throw .badRequest(form)
            }
            (self.x, self.y) = (x, y)
        }
        if parts.count == 5 {
            guard let scale = DecimalText.number(parts[4]), (0...1).contains(scale) else { throw .badRequest(form) }
            self.scale = scale > 0 ? scale : nil
        }
    }

    /// The canonical spelling: every field, so that equal placements have equal keys.
    var canonical: String {
        "\(opacity):\(tiled ? "re" : RenderParameters.gravityName(anchor)):\(x):\(y):\(scale ?? 0)"
    }
}
