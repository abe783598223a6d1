import FoundationEssentials
import HTTPTypes
import Osprey

/// `osprey serve --client-hints`: `/img` sized by what the browser says of the screen and the layout, as Cloudinary
/// and imgix read them. A page asks once with `Accept-CH`; the browser then sends the hints with every image request,
/// and one `<img src>` serves every screen.
///
/// - `Sec-CH-DPR` (or `DPR`) multiplies `w` and `h` when the URL gives no `dpr`, as `dpr` would;
/// - `Sec-CH-Width` (or `Width`), the image's layout width in device pixels, is `w` when the URL gives none;
/// - `Sec-CH-Viewport-Width` (or `Viewport-Width`), in CSS pixels, times the DPR, bounds a URL without `w` and
///   without a width hint: the image is no wider than the screen;
/// - `Save-Data: on` lowers the quality to ``saveDataQuality`` when the URL gives no `q`.
///
/// A width from a hint is rounded up to a multiple of ``widthStep`` (so that hints make a few variants, not one per
/// pixel) and kept within the output limits. The response names the hints in `Accept-CH`, and in `Vary` those its
/// answer depends on: the ones the URL leaves room for (a URL with `w` does not depend on the width hint; one with `q`,
/// not on `Save-Data`). Without the flag no hint is read and neither header is sent.
public struct ClientHintsConfiguration: Sendable, Hashable {
    /// A width from a hint is rounded up to a multiple of it. 100 by default.
    public var widthStep = 100
    /// The quality for `Save-Data: on` (when the URL gives none). 50 by default.
    public var saveDataQuality = 50

    /// Makes the policy: widths rounded up to multiples of `widthStep`, and `saveDataQuality` for clients that ask to
    /// save data.
    public init(widthStep: Int = 100, saveDataQuality: Int = 50) {
        self.widthStep = max(widthStep, 1)
        self.saveDataQuality = min(max(saveDataQuality, 1), 100)
    }
}

/// The hints of one request, and what they did to it.
struct ClientHints {
    /// The hints `Accept-CH` asks for.
    static let accepted = "Sec-CH-DPR, Sec-CH-Width, Sec-CH-Viewport-Width, DPR, Width, Viewport-Width"

    /// A hint's value and the header that carried it (what `Vary` names).
    struct Hint<Value> {
        let value: Value
        let header: String
    }

    var pixelRatio: Hint<Double>?
    var width: Hint<Int>?
    var viewportWidth: Hint<Int>?
    var saveData = false

    /// The hints as sent, for the cache of checked queries: the same URL with other hints is another answer (and
    /// another `Vary`).
    var key: String {
        [
            pixelRatio.map { "\($0.header)=\($0.value)" }, width.map { "\($0.header)=\($0.value)" },
            viewportWidth.map { "\($0.header)=\($0.value)" }, saveData ? "Save-Data" : nil,
        ].compactMap { $0 }.joined(separator: "&")
    }

    /// Reads the hints of `headers`: the `Sec-CH-` form first, then the legacy one; values that are not positive
    /// finite numbers are ignored, as browsers would never send them.
    init(_ headers: HTTPFields) {
        func value(_ names: [String]) -> Hint<Double>? {
            for name in names {
                guard let field = HTTPField.Name(name), let text = headers[field] else { continue }
                if let number = DecimalText.number(text.trimmingWhitespace()), number.isFinite, number > 0 {
                    return Hint(value: number, header: name)
                }
            }
            return nil
        }
        pixelRatio = value(["Sec-CH-DPR", "DPR"])
        width = value(["Sec-CH-Width", "Width"]).map {
            Hint(value: Int(min($0.value, 1e6).rounded(.up)), header: $0.header)
        }
        viewportWidth = value(["Sec-CH-Viewport-Width", "Viewport-Width"]).map {
            Hint(value: Int(min($0.value, 1e6).rounded(.up)), header: $0.header)
        }
        if let text = headers[HTTPField.Name("Save-Data")!] {
            saveData = text.split(separator: ";").first.map { $0.trimmingWhitespace().lowercased() == "on" } ?? false
        }
    }

    /// Applies the hints that `parameters` leave room for, within the limits. Returns the hint headers the answer
    /// depends on, for `Vary`: those this URL leaves room for, sent or not (each as the client sent it, else in its
    /// `Sec-CH-` form), since a cache in front must not give a hinted request the answer of a hint-less one.
    func apply(
        to parameters: inout RenderParameters, configuration: ClientHintsConfiguration, maxOutputPixels: Int
    ) -> [String] {
        var vary: [String] = []
        func stepped(_ width: Int) -> Int {
            let step = configuration.widthStep
            let rounded = (width / step + (width % step == 0 ? 0 : 1)) * step
            return min(max(rounded, 1), RenderParameters.maximumSide)
        }
        let (givenWidth, givenHeight) = (parameters.width, parameters.height)
        if givenWidth == nil { vary.append(width?.header ?? "Sec-CH-Width") }
        if givenWidth == nil, givenHeight == nil { vary.append(viewportWidth?.header ?? "Sec-CH-Viewport-Width") }
        if !parameters.givesPixelRatio { vary.append(pixelRatio?.header ?? "Sec-CH-DPR") }
        if parameters.quality == nil, parameters.perceptualTarget == nil { vary.append("Save-Data") }

        let ratio = parameters.givesPixelRatio ? 1 : min(pixelRatio?.value ?? 1, 4)
        if givenWidth == nil, let width {
            // The layout width is in device pixels already: the DPR is not applied again.
            var value = stepped(width.value)
            if let height = givenHeight, value * height > maxOutputPixels { value = max(1, maxOutputPixels / height) }
            parameters.width = value
        } else if givenWidth == nil, givenHeight == nil, let viewportWidth {
            // The screen's width in device pixels bounds the image (which is never enlarged to it).
            let value = stepped(Int(min(Double(viewportWidth.value) * ratio, 1e6).rounded(.up)))
            parameters.width = value
        } else if ratio > 1, givenWidth != nil || givenHeight != nil {
            parameters.applyPixelRatio(ratio, maxOutputPixels: maxOutputPixels)
        }
        if saveData, parameters.quality == nil, parameters.perceptualTarget == nil {
            parameters.quality = configuration.saveDataQuality
        }
        return vary
    }
}
