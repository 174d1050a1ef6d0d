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
///   keeps each segment to its share more tightly (``segmentRateTolerance``).
/// - **Peak rate** (`--max-bitrate` with `--buffer-size`, with either mode above): the stitched
///   stream keeps to one leaky-bucket buffer over the whole file. Every segment starts its
///   encoder's buffer model at ``segmentBufferFill``. With an average bit rate the warm-up still
///   runs (the cold start cost 5.6 dB at joins): the model then meets the segment's first picture
///   at the level the encoder steered to over the same frames its predecessor just encoded.
public enum RateControl {
    /// The constant-quality level used when neither a quality nor a bit rate is given.
    static func defaultQuality(_ encoderName: String) -> Int? {
        switch encoderName {
        case "libx264": 23
        case "libx265": 28
        case "libvpx-vp9": 31
        case "libsvtav1": 35
        case "libaom-av1": 32
        default: nil
        }
    }

    /// How much of the video before a bit-rate segment's start its encoder codes and drops, so that
    /// its rate control has settled when the segment's own first frame (an IDR) arrives. A tenth
    /// more encoding with the default 10 s segments. Half a second halves that but left joins
    /// up to 0.9 dB under their segment on the benchmark clips (1 s: 0.5 dB).
    public static let warmUp = MediaTime(seconds: 1)

    /// x264's `ratetol` for bit-rate segments (its default is 1). A single pass over a whole file
    /// lets its average drift by up to two seconds' worth of bits (growing with the square root
    /// of the time done) and pays it back later; a segment has no later to pay back in, so its
    /// error stays in the file. Measured on the benchmark clips (1 and 2 s segments, 600 kbit/s):
    /// with 1, 549 and 580 kbit/s (−9 %, −3 %); with 0.25, 578 and 602 (−4 %, +0.3 %), the
    /// same mean PSNR within 0.1 dB and no deeper dips.
    static let segmentRateTolerance = "0.25"

    /// Whether `settings` encode segments after the first with a ``warmUp``: an average rate (its
    /// control starts cold), and a peak rate with x264 or x265 (their buffer model starts at
    /// ``segmentBufferFillPercent``, and a constant quality under a binding cap gave its first
    /// frames 1.5–1.9 dB less than the rest of their segment; warmed up, the model has settled
    /// where the encoder steers it: 0.7 dB on the benchmark clip, the stitched buffer's low point
    /// 18 % instead of 39 %).
    static func warmsUp(_ settings: VideoSettings) -> Bool {
        (settings.bitrate != nil && [.h264, .hevc, .vp9].contains(settings.codec))
            || (settings.maxBitrate != nil && [.h264, .hevc].contains(settings.codec))
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
