/// An encode's CPU cost as a straight line over its frames: a fixed cost per segment (encoder
/// start-up, lead-in decoding, the look-ahead's flush, opening and closing files) plus a cost per
/// output frame, both on one thread — fitted to measured segments of different lengths. The
/// fixed cost is what makes short segments lose.
public struct SegmentCostModel: Sendable, Hashable {
    /// CPU per segment whatever its length, µs.
    public var fixedMicroseconds: Int64
    /// CPU per output frame, ns (ns keep the precision a per-µs figure would lose).
    public var perFrameNanoseconds: Int64
    /// Encoded bytes per output frame.
    public var outputBytesPerFrame: Int64

    public init(fixedMicroseconds: Int64, perFrameNanoseconds: Int64, outputBytesPerFrame: Int64 = 0) {
        self.fixedMicroseconds = fixedMicroseconds
        self.perFrameNanoseconds = perFrameNanoseconds
        self.outputBytesPerFrame = outputBytesPerFrame
    }

    /// One measured segment: its output frames, the CPU its encode took and its bytes.
    public struct Sample: Sendable, Hashable {
        public var frames: Int
        public var cpuMicroseconds: Int64
        public var bytes: Int64
        public init(frames: Int, cpuMicroseconds: Int64, bytes: Int64 = 0) {
            self.frames = frames
            self.cpuMicroseconds = cpuMicroseconds
            self.bytes = bytes
        }
    }

    /// The least-squares line through `samples` (CPU over frames); bytes per frame over all of them.
    /// Needs segments of at least two different lengths; a negative fixed cost (noise) becomes 0
    /// and the per-frame cost is then the samples' mean.
    public static func fit(_ samples: [Sample]) throws(FarmModelError) -> SegmentCostModel {
        let lengths = Set(samples.map(\.frames))
        guard lengths.count >= 2, samples.allSatisfy({ $0.frames > 0 && $0.cpuMicroseconds >= 0 }) else {
            throw FarmModelError(
                "fitting a fixed and a per-frame cost needs segments of at least two lengths, "
                    + "each with frames; got \(samples.count) segments of \(lengths.count) length(s)")
        }
        let n = Double(samples.count)
        let meanX = samples.reduce(0.0) { $0 + Double($1.frames) } / n
        let meanY = samples.reduce(0.0) { $0 + Double($1.cpuMicroseconds) } / n
        let sxy = samples.reduce(0.0) { $0 + (Double($1.frames) - meanX) * (Double($1.cpuMicroseconds) - meanY) }
        let sxx = samples.reduce(0.0) { $0 + (Double($1.frames) - meanX) * (Double($1.frames) - meanX) }
        var slope = sxy / sxx
        var intercept = meanY - slope * meanX
        let frames = samples.reduce(0) { $0 + $1.frames }
        if intercept < 0 {
            intercept = 0
            slope = Double(samples.reduce(Int64(0)) { $0 + $1.cpuMicroseconds }) / Double(frames)
        }
        let bytes = samples.reduce(Int64(0)) { $0 + $1.bytes }
        return SegmentCostModel(
            fixedMicroseconds: Int64(intercept.rounded()),
            perFrameNanoseconds: Int64((slope * 1000).rounded()),
            outputBytesPerFrame: bytes / Int64(frames))
    }

    /// The CPU of a segment of `frames` frames on one thread, µs.
    public func cpuMicroseconds(frames: Int) -> Int64 {
        fixedMicroseconds + (perFrameNanoseconds * Int64(frames) + 500) / 1000
    }

    /// This model at another picture size: the per-frame cost and bytes scaled by the pixel ratio
    /// `to ÷ from` (x264's work per frame grows about with its pixels); the fixed cost is kept.
    public func scaled(pixelsFrom from: Int, to: Int) -> SegmentCostModel {
        SegmentCostModel(
            fixedMicroseconds: fixedMicroseconds,
            perFrameNanoseconds: perFrameNanoseconds * Int64(to) / Int64(from),
            outputBytesPerFrame: outputBytesPerFrame * Int64(to) / Int64(from))
    }
}

/// How an encoder's wall time falls with threads: Amdahl's law with the encoder's parallel fraction
/// `p` — speed-up(t) = 1 ÷ ((1 − p) + p ÷ t).
public struct EncoderScaling: Sendable, Hashable {
    /// The parallel fraction, 0…1.
    public var parallelFraction: Double

    public init(parallelFraction: Double) throws(FarmModelError) {
        guard parallelFraction >= 0 && parallelFraction <= 1 else {
            throw FarmModelError("a parallel fraction is from 0 to 1; got \(parallelFraction)")
        }
        self.parallelFraction = parallelFraction
    }

    /// The fraction whose speed-up on `threads` threads is `speedUp` (from a measurement).
    public init(speedUp: Double, threads: Int) throws(FarmModelError) {
        guard threads >= 2, speedUp >= 1, speedUp <= Double(threads) else {
            throw FarmModelError(
                "a measured speed-up on \(threads) threads must be from 1 to \(threads); got \(speedUp)")
        }
        try self.init(parallelFraction: (1 - 1 / speedUp) / (1 - 1 / Double(threads)))
    }

    /// Wall-time speed-up on `threads` threads over one.
    public func speedUp(threads: Int) -> Double {
        1 / ((1 - parallelFraction) + parallelFraction / Double(max(1, threads)))
    }

    /// The wall time of `cpuMicroseconds` of one thread's work run on `threads` threads, µs.
    public func wallMicroseconds(cpuMicroseconds: Int64, threads: Int) -> Int64 {
        Int64((Double(cpuMicroseconds) / speedUp(threads: threads)).rounded())
    }
}
