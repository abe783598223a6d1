public import OspreyCodecs

extension ImageProcessors {
    /// A `fit=cover` resize whose window goes where the picture's interest is (libvips' `smartcrop` by attention):
    /// detail (edges of the luminance), colour (saturation) and skin tones are scored on a small copy, and the window
    /// slides along the axis the crop frees to where it holds the most, a little in favour of the middle when places
    /// score alike. For photos whose subject is off-centre; a flat or evenly busy picture keeps its middle.
    public struct SmartCover: ImageProcessing, Hashable {
        /// The crop's width, in pixels.
        public var width: Int
        /// The crop's height, in pixels.
        public var height: Int

        /// Makes a cover crop to `width` × `height` placed where the picture's interest is.
        public init(width: Int, height: Int) {
            (self.width, self.height) = (width, height)
        }

        /// The processor's name and parameters: part of the cache key of what it makes.
        public var identifier: String { "smartcover(\(width)x\(height))" }

        /// Applies the processor to `image`.
        public func process(_ image: Image) throws -> Image {
            let anchor = try Self.anchor(for: image, width: width, height: height)
            return try Resize(width: width, height: height, fit: .cover, anchor: anchor).process(image)
        }

        /// The side of the copy the interest is scored on.
        static let scoringSide = 96

        /// The resize anchor that puts a `width`×`height` cover window of `image` on its most interesting part.
        public static func anchor(for image: Image, width: Int, height: Int) throws -> Anchor {
            let (sourceWidth, sourceHeight) = image.uprightSize
            guard width > 0, height > 0, sourceWidth > 0, sourceHeight > 0 else { return .center }
            // The window in source pixels: the target's shape at the cover's scale (never enlarging).
            let scale = min(max(Double(width) / Double(sourceWidth), Double(height) / Double(sourceHeight)), 1)
            let windowWidth = min(Double(width) / scale, Double(sourceWidth))
            let windowHeight = min(Double(height) / scale, Double(sourceHeight))
            let freesX = Double(sourceWidth) - windowWidth >= 1
            let freesY = Double(sourceHeight) - windowHeight >= 1
            guard freesX || freesY else { return .center }
            let small = try Resize(width: scoringSide, height: scoringSide, fit: .inside, filter: .box).process(image)
            // Upright (a source smaller than the copy comes back as it was, turned or not).
            let pixels = try small.mappingFrames { $0 }.frames[0].pixels.converted(to: .rgb8)
            let scores = Self.scores(pixels)
            let (w, h) = (pixels.width, pixels.height)
            if freesX {
                let columns = (0..<w).map { x in (0..<h).reduce(0) { $0 + scores[$1 * w + x] } }
                let window = Int((windowWidth / Double(sourceWidth) * Double(w)).rounded())
                return Anchor(x: best(columns, window: window), y: 0.5)
            }
            let rows = (0..<h).map { y in scores[(y * w)..<(y * w + w)].reduce(0, +) }
            let window = Int((windowHeight / Double(sourceHeight) * Double(h)).rounded())
            return Anchor(x: 0.5, y: best(rows, window: window))
        }

        /// Each pixel's interest: the luminance's central differences, a quarter of the saturation, and a bonus
        /// for skin tones (what people look at first in a photo).
        static func scores(_ pixels: PixelBuffer) -> [Int] {
            let (w, h) = (pixels.width, pixels.height)
            var luminance = [Int](repeating: 0, count: w * h)
            var scores = [Int](repeating: 0, count: w * h)
            pixels.withUnsafeBytes { bytes in
                for y in 0..<h {
                    for x in 0..<w {
                        let at = y * pixels.bytesPerRow + x * 3
                        let (r, g, b) = (Int(bytes[at]), Int(bytes[at + 1]), Int(bytes[at + 2]))
                        luminance[y * w + x] = (299 * r + 587 * g + 114 * b) / 1000
                        let saturation = max(r, g, b) - min(r, g, b)
                        scores[y * w + x] = saturation / 4 + (Self.isSkin(r, g, b) ? 96 : 0)
                    }
                }
            }
            for y in 0..<h {
                for x in 0..<w {
                    let left = luminance[y * w + max(x - 1, 0)], right = luminance[y * w + min(x + 1, w - 1)]
                    let up = luminance[max(y - 1, 0) * w + x], down = luminance[min(y + 1, h - 1) * w + x]
                    scores[y * w + x] += abs(right - left) + abs(down - up)
                }
            }
            return scores
        }

        /// Whether a colour lies in the locus of skin tones in normalised r, g (whatever the brightness, above a
        /// floor): reddish, neither as green as straw nor as even as white or gray.
        static func isSkin(_ r: Int, _ g: Int, _ b: Int) -> Bool {
            let sum = r + g + b
            guard sum > 150, r > g, g > b else { return false }
            // In thousandths of the sum, to stay in integers.
            let (red, green) = (r * 1000 / sum, g * 1000 / sum)
            return (380...465).contains(red) && (280...350).contains(green)
        }

        /// Where a `window` of `sums` (per column or row) holds the most, as an anchor from 0 (the start) to 1 (the
        /// end); places within 2 % of the best go to the one nearest the middle.
        static func best(_ sums: [Int], window: Int) -> Double {
            let window = min(max(window, 1), sums.count)
            let slack = sums.count - window
            guard slack > 0 else { return 0.5 }
            var prefix = [0]
            for value in sums { prefix.append(prefix.last! + value) }
            let totals = (0...slack).map { prefix[$0 + window] - prefix[$0] }
            let top = totals.max() ?? 0
            let near = (0...slack).filter { Double(totals[$0]) >= Double(top) * 0.98 }
            let middle = Double(slack) / 2
            let chosen = near.min { abs(Double($0) - middle) < abs(Double($1) - middle) } ?? slack / 2
            return Double(chosen) / Double(slack)
        }
    }
}

extension ImageProcessing where Self == ImageProcessors.SmartCover {
    /// ``ImageProcessors/SmartCover``: a cover resize to `width`×`height` on the picture's most interesting part.
    public static func smartCover(width: Int, height: Int) -> Self {
        ImageProcessors.SmartCover(width: width, height: height)
    }
}
