/// An exact ratio of two integers: a frame rate (30000/1001), a time base (1/90000) or a pixel
/// aspect ratio. Kept as integers; never converted through floating point.
public struct Rational: Sendable, Hashable, Codable, CustomStringConvertible {
    public var numerator: Int32
    public var denominator: Int32

    /// Creates `numerator / denominator`.
    public init(_ numerator: Int32, _ denominator: Int32) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// Whether the ratio is a usable positive number (FFmpeg reports unknown rates as 0/0 or 0/1).
    public var isPositive: Bool { numerator > 0 && denominator > 0 }

    /// The ratio in lowest terms.
    public var reduced: Rational {
        let g = MediaTime.gcd(Int64(numerator), Int64(denominator))
        guard g > 1 else { return self }
        return Rational(Int32(Int64(numerator) / g), Int32(Int64(denominator) / g))
    }

    /// The duration of one unit when this is a rate (1001/30000 s for 30000/1001 fps).
    public var reciprocalDuration: MediaTime {
        MediaTime(value: Int64(denominator), timescale: numerator)
    }

    /// "30000/1001", or "30" when the denominator is 1.
    public var description: String {
        denominator == 1 ? "\(numerator)" : "\(numerator)/\(denominator)"
    }

    /// Parses "30", "29.97" (as 2997/100), or "30000/1001"; nil for anything else or non-positive.
    public init?(parsing text: String) {
        if let slash = text.firstIndex(of: "/") {
            guard let n = Int32(text[..<slash]), let d = Int32(text[text.index(after: slash)...]),
                  n > 0, d > 0 else { return nil }
            self.init(n, d)
            return
        }
        guard let t = MediaTime(parsing: text), t.value > 0, t.value <= Int64(Int32.max) else { return nil }
        self = Rational(Int32(t.value), t.timescale).reduced
    }
}

extension MediaTime {
    /// A timestamp `value` counted in units of `timeBase` (`value × num / den` seconds), exactly
    /// when `value × num` fits in `Int64`; otherwise rounded to the nearest unit of `1/den`.
    public init(value: Int64, timeBase: Rational) {
        precondition(timeBase.denominator > 0 && timeBase.numerator > 0, "time base must be positive")
        let (product, overflow) = value.multipliedReportingOverflow(by: Int64(timeBase.numerator))
        self.init(value: overflow ? (value < 0 ? .min : .max) : product, timescale: timeBase.denominator)
    }

    /// This time as a count of `timeBase` units, rounded by `rounding`.
    public func value(in timeBase: Rational, rounding: Rounding = .nearest) -> Int64 {
        MediaTime.rescale(value, multiplier: Int64(timeBase.denominator),
                          divisor: Int64(timescale) * Int64(timeBase.numerator), rounding: rounding)
    }
}
