public import Foundation

/// What encoding one segment's video produced, so a starved segment shows: the bytes of its video
/// packets (warm-up frames dropped), their bit rate over the segment's span, and the encoder's
/// mean frame QP when it reports one (x264, x265, libvpx); with `--verify` or a quality target,
/// the picture quality measured against the source frames (``quality``) and the CRF the segment
/// was encoded at (``crf``). One form from the encoder to the user: `splice transcode --json`
/// prints it for each segment, a worker's COMPLETE carries it, the store keeps it with the segment
/// (`video_bytes`, `video_bits_per_second`, `mean_qp`, and the quality columns of migration 0007)
/// and `splice status` shows it. A segment without video has none.
public struct SegmentFigures: Sendable, Codable, Hashable {
    /// Bytes of the segment's video packets.
    public var videoBytes: Int64
    /// Their bit rate over the segment's span (bits per second), when the span is known.
    public var videoBitsPerSecond: Int64?
    /// The encoder's mean frame QP, to two decimals, when the encoder reports one.
    public var meanQP: Double?
    /// The constant-quality level the segment's video was encoded at, when it used one: the one a
    /// quality target chose for it (x264 and x265 take tenths), or the request's.
    public var crf: Double?
    /// The segment's picture quality against the source, when it was measured.
    public var quality: SegmentQuality?
    /// How many times the segment's video was encoded in full: 2 when a quality target's first
    /// encode missed by more than its tolerance and was encoded again. Nil without a target.
    public var encodes: Int?

    public init(videoBytes: Int64, videoBitsPerSecond: Int64? = nil, meanQP: Double? = nil, crf: Double? = nil,
                quality: SegmentQuality? = nil, encodes: Int? = nil) {
        self.videoBytes = videoBytes
        self.videoBitsPerSecond = videoBitsPerSecond
        self.meanQP = meanQP
        self.crf = crf
        self.quality = quality
        self.encodes = encodes
    }
}

/// Picture quality of a stretch of video against its source, as FFmpeg's `psnr` and `ssim` filters
/// measure it frame by frame: PSNR in dB of the mean squared error over the frames (FFmpeg's
/// "average"), SSIM the mean of the frames' SSIM; Y is luma alone, the others all planes weighted
/// by their size. The worst frame and the worst second show what a mean hides. PSNR of a frame
/// identical to its source would be infinite and is counted as 100 dB.
public struct SegmentQuality: Sendable, Codable, Hashable {
    /// Frames measured.
    public var frames: Int
    public var psnrY: Double
    public var psnr: Double
    public var ssimY: Double
    public var ssim: Double
    /// The lowest PSNR (luma) of any one frame.
    public var minPSNRY: Double
    /// The lowest SSIM (luma) of any one frame.
    public var minSSIMY: Double
    /// The lowest PSNR (luma, of the mean squared error) of any second of frames.
    public var worstSecondPSNRY: Double
    /// Where that second starts, in milliseconds of output time.
    public var worstSecondStartMilliseconds: Int64

    public init(frames: Int, psnrY: Double, psnr: Double, ssimY: Double, ssim: Double, minPSNRY: Double,
                minSSIMY: Double, worstSecondPSNRY: Double, worstSecondStartMilliseconds: Int64) {
        self.frames = frames
        self.psnrY = psnrY
        self.psnr = psnr
        self.ssimY = ssimY
        self.ssim = ssim
        self.minPSNRY = minPSNRY
        self.minSSIMY = minSSIMY
        self.worstSecondPSNRY = worstSecondPSNRY
        self.worstSecondStartMilliseconds = worstSecondStartMilliseconds
    }
}

extension SegmentQuality {
    /// Several segments' figures as one stretch: PSNR of their frames' mean squared error
    /// (each segment's PSNR turned back into its mean squared error and weighted by its frames;
    /// exact, as every segment shares the peak), frame-weighted mean SSIMs, the worst frame and
    /// the worst second of any of them. Nil for none.
    public static func combined(_ parts: [SegmentQuality]) -> SegmentQuality? {
        let frames = parts.reduce(0) { $0 + $1.frames }
        guard frames > 0, let worst = parts.min(by: { $0.worstSecondPSNRY < $1.worstSecondPSNRY }) else { return nil }
        func psnr(_ value: (SegmentQuality) -> Double) -> Double {
            let error = parts.reduce(0.0) { $0 + Double($1.frames) * pow(10, -value($1) / 10) } / Double(frames)
            return ((-10 * log10(error)) * 1000).rounded() / 1000
        }
        func mean(_ value: (SegmentQuality) -> Double) -> Double {
            (parts.reduce(0.0) { $0 + Double($1.frames) * value($1) } / Double(frames) * 1_000_000).rounded() / 1_000_000
        }
        return SegmentQuality(frames: frames, psnrY: psnr(\.psnrY), psnr: psnr(\.psnr), ssimY: mean(\.ssimY),
                              ssim: mean(\.ssim), minPSNRY: parts.map(\.minPSNRY).min() ?? 0,
                              minSSIMY: parts.map(\.minSSIMY).min() ?? 0, worstSecondPSNRY: worst.worstSecondPSNRY,
                              worstSecondStartMilliseconds: worst.worstSecondStartMilliseconds)
    }
}
