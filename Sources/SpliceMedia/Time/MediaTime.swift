/// An exact point in media time: `value / timescale` seconds.
///
/// Like `CMTime`, a `MediaTime` never goes through floating point. Times in different timescales
/// compare exactly (by cross-multiplying in 128-bit arithmetic); converting to another timescale is
/// the only operation that can round, and it rounds by one documented rule (see ``Rounding``).
public struct MediaTime: Sendable, Codable {
    /// The count of `1 / timescale` second units.
    public var value: Int64
    /// Units per second; always positive.
    public var timescale: Int32

    /// Creates `value / timescale` seconds. `timescale` must be positive.
    public init(value: Int64, timescale: Int32) {
        precondition(timescale > 0, "MediaTime timescale must be positive")
        self.value = value
        self.timescale = timescale
    }

    private enum CodingKeys: String, CodingKey { case value, timescale }

    /// Decodes a time; a timescale that is not positive is refused here (it arrives from files
    /// and the wire), so no later arithmetic divides by it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let timescale = try container.decode(Int32.self, forKey: .timescale)
        guard timescale > 0 else {
            throw DecodingError.dataCorruptedError(
                forKey: .timescale, in: container, debugDescription: "timescale \(timescale) is not positive")
        }
        self.init(value: try container.decode(Int64.self, forKey: .value), timescale: timescale)
    }

    /// A whole number of seconds.
    public init(seconds: Int64) {
        self.init(value: seconds, timescale: 1)
    }

    /// Zero seconds.
    public static let zero = MediaTime(value: 0, timescale: 1)

    /// Earlier than any time a file holds (about −36 million years); an open lower bound.
    public static let distantPast = MediaTime(value: -(Int64(1) << 60), timescale: 1)

    /// How a conversion to a coarser timescale resolves a value that falls between two units.
    public enum Rounding: Sendable, Codable {
        /// To the nearest unit; a value exactly halfway rounds away from zero (FFmpeg's
        /// `AV_ROUND_NEAR_INF`, the rule `av_rescale_q` uses). The default everywhere.
        case nearest
        /// Toward negative infinity: the last unit at or before the exact time.
        case down
        /// Toward positive infinity: the first unit at or after the exact time.
        case up
        /// Toward zero (truncation).
        case towardZero
    }

    /// This time expressed in `timescale`, rounded by `rounding` when it is not exact.
    /// Values beyond the range of `Int64` saturate (they only arise from corrupt input).
    public func converted(to timescale: Int32, rounding: Rounding = .nearest) -> MediaTime {
        if timescale == self.timescale { return self }
        let v = MediaTime.rescale(value, multiplier: Int64(timescale), divisor: Int64(self.timescale),
                                  rounding: rounding)
        return MediaTime(value: v, timescale: timescale)
    }

    /// `a * b / c` computed exactly in 128 bits and rounded once by `rounding`; saturates at the
    /// `Int64` limits. `c` must be non-zero. This is the single place Splice rounds media time.
    public static func rescale(_ a: Int64, multiplier b: Int64, divisor c: Int64,
                               rounding: Rounding = .nearest) -> Int64 {
        precondition(c != 0, "rescale divisor must be non-zero")
        let negative = (a < 0) != (b < 0) && a != 0 && b != 0
        let resultNegative = negative != (c < 0)
        let product = a.magnitude.multipliedFullWidth(by: b.magnitude)
        let d = c.magnitude
        guard product.high < d else {
            return resultNegative ? Int64.min : Int64.max
        }
        var (q, r) = d.dividingFullWidth(product)
        if r != 0 {
            let bump: Bool
            switch rounding {
            case .nearest: bump = r >= d - r  // 2r >= d without overflow
            case .down: bump = resultNegative
            case .up: bump = !resultNegative
            case .towardZero: bump = false
            }
            if bump {
                let (next, overflow) = q.addingReportingOverflow(1)
                if overflow { return resultNegative ? Int64.min : Int64.max }
                q = next
            }
        }
        if resultNegative {
            return q >= UInt64(Int64.max) + 1 ? Int64.min : -Int64(q)
        }
        return q > UInt64(Int64.max) ? Int64.max : Int64(q)
    }

    /// The greatest common divisor, used to keep combined timescales small.
    static func gcd(_ a: Int64, _ b: Int64) -> Int64 {
        var (x, y) = (a.magnitude, b.magnitude)
        while y != 0 { (x, y) = (y, x % y) }
        return Int64(x)
    }

    /// The timescale two times are combined in: their least common multiple when it fits in
    /// `Int32` (exact), otherwise the finer of the two (the coarser operand is rounded, nearest).
    static func commonTimescale(_ a: Int32, _ b: Int32) -> Int32 {
        if a == b { return a }
        let l = Int64(a) / gcd(Int64(a), Int64(b)) * Int64(b)
        return l <= Int64(Int32.max) ? Int32(l) : Swift.max(a, b)
    }

    /// The fraction reduced to lowest terms (timescale stays positive).
    public var reduced: MediaTime {
        let g = MediaTime.gcd(value, Int64(timescale))
        guard g > 1 else { return self }
        return MediaTime(value: value / g, timescale: Int32(Int64(timescale) / g))
    }

    /// Whole seconds, rounded toward negative infinity.
    public var wholeSeconds: Int64 {
        converted(to: 1, rounding: .down).value
    }
}

