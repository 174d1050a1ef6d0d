/// How Splice drives the encoders' rate control, and what it does so that segments encoded apart
/// join without a change in quality or a broken buffer model (docs/media.md, "Rate control").
///
/// - **Constant quality** (`--crf`, and the default with no rate flag): every frame is coded for
///   the same quality wherever its encoder started, so segments join evenly. The defaults are the
///   encoders' own: x264 23, x265 28, SVT-AV1 35; libvpx-vp9 31 and libaom 32 with a zero bit rate
///   (their constant-quality mode).
/// - **Average bit rate** (`--video-bitrate`): an encoder started cold spends too little on
///   its first frames (x264, x265 and libvpx start from a guess and settle over about half a
///   second: 4–5 dB under the rest of the segment at every join, and the file 12 % under its
///   target). A segment after the first therefore encodes ``warmUp`` of the frames before its
///   start first, drops their packets, and begins its own frames with a forced keyframe; x264
///   keeps a short segment to its share more tightly (``segmentRateTolerance(length:)``).
/// - **Peak rate** (`--max-bitrate` with `--buffer-size`, with either mode above): the stitched
///   stream keeps to one leaky-bucket buffer over the whole file. Every segment starts its
///   encoder's buffer model at ``segmentBufferFill``. With an average bit rate the warm-up still
///   runs (the cold start cost 5.6 dB at joins): the model then meets the segment's first picture
///   at the level the encoder steered to over the same frames its predecessor just encoded.
public enum RateControl {
    /// How much of the video before a bit-rate segment's start its encoder codes and drops, so that
    /// its rate control has settled when the segment's own first frame (an IDR) arrives. The same
    /// whatever the segment length: it is what the encoder needs, not a share of the segment.
    ///
    /// Settling takes seconds, not frames: x264's and x265's average-rate control divides all the
    /// bits wanted so far by all the complexity seen so far (nothing decays without a peak rate),
    /// so a segment's quantiser approaches a single pass's only as its history grows. And a
    /// segment that reaches back to the file's start sees exactly what a single pass saw, so the
    /// first join (at 2 s with 2 s segments) is a single pass's frame for frame. Measured with
    /// 2 s segments at 600 kbit/s, x264 veryfast (docs/media.md): a warm-up of 1 s left the worst
    /// join 1.2–1.6 dB under its segment (one ffmpeg: 0.6 dB at the same frames); 2 s, with
    /// ``segmentRateTolerance(length:)``, 0.6 dB; 3 s gained 0.2 dB more on one clip and nothing on
    /// another. It costs encoding: a fifth more with the default 10 s segments, as much again with
    /// 2 s ones.
    ///
    public static let warmUp = MediaTime(seconds: 2)

    /// x264's `ratetol` for a bit-rate segment `length` long; nil keeps x264's default (1).
    ///
    /// x264 lets an average rate drift by `2 × ratetol` seconds' worth of bits (more as the encode
    /// goes on) and pays it back later; a segment has no later, so too loose a tolerance misses
    /// its share (1 s segments with x264's default: 8 % under the target). Too tight, and the
    /// segment pays its forced IDR back within a few frames: with 2 s segments at `0.25`, as
    /// every segment had before, the frames after the IDR sat 0.7–1.2 dB under the rest of their
    /// segment. So the tolerance scales with the segment: a quarter per second, which lets a
    /// segment drift by half its own budget — `0.25` for 1 s segments, `0.5` for 2 s (0.6 dB at
    /// the worst join, its rate within 1 % of one ffmpeg's), x264's own from 4 s on.
    static func segmentRateTolerance(length: MediaTime) -> String? {
        let hundredths = max(10, length.converted(to: 1000, rounding: .down).value / 40)
        guard hundredths < 100 else { return nil }
        return "0." + (hundredths < 10 ? "0" : "") + "\(hundredths)"
    }

    /// Whether `settings` encode segments after the first with a ``warmUp``: an average rate (its
    /// control starts cold), and a peak rate with x264 or x265 (their buffer model starts at
    /// ``segmentBufferFillPercent``, and a constant quality under a binding cap gave its first
    /// frames 1.5–1.9 dB less than the rest of their segment; warmed up, the model has settled
    /// where the encoder steers it: 0.7 dB on the benchmark clip, the stitched buffer's low point
    /// 18 % instead of 39 %).
    static func warmsUp(_ settings: VideoSettings) -> Bool {
        let codec = settings.codec.descriptor
        return (settings.bitrate != nil && codec.warmsUpAverageRate) || (settings.maxBitrate != nil && codec.warmsUpPeakRate)
    }

    /// The buffer fullness (a fraction of `--buffer-size`, as x264's and x265's `vbv-init` take
    /// it) every segment starts its model from, the first included (x265 writes its parameters
    /// into the codec headers, which must be the same in every segment).
    ///
    /// The stitched stream is safe when every segment's model starts no fuller than the real
    /// buffer is when its first picture is due: the real buffer fills and empties exactly like the
    /// model from then on, so it never runs dry where the model did not. The only level *every*
    /// predecessor is bound to leave is one frame interval's fill (a model may end empty); starting
    /// there starves each segment's first picture (docs/media.md has the figures). x264 and x265
    /// steer their model to at least half full by the end of their lookahead, raising the
    /// quantiser until it gets there, so a segment starts at half. Starting every segment at the
    /// encoders' 90 %, as before, spent a buffer the predecessor had already used and ran the
    /// stitched buffer dry. Tests check the whole stitched file with a leaky bucket.
    static let segmentBufferFillPercent = 50
    /// ``segmentBufferFillPercent`` as the encoders' option takes it.
    static var segmentBufferFill: String {
        let p = min(100, max(0, segmentBufferFillPercent))
        return p == 100 ? "1" : "0." + (p < 10 ? "0" : "") + "\(p)"
    }
}
