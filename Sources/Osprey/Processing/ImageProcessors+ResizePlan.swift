extension ImageProcessors.Resize {
    /// What resizing a `sourceWidth` × `sourceHeight` image does: the source rectangle sampled and the output size;
    /// `nil` when the image stays as it is.
    ///
    /// The arithmetic is imgproxy's (`processing/prepare.go`), so that its URLs give the sizes they give there: a
    /// shrink factor per axis from the box, made equal as the fit says, divided by the zoom, held at 1 without
    /// ``upscale``, lowered for ``minWidth`` and ``minHeight``; the scaled size rounded half away from zero; then,
    /// for the fits that crop, the crop to the box (for `cover` without ``upscale``, to the box's aspect ratio),
    /// placed by ``anchor`` and the offsets.
    ///
    /// - Throws: ``ImageProcessingError`` when neither side is given, or a side of the box or of the source is not
    ///   positive (an empty source has no scale that would not enlarge it).
    public func plan(sourceWidth w: Int, sourceHeight h: Int) throws -> (rect: PixelRect, width: Int, height: Int)? {
        guard width != nil || height != nil else {
            throw ImageProcessingError(processor: identifier, reason: "give a width, a height or both")
        }
        guard (width ?? 1) > 0, (height ?? 1) > 0, (minWidth ?? 1) > 0, (minHeight ?? 1) > 0 else {
            throw ImageProcessingError(processor: identifier, reason: "the width and height must be positive")
        }
        guard w > 0, h > 0 else {
            throw ImageProcessingError(processor: identifier, reason: "the source is empty (\(w)×\(h))")
        }
        let (sw, sh) = (Double(w), Double(h))
        let fit = resolvedFit(sourceWidth: sw, sourceHeight: sh)
        let shrink = shrinkFactors(sourceWidth: sw, sourceHeight: sh, fit: fit)
        // Saturating: an upscale to an absurd size becomes a buffer too large to allocate (an error), not a trap.
        func rounded(_ value: Double) -> Int { value < Double(Int.max) ? max(Int(value.rounded()), 1) : .max }
        var (scaleX, scaleY) = (1 / shrink.x, 1 / shrink.y)
        var (scaledWidth, scaledHeight) = (rounded(sw * scaleX), rounded(sh * scaleY))
        if fit == .fill, !upscale {
            // Stretched, but no side longer than the source's.
            (scaledWidth, scaledHeight) = (min(scaledWidth, w), min(scaledHeight, h))
            (scaleX, scaleY) = (Double(scaledWidth) / sw, Double(scaledHeight) / sh)
        }
        var (outWidth, outHeight) = (scaledWidth, scaledHeight)
        if let crop = resultCrop(fit, scaledWidth: scaledWidth, scaledHeight: scaledHeight) {
            (outWidth, outHeight) = (min(crop.width, scaledWidth), min(crop.height, scaledHeight))
        }
        if outWidth == scaledWidth, outHeight == scaledHeight {
            guard outWidth != w || outHeight != h else { return nil }
            return (PixelRect(x: 0, y: 0, width: sw, height: sh), outWidth, outHeight)
        }
        // The window of the scaled image kept, placed by the anchor and the offsets (in scaled pixels, where the
        // offsets are measured), then in source pixels.
        let (anchorX, anchorY) = anchor.clamped
        let width = min(Double(outWidth) / scaleX, sw)
        let height = min(Double(outHeight) / scaleY, sh)
        let left = Self.position(full: sw * scaleX, window: Double(outWidth), anchor: anchorX, offset: offsetX)
        let top = Self.position(full: sh * scaleY, window: Double(outHeight), anchor: anchorY, offset: offsetY)
        let rect = PixelRect(
            x: min(left / scaleX, sw - width), y: min(top / scaleY, sh - height), width: width, height: height)
        return (rect, outWidth, outHeight)
    }

    /// The fit `auto` stands for on a `sourceWidth` × `sourceHeight` image: `clip` (imgproxy's `fill`) when it and the
    /// box are both landscape (or square) or both portrait, `inside` otherwise; every other fit is itself.
    func resolvedFit(sourceWidth sw: Double, sourceHeight sh: Double) -> Fit {
        guard fit == .auto else { return fit }
        let boxWidth = width.map(Double.init) ?? sw
        let boxHeight = height.map(Double.init) ?? sh
        return (sw - sh >= 0) == (boxWidth - boxHeight >= 0) ? .clip : .inside
    }

    /// The factors the source is divided by on each axis (more than 1 shrinks, less enlarges).
    private func shrinkFactors(sourceWidth sw: Double, sourceHeight sh: Double, fit: Fit) -> (x: Double, y: Double) {
        let boxWidth = width.map(Double.init) ?? sw
        let boxHeight = height.map(Double.init) ?? sh
        var wshrink = boxWidth != sw ? sw / boxWidth : 1
        var hshrink = boxHeight != sh ? sh / boxHeight : 1
        if wshrink != 1 || hshrink != 1 {
            // One side given: the other follows the aspect ratio, whatever the fit (imgproxy's `force` keeps the
            // source's other side instead).
            switch fit {
            case _ where width == nil: wshrink = hshrink
            case _ where height == nil: hshrink = wshrink
            case .inside:
                wshrink = max(wshrink, hshrink)
                hshrink = wshrink
            case .cover, .clip, .outside:
                wshrink = min(wshrink, hshrink)
                hshrink = wshrink
            case .fill, .auto: break
            }
        }
        wshrink /= zoomX
        hshrink /= zoomY
        // Not enlarged: both factors raised together until neither enlarges (`fill` instead caps each side at the
        // source's, in plan).
        if !upscale, fit != .fill {
            let least = min(wshrink, hshrink)
            if least < 1 {
                wshrink /= least
                hshrink /= least
            }
        }
        if let minWidth, case let least = sw / Double(minWidth), least < wshrink {
            hshrink /= wshrink / least
            wshrink = least
        }
        if let minHeight, case let least = sh / Double(minHeight), least < hshrink {
            wshrink /= hshrink / least
            hshrink = least
        }
        // Never below one pixel a side.
        return (min(wshrink, sw), min(hshrink, sh))
    }

    /// The size the scaled image is cropped to, for the fits that crop (`cover`, `clip`, and `auto` when it is
    /// `clip`); `nil` for the others. A side the box does not give is not cropped.
    private func resultCrop(_ fit: Fit, scaledWidth: Int, scaledHeight: Int) -> (width: Int, height: Int)? {
        guard fit == .cover || fit == .clip else { return nil }
        func scaled(_ side: Int?, _ zoom: Double) -> Int? { side.map { max(Int((Double($0) * zoom).rounded()), 1) } }
        let targetWidth = scaled(width, zoomX)
        let targetHeight = scaled(height, zoomY)
        var cropWidth = targetWidth ?? scaledWidth
        var cropHeight = targetHeight ?? scaledHeight
        // cover without enlarging: an image short of the box is cropped to the box's aspect ratio at its own scale.
        if fit == .cover, !upscale, let targetWidth, let targetHeight {
            let diffWidth = Double(targetWidth) / Double(scaledWidth)
            let diffHeight = Double(targetHeight) / Double(scaledHeight)
            if diffWidth > diffHeight, diffWidth > 1 {
                cropHeight = max(Int((Double(scaledWidth) * Double(targetHeight) / Double(targetWidth)).rounded()), 1)
                cropWidth = scaledWidth
            } else if diffHeight > diffWidth, diffHeight > 1 {
                cropWidth = max(Int((Double(scaledHeight) * Double(targetWidth) / Double(targetHeight)).rounded()), 1)
                cropHeight = scaledHeight
            }
        }
        return (cropWidth, cropHeight)
    }

    /// Where a `window`-long crop starts along a `full`-long side: at `anchor` (0 the start, 1 the end), moved by
    /// `offset` away from the edge it is anchored to (pixels when its magnitude is 1 or more, else a fraction of
    /// `full`), within the side.
    static func position(full: Double, window: Double, anchor: Double, offset: Double) -> Double {
        let slack = full - window
        guard slack > 0 else { return 0 }
        let shift = abs(offset) >= 1 ? offset : offset * full
        return min(max(slack * anchor + (anchor > 0.5 ? -shift : shift), 0), slack)
    }
}