// MARK: - Comparison

extension MediaTime: Comparable, Hashable {
    /// Three-way exact comparison by cross-multiplication (no rounding).
    static func compare(_ a: MediaTime, _ b: MediaTime) -> Int {
        if a.timescale == b.timescale { return a.value < b.value ? -1 : (a.value > b.value ? 1 : 0) }
        let l = a.value.multipliedFullWidth(by: Int64(b.timescale))
        let r = b.value.multipliedFullWidth(by: Int64(a.timescale))
        if l.high != r.high { return l.high < r.high ? -1 : 1 }
        if l.low != r.low { return l.low < r.low ? -1 : 1 }
        return 0
    }

    public static func < (a: MediaTime, b: MediaTime) -> Bool { compare(a, b) < 0 }
    public static func == (a: MediaTime, b: MediaTime) -> Bool { compare(a, b) == 0 }

    public func hash(into hasher: inout Hasher) {
        let r = reduced
        hasher.combine(r.value)
        hasher.combine(r.timescale)
    }
}

// MARK: - Arithmetic

extension MediaTime {
    /// The sum, in the two operands' common timescale (see ``commonTimescale``). Saturates.
    public static func + (a: MediaTime, b: MediaTime) -> MediaTime {
        let ts = commonTimescale(a.timescale, b.timescale)
        let x = a.converted(to: ts), y = b.converted(to: ts)
        let (v, overflow) = x.value.addingReportingOverflow(y.value)
        return MediaTime(value: overflow ? (y.value > 0 ? .max : .min) : v, timescale: ts)
    }

    /// The difference, in the two operands' common timescale. Saturates.
    public static func - (a: MediaTime, b: MediaTime) -> MediaTime {
        a + (-b)
    }

    public static prefix func - (a: MediaTime) -> MediaTime {
        MediaTime(value: a.value == .min ? .max : -a.value, timescale: a.timescale)
    }

    public static func += (a: inout MediaTime, b: MediaTime) { a = a + b }
    public static func -= (a: inout MediaTime, b: MediaTime) { a = a - b }

    /// The time multiplied by an integer. Saturates.
    public static func * (a: MediaTime, n: Int64) -> MediaTime {
        let (v, overflow) = a.value.multipliedReportingOverflow(by: n)
        return MediaTime(value: overflow ? ((a.value < 0) != (n < 0) ? .min : .max) : v, timescale: a.timescale)
    }

    /// The time scaled by the exact ratio `numerator / denominator`, keeping the timescale.
    public func scaled(by numerator: Int64, _ denominator: Int64, rounding: Rounding = .nearest) -> MediaTime {
        MediaTime(value: MediaTime.rescale(value, multiplier: numerator, divisor: denominator, rounding: rounding),
                  timescale: timescale)
    }

    /// The number of whole `unit`s in this time (e.g. samples when `unit` is `1 / sampleRate`),
    /// rounded by `rounding`.
    public func count(of unit: MediaTime, rounding: Rounding = .down) -> Int64 {
        precondition(unit.value > 0, "unit must be positive")
        // (value / ts) / (u / uts) = value * uts / (ts * u)
        let den = Int64(timescale).multipliedReportingOverflow(by: unit.value)
        if !den.overflow {
            return MediaTime.rescale(value, multiplier: Int64(unit.timescale), divisor: den.partialValue,
                                     rounding: rounding)
        }
        let inUnitScale = converted(to: unit.timescale, rounding: rounding)
        return MediaTime.rescale(inUnitScale.value, multiplier: 1, divisor: unit.value, rounding: rounding)
    }

