public import SpliceCore

/// What a verification found, whole: `splice verify`'s `--json`, the data of its HTML report
/// (``QualityReportPage``), and what a verified `transcode` or cluster job keeps. Times are
/// milliseconds of output time (integers); PSNR and SSIM are FFmpeg's (luma unless named
/// otherwise). ``passed`` is false when any ``problems`` were found.
public struct QualityReport: Sendable, Codable, Hashable {
    public var source: String
    public var output: String
    public var passed: Bool
    public var thresholds: QualityThresholds
    /// Where the segments came from: `plan` (the job's own, or `--plan`) or `keyframes` (each of
    /// the output's keyframes starts one, when no plan is known).
    public var segmentsFrom: String
    /// The whole output.
    public var overall: SegmentQuality?
    public var frames: FrameCheck
    public var segments: [SegmentEntry]
    public var videoJoins: [VideoJoin]
    public var audio: [AudioTrackCheck]
    public var problems: [Problem]
    /// Every frame's figures (the report's plot).
    public var series: QualitySeries?
    /// Whether VMAF was measured, or why not.
    public var vmaf: String

    public init(source: String, output: String, thresholds: QualityThresholds, segmentsFrom: String,
                overall: SegmentQuality?, frames: FrameCheck, segments: [SegmentEntry], videoJoins: [VideoJoin],
                audio: [AudioTrackCheck], problems: [Problem], series: QualitySeries?) {
        self.source = source
        self.output = output
        self.passed = problems.isEmpty
        self.thresholds = thresholds
        self.segmentsFrom = segmentsFrom
        self.overall = overall
        self.frames = frames
        self.segments = segments
        self.videoJoins = videoJoins
        self.audio = audio
        self.problems = problems
        self.series = series
        self.vmaf = QualityTarget.vmafAvailable ? "available in this FFmpeg; not measured by Splice yet"
            : "not measured: this FFmpeg's libavfilter has no libvmaf"
    }

    /// Frames of the output against the frames of the source it should show.
    public struct FrameCheck: Sendable, Codable, Hashable {
        /// Frames the source has for the output (after a range or frame-rate mapping).
        public var expected: Int
        /// Frames the output has.
        public var output: Int
        /// Output times (ms) where a source frame has no output frame.
        public var missing: [Int64]
        /// Output times (ms) of output frames with no source frame at their time.
        public var extra: [Int64]
        /// Output times (ms) where a run of frames shows a neighbouring source frame instead of
        /// its own (a duplicated or dropped picture with the timestamps kept), with the offset.
        public var shifted: [Shift]

        public struct Shift: Sendable, Codable, Hashable {
            public var timeMilliseconds: Int64
            /// −1: the output shows the source's previous frame (a picture repeated); +1 its next.
            public var offset: Int
            /// Frames in the run.
            public var frames: Int

            public init(timeMilliseconds: Int64, offset: Int, frames: Int) {
                self.timeMilliseconds = timeMilliseconds
                self.offset = offset
                self.frames = frames
            }
        }

        public init(expected: Int, output: Int, missing: [Int64] = [], extra: [Int64] = [], shifted: [Shift] = []) {
            self.expected = expected
            self.output = output
            self.missing = missing
            self.extra = extra
            self.shifted = shifted
        }
    }

    /// One segment's figures.
    public struct SegmentEntry: Sendable, Codable, Hashable {
        public var index: Int
        public var startMilliseconds: Int64
        public var endMilliseconds: Int64
        public var quality: SegmentQuality?
        /// What the encoder reported, when the job's own segments were measured.
        public var figures: SegmentFigures?
        public var passed: Bool
    }

    /// The frames at a video join against the frames around it.
    public struct VideoJoin: Sendable, Codable, Hashable {
        /// The segment that starts here.
        public var segment: Int
        public var timeMilliseconds: Int64
        /// Mean PSNR (luma) of the second around the join, less that of its 12 nearest frames, dB:
        /// positive is a dip.
        public var dip: Double
        public var passed: Bool
    }

    /// One audio track of the output against the source's.
    public struct AudioTrackCheck: Sendable, Codable, Hashable {
        /// The output's audio track (0 for the first).
        public var track: Int
        public var sampleRate: Int
        /// Samples the source has for the output, and samples the output decodes to.
        public var expectedSamples: Int64
        public var outputSamples: Int64
        /// Where the audio starts against the video, output less source, ms.
        public var avOffsetMilliseconds: Double
        /// Median SNR of 1,024-sample blocks against the source, dB.
        public var medianBlockSNR: Double
        /// Cross-correlation lag (samples) at the start, each join and the end.
        public var points: [AudioPoint]
        public var passed: Bool
    }

    /// The audio at one place: the start, a join or the end.
    public struct AudioPoint: Sendable, Codable, Hashable {
        /// `start`, `join` or `end`.
        public var kind: String
        /// The audio segment that starts here (joins).
        public var segment: Int?
        public var sample: Int64
        public var timeMilliseconds: Int64
        /// Where the output's samples best match the source's (0: in place).
        public var lag: Int
        /// How far the worst block within two blocks of here lies under the median block SNR, dB
        /// (joins only).
        public var drop: Double?
        public var passed: Bool
    }

    /// One thing that failed, named by segment and time.
    public struct Problem: Sendable, Codable, Hashable {
        /// `frames`, `segment`, `second`, `join`, `audio-samples`, `audio-lag`, `audio-join`, `av-offset`.
        public var kind: String
        public var segment: Int?
        public var timeMilliseconds: Int64?
        public var message: String
    }
}

extension Int64 {
    /// Milliseconds as `m:ss.mmm` for people.
    var clock: String {
        let sign = self < 0 ? "-" : ""
        let ms = Swift.abs(self)
        let seconds = ms / 1000
        let fraction = String(ms % 1000)
        return "\(sign)\(seconds / 60):\(seconds % 60 < 10 ? "0" : "")\(seconds % 60)."
            + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
