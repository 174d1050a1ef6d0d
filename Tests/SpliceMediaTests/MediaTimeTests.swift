import Testing
@testable import SpliceMedia

@Suite("MediaTime")
struct MediaTimeTests {
    /// Time bases seen in real files: MP4 video (15360, 90000), audio rates, NTSC, Matroska (1000).
    static let timescales: [Int32] = [1, 24, 25, 1000, 15360, 30000, 44100, 48000, 90000, 1_000_000, 2_147_483_647]

    /// A deterministic pseudo-random sequence (SplitMix64) so failures reproduce.
    struct Values: Sequence, IteratorProtocol {
        var state: UInt64
        var remaining: Int
        mutating func next() -> Int64? {
            guard remaining > 0 else { return nil }
            remaining -= 1
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            // Spread over magnitudes from single digits to ~10^15 (hours at 1 GHz), both signs.
            let magnitude = Int64(z % 1_000_000_000_000_000) >> Int64(z >> 58)
            return (z & 1 == 0) ? magnitude : -magnitude
        }
    }

    @Test func roundingModesFollowTheDocumentedRule() {
        // 1/2 and -1/2: nearest rounds halves away from zero.
        #expect(MediaTime.rescale(1, multiplier: 1, divisor: 2) == 1)
        #expect(MediaTime.rescale(-1, multiplier: 1, divisor: 2) == -1)
        #expect(MediaTime.rescale(1, multiplier: 1, divisor: 3) == 0)
        #expect(MediaTime.rescale(2, multiplier: 1, divisor: 3) == 1)
        #expect(MediaTime.rescale(-2, multiplier: 1, divisor: 3) == -1)
        #expect(MediaTime.rescale(1, multiplier: 1, divisor: 2, rounding: .down) == 0)
        #expect(MediaTime.rescale(-1, multiplier: 1, divisor: 2, rounding: .down) == -1)
        #expect(MediaTime.rescale(1, multiplier: 1, divisor: 2, rounding: .up) == 1)
        #expect(MediaTime.rescale(-1, multiplier: 1, divisor: 2, rounding: .up) == 0)
        #expect(MediaTime.rescale(-5, multiplier: 1, divisor: 2, rounding: .towardZero) == -2)
        #expect(MediaTime.rescale(7, multiplier: -1, divisor: 2, rounding: .down) == -4)
        #expect(MediaTime.rescale(7, multiplier: 1, divisor: -2, rounding: .up) == -3)
    }

    @Test func rescaleIsExactBeyondSixtyFourBits() {
        // 2^62 * 3 / 3 overflows Int64 in the product but not in the result.
        let big = Int64(1) << 62
        #expect(MediaTime.rescale(big, multiplier: 3, divisor: 3) == big)
        #expect(MediaTime.rescale(-big, multiplier: 90000, divisor: 90000) == -big)
        // Saturates instead of trapping when the result itself does not fit.
        #expect(MediaTime.rescale(.max, multiplier: 2, divisor: 1) == .max)
        #expect(MediaTime.rescale(.min, multiplier: 2, divisor: 1) == .min)
        #expect(MediaTime.rescale(.min, multiplier: 1, divisor: 1) == .min)
    }

    @Test(arguments: timescales)
    func convertingToAFinerMultipleAndBackIsExact(timescale: Int32) {
        for factor: Int32 in [2, 3, 7, 1001] {
            let (fine, overflow) = timescale.multipliedReportingOverflow(by: factor)
            guard !overflow else { continue }
            for v in Values(state: UInt64(timescale), remaining: 300) {
                let t = MediaTime(value: v / Int64(factor), timescale: timescale)
                let there = t.converted(to: fine)
                #expect(there == t)
                #expect(there.converted(to: timescale).value == t.value)
            }
        }
    }

    @Test(arguments: timescales)
    func nearestConversionIsWithinHalfAUnit(from: Int32) {
        for to in MediaTimeTests.timescales {
            for v in Values(state: UInt64(from) &* 31 &+ UInt64(to), remaining: 60) {
                // Only where the result fits; beyond that conversion saturates (tested above).
                guard (Int128(v) * Int128(to) / Int128(from)).magnitude < UInt128(Int64.max / 2) else { continue }
                let t = MediaTime(value: v, timescale: from)
                let c = t.converted(to: to)
                // |c/to - v/from| <= 1/(2 to)  ⇔  |2 (c from - v to)| <= from
                let lhs = (Int128(c.value) * Int128(from) - Int128(v) * Int128(to)) * 2
                #expect(lhs.magnitude <= UInt128(from), "\(t) → \(c)")
                let down = t.converted(to: to, rounding: .down), up = t.converted(to: to, rounding: .up)
                #expect(down <= t && t <= up)
                #expect(up.value - down.value <= 1)
            }
        }
    }