    /// The smaller of two times.
    public static func min(_ a: MediaTime, _ b: MediaTime) -> MediaTime { a < b ? a : b }
    /// The larger of two times.
    public static func max(_ a: MediaTime, _ b: MediaTime) -> MediaTime { a < b ? b : a }
}

// MARK: - Text

extension MediaTime: CustomStringConvertible {
    /// Seconds with up to six decimals, computed in integers ("12.5s", "-0.021333s").
    public var description: String {
        let micro = converted(to: 1_000_000)
        let sign = micro.value < 0 ? "-" : ""
        let mag = micro.value.magnitude
        var fraction = String(mag % 1_000_000)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(sign)\(mag / 1_000_000)" + (fraction.isEmpty ? "" : ".\(fraction)") + "s"
    }

    /// `HH:MM:SS.mmm`, rounded to the nearest millisecond; for people, not for arithmetic.
    public var clockDescription: String {
        let ms = converted(to: 1000).value
        let sign = ms < 0 ? "-" : ""
        let m = ms.magnitude
        func pad(_ n: UInt64, _ width: Int) -> String {
            let s = String(n)
            return String(repeating: "0", count: Swift.max(0, width - s.count)) + s
        }
        return "\(sign)\(pad(m / 3_600_000, 2)):\(pad(m / 60_000 % 60, 2)):\(pad(m / 1000 % 60, 2)).\(pad(m % 1000, 3))"
    }

    /// Parses what people type for a time, exactly: seconds as a decimal (`"90"`, `"1.5"`,
    /// `"0.041708"`), `MM:SS(.fff)`, `HH:MM:SS(.fff)`, or an exact fraction `"1001/30000"`.
    /// Returns `nil` for anything else (including negative times and more than 9 decimals).
    public init?(parsing text: String) {
        let s = text.trimmingCharactersInSet(" \t")
        if s.isEmpty { return nil }
        if let slash = s.firstIndex(of: "/") {
            guard let v = Int64(s[s.startIndex..<slash]), let t = Int32(s[s.index(after: slash)...]),
                  v >= 0, t > 0 else { return nil }
            self.init(value: v, timescale: t)
            return
        }
        let parts = s.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var whole: Int64 = 0
        for (i, part) in parts.enumerated() where i < parts.count - 1 {
            guard !part.isEmpty, part.allSatisfy(\.isASCIIDigit), let n = Int64(part) else { return nil }
            if i > 0 && n >= 60 { return nil }
            whole = whole * 60 + n
        }
        let last = parts[parts.count - 1]
        let dot = last.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let secondsText = dot.first, !secondsText.isEmpty, secondsText.allSatisfy(\.isASCIIDigit),
              let seconds = Int64(secondsText) else { return nil }
        if parts.count > 1 && seconds >= 60 { return nil }
        var fractionText = dot.count == 2 ? String(dot[1]) : ""
        guard fractionText.count <= 9, fractionText.allSatisfy(\.isASCIIDigit) else { return nil }
        if dot.count == 2 && fractionText.isEmpty { return nil }
        while fractionText.hasSuffix("0") { fractionText.removeLast() }
        var timescale: Int64 = 1
        for _ in 0..<fractionText.count { timescale *= 10 }
        let fraction = Int64(fractionText) ?? 0
        let wholeSeconds = whole * 60 + seconds
        let (scaled, o1) = wholeSeconds.multipliedReportingOverflow(by: timescale)
        let (value, o2) = scaled.addingReportingOverflow(fraction)
        guard !o1, !o2 else { return nil }
        self.init(value: value, timescale: Int32(timescale))
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

extension String {
    fileprivate func trimmingCharactersInSet(_ set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}

extension MediaTime {
    /// This time as thousandths of `total` (rounded down); 0 when `total` is not positive.
    public func permille(of total: MediaTime) -> Int64 {
        guard total.value > 0 else { return 0 }
        let (den, overflow) = total.value.multipliedReportingOverflow(by: Int64(timescale))
        if overflow { return 0 }
        return MediaTime.rescale(value, multiplier: 1000 * Int64(total.timescale), divisor: den, rounding: .down)
    }
}
