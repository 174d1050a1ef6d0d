/// The least bit rate at which a rendition plays without a stall from any segment start, after a
/// client has buffered for `buffer` seconds: what a DASH Representation's `@bandwidth` means with
/// the MPD's `@minBufferTime` (ISO/IEC 23009-1, 5.3.5.2) — delivered continuously at that rate from
/// any segment start, every sample is there by the time playback, begun `buffer` seconds after the
/// first bit, needs it.
///
/// HLS's BANDWIDTH is another figure (the peak segment bit rate over runs of segments,
/// ``WrittenRendition/peakBitrate``); a 2 s buffer evens out more than a segment's average does,
/// so this one is lower: 1.94 against 2.44 Mbit/s for a 2 Mbit/s rung of 6 s segments. Stating the
/// higher one to DASH players made them choose a lower rung than the network carried.
enum DeliveryBandwidth {
    /// One sample in decode order: its decode time (in the rendition's time base), its bits, and
    /// whether a segment starts with it.
    struct Sample: Sendable, Hashable {
        var decodeTime: Int64
        var bits: Int64
        var startsSegment: Bool
    }

    /// The least whole bit rate (bits per second) for `samples` with a `buffer` of `bufferSeconds`;
    /// `timeBase` is the decode times' (seconds = value × numerator ÷ denominator).
    ///
    /// From segment start s to sample k (C the bits so far, d the decode times) the rate B must
    /// bring `C[k] − C[s−1] ≤ B · (buffer + d[k] − d[s])`, that is
    /// `C[k] − B·d[k] ≤ min over starts s ≤ k of (C[s−1] − B·d[s]) + B·buffer`: one scan checks a
    /// rate, and a binary search over whole rates finds the least (at most a rate that carries
    /// everything within the buffer). Integer arithmetic, 128 bits wide.
    static func least(_ samples: [Sample], timeBase: Rational, bufferSeconds: Int64) -> Int64 {
        let total = samples.reduce(Int64(0)) { $0 + $1.bits }
        guard total > 0, bufferSeconds > 0, timeBase.numerator > 0, timeBase.denominator > 0 else { return 0 }
        let den = Int128(timeBase.denominator), num = Int128(timeBase.numerator), buffer = Int128(bufferSeconds) * den
        func carries(_ rate: Int64) -> Bool {
            let b = Int128(rate)
            var bits: Int128 = 0
            var best: Int128?  // min over starts of (C[s−1]·den − B·d[s]·num)
            for sample in samples {
                let time = Int128(sample.decodeTime) * num
                if sample.startsSegment || best == nil {
                    let candidate = bits * den - b * time
                    best = best.map { min($0, candidate) } ?? candidate
                }
                bits += Int128(sample.bits)
                if bits * den - b * time > best! + b * buffer { return false }
            }
            return true
        }
        var low: Int64 = 0, high = (total + bufferSeconds - 1) / bufferSeconds  // high carries everything
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if carries(middle) { high = middle } else { low = middle }
        }
        return high
    }
}