    @Test func orderingMatchesExactCrossMultiplication() {
        var previous: MediaTime?
        for (i, v) in Values(state: 42, remaining: 2000).enumerated() {
            let t = MediaTime(value: v, timescale: MediaTimeTests.timescales[i % MediaTimeTests.timescales.count])
            if let p = previous {
                let exact = Int128(p.value) * Int128(t.timescale) - Int128(t.value) * Int128(p.timescale)
                #expect((p < t) == (exact < 0))
                #expect((p == t) == (exact == 0))
                #expect((p > t) == (exact > 0))
            }
            previous = t
        }
        let sorted = Values(state: 7, remaining: 500).enumerated().map {
            MediaTime(value: $1, timescale: MediaTimeTests.timescales[$0 % 5 + 2])
        }.sorted()
        for (a, b) in zip(sorted, sorted.dropFirst()) { #expect(a <= b) }
    }

    @Test func equalTimesInDifferentScalesAreEqualAndHashAlike() {
        let a = MediaTime(value: 1, timescale: 2), b = MediaTime(value: 45000, timescale: 90000)
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
        #expect(MediaTime(value: 1001, timescale: 30000) != MediaTime(value: 1, timescale: 30))
    }

    @Test func arithmeticUsesTheCommonTimescale() {
        let frame = MediaTime(value: 1001, timescale: 30000)
        let sample = MediaTime(value: 1, timescale: 48000)
        let sum = frame + sample
        #expect(sum.timescale == 240000)
        #expect(sum - sample == frame)
        #expect((frame * 30000).wholeSeconds == 1001)
        #expect(-frame + frame == .zero)
        var t = MediaTime.zero
        for _ in 0..<30000 { t += frame }
        #expect(t == MediaTime(seconds: 1001))
        // Timescales whose LCM does not fit in Int32 fall back to the finer one.
        let odd = MediaTime(value: 1, timescale: 2_147_483_647) + MediaTime(value: 1, timescale: 2_147_483_646)
        #expect(odd.timescale == 2_147_483_647)
    }

    @Test func countsWholeUnits() {
        let tenSeconds = MediaTime(seconds: 10)
        #expect(tenSeconds.count(of: MediaTime(value: 1, timescale: 44100)) == 441_000)
        #expect(MediaTime(value: 1001, timescale: 30000).count(of: MediaTime(value: 1, timescale: 48000)) == 1601)
        #expect(MediaTime(value: 1001, timescale: 30000).count(of: MediaTime(value: 1, timescale: 48000), rounding: .up) == 1602)
        #expect(MediaTime(seconds: 5).permille(of: MediaTime(seconds: 10)) == 500)
        #expect(MediaTime(seconds: 5).permille(of: .zero) == 0)
    }

    @Test func parsesWhatPeopleType() {
        #expect(MediaTime(parsing: "1.5") == MediaTime(value: 3, timescale: 2))
        #expect(MediaTime(parsing: "90") == MediaTime(seconds: 90))
        #expect(MediaTime(parsing: "0.041708") == MediaTime(value: 41708, timescale: 1_000_000))
        #expect(MediaTime(parsing: "01:02.5") == MediaTime(value: 625, timescale: 10))
        #expect(MediaTime(parsing: "1:00:00") == MediaTime(seconds: 3600))
        #expect(MediaTime(parsing: "1001/30000") == MediaTime(value: 1001, timescale: 30000))
        for bad in ["", "-1", "abc", "1.", ".5", "1:60", "1:2:3:4", "1.0000000001", "1/0", "x/3", "1e3"] {
            #expect(MediaTime(parsing: bad) == nil, "\(bad) should not parse")
        }
    }

    @Test func describesWithoutFloatingPoint() {
        #expect(MediaTime(value: 25, timescale: 2).description == "12.5s")
        #expect(MediaTime(value: -1024, timescale: 48000).description == "-0.021333s")
        #expect(MediaTime(seconds: 3725).clockDescription == "01:02:05.000")
        #expect(MediaTime(value: 1001, timescale: 30000).clockDescription == "00:00:00.033")
    }

    @Test func rangesAreHalfOpen() {
        let r = MediaTimeRange(start: MediaTime(seconds: 1), end: MediaTime(seconds: 3))
        #expect(r.contains(MediaTime(seconds: 1)))
        #expect(!r.contains(MediaTime(seconds: 3)))
        #expect(r.duration == MediaTime(seconds: 2))
        #expect(MediaTimeRange(start: MediaTime(seconds: 3), end: MediaTime(seconds: 1)).isEmpty)
        #expect(r.intersection(MediaTimeRange(start: MediaTime(seconds: 2), duration: MediaTime(seconds: 5)))
            == MediaTimeRange(start: MediaTime(seconds: 2), end: MediaTime(seconds: 3)))
        #expect(r.intersection(MediaTimeRange(start: MediaTime(seconds: 3), duration: MediaTime(seconds: 1))) == nil)
    }

    @Test func rationalsParseAndConvertTimestamps() {
        #expect(Rational(parsing: "29.97") == Rational(2997, 100))
        #expect(Rational(parsing: "30000/1001") == Rational(30000, 1001))
        #expect(Rational(parsing: "0") == nil)
        #expect(Rational(parsing: "-25") == nil)
        let tb = Rational(1001, 30000)
        let t = MediaTime(value: 30, timeBase: tb)
        #expect(t == MediaTime(value: 30030, timescale: 30000))
        #expect(t.value(in: tb) == 30)
        #expect(MediaTime(value: 1, timescale: 2).value(in: Rational(1, 90000)) == 45000)
    }
}
