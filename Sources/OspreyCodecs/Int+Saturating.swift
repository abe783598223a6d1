extension Int {
    /// `value` truncated towards zero as `Int(_:)` does, but clamped to `Int.min...Int.max` instead of trapping, and 0
    /// for NaN: for Doubles a caller's value can reach (a fraction of a limit, a scaled size), where `Int(_:)` would
    /// end the process on an infinity or a product past 2⁶³.
    package init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= 0x1p63 {
            self = .max
        } else if value < -0x1p63 {
            self = .min
        } else {
            self = Int(value)
        }
    }
}
