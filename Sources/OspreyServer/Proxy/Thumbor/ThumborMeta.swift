import FoundationEssentials
import Osprey
import OspreyCodecs

/// thumbor's `meta/` answer: what would be done to the source, as thumbor's JSON engine reports it —
/// `{"thumbor":{"source":{"url","width","height","frameCount"},"operations":[…],"target":{"width","height"}}}`, the
/// operations a manual `crop`, the cover's `crop`, the `resize`, and `flip_horizontally`/`flip_vertically`. Read from
/// the source's header alone: no pixel is decoded (a `trim` is not simulated).
struct ThumborMeta {
    let parameters: RenderParameters
    let header: ImageHeader
    /// How many frames the source has.
    let frameCount: Int

    /// The JSON document.
    var json: [UInt8] {
        let size = header.displaySize
        var operations: [String] = []
        var (width, height) = (size.width, size.height)
        if case .rect(let x, let y, let w, let h) = parameters.crop {
            let (left, top) = (min(max(x, 0), width), min(max(y, 0), height))
            let (right, bottom) = (min(x + w, width), min(y + h, height))
            if right > left, bottom > top {
                operations.append(Self.crop(left, top, right, bottom))
                (width, height) = (right - left, bottom - top)
            }
        }
        let turned = parameters.quarterTurns % 2 == 1
        let (boxWidth, boxHeight) =
            turned ? (parameters.height, parameters.width) : (parameters.width, parameters.height)
        if let thumborCrop = parameters.thumborCrop {
            let plan = thumborCrop.plan(sourceWidth: width, sourceHeight: height)
            if (plan.crop.width, plan.crop.height) != (width, height) {
                operations.append(
                    Self.crop(plan.crop.x, plan.crop.y, plan.crop.x + plan.crop.width, plan.crop.y + plan.crop.height))
            }
            operations.append(#"{"type":"resize","width":\#(plan.width),"height":\#(plan.height)}"#)
            (width, height) = (plan.width, plan.height)
        } else if boxWidth != nil || boxHeight != nil {
            let anchor = RenderParameters.unturned(
                parameters.gravity ?? .center, quarterTurns: parameters.quarterTurns,
                flipsHorizontally: parameters.flipsHorizontally, flipsVertically: parameters.flipsVertically)
            let resize = ImageProcessors.Resize(
                width: boxWidth, height: boxHeight, fit: parameters.fit, anchor: anchor, upscale: parameters.enlarges)
            if let plan = try? resize.plan(sourceWidth: width, sourceHeight: height) {
                let rect = plan.rect
                if rect.width.rounded() < Double(width) || rect.height.rounded() < Double(height) {
                    let (left, top) = (Int(rect.x.rounded()), Int(rect.y.rounded()))
                    operations.append(
                        Self.crop(left, top, left + Int(rect.width.rounded()), top + Int(rect.height.rounded())))
                }
                operations.append(#"{"type":"resize","width":\#(plan.width),"height":\#(plan.height)}"#)
                (width, height) = (plan.width, plan.height)
            }
        }
        if parameters.flipsHorizontally { operations.append(#"{"type":"flip_horizontally"}"#) }
        if parameters.flipsVertically { operations.append(#"{"type":"flip_vertically"}"#) }
        if turned { (width, height) = (height, width) }
        let url = Self.escaped(parameters.source.absoluteString)
        let text =
            #"{"thumbor":{"source":{"url":"\#(url)","width":\#(size.width),"height":\#(size.height),"#
            + #""frameCount":\#(frameCount)},"operations":[\#(operations.joined(separator: ","))],"#
            + #""target":{"width":\#(width),"height":\#(height)}}}"#
        return Array(text.utf8)
    }

    private static func crop(_ left: Int, _ top: Int, _ right: Int, _ bottom: Int) -> String {
        #"{"type":"crop","left":\#(left),"top":\#(top),"right":\#(right),"bottom":\#(bottom)}"#
    }

    /// `text` as a JSON string's contents.
    private static func escaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case _ where scalar.value < 0x20:
                result += "\\u00" + (scalar.value < 16 ? "0" : "") + String(scalar.value, radix: 16)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
