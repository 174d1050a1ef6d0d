import Foundation

/// What a job asks about picture quality (`TranscodeRequest.quality`, planned into
/// `SegmentPlan.quality`): whether the output is verified against its source and what it must
/// reach (``verify``, ``thresholds``), and whether each segment aims for a quality instead of one
/// CRF (``target``, with the CRF bounds and the tolerance).
///
/// Verification measures every video segment on the worker that encodes it, against the source
/// pictures it has just decoded (no second decode of the source), and checks the joins once the
/// segments are stitched (docs/media.md, Quality).
public struct QualityRequest: Sendable, Codable, Hashable {
    /// Whether the output is verified, and what a failed check does; nil: not verified (a target
    /// still measures every segment, to steer it).
    public var verify: VerifyMode?
    /// What the output must reach when verified.
    public var thresholds: QualityThresholds
    /// A quality each segment aims for, choosing its own CRF; nil: the request's CRF everywhere.
    public var target: QualityTarget?
    /// The CRF range a target may choose from; nil: the codec's (``QualityTarget/defaultCRFRange(for:)``).
    public var minCRF: Double?
    public var maxCRF: Double?
    /// How far a segment's measured quality may lie from the target before it is encoded once
    /// more at a corrected CRF (the target's units); nil: the metric's default.
    public var tolerance: Double?
    /// Where the report of a verified job is written (an `.html` file, with a `.json` twin); nil:
    /// only when the output fails its thresholds, beside the output (`OUT.verify.html`).
    public var reportPath: String?

    public init(verify: VerifyMode? = nil, thresholds: QualityThresholds = QualityThresholds(),
                target: QualityTarget? = nil, minCRF: Double? = nil, maxCRF: Double? = nil, tolerance: Double? = nil,
                reportPath: String? = nil) {
        self.verify = verify
        self.thresholds = thresholds
        self.target = target
        self.minCRF = minCRF
        self.maxCRF = maxCRF
        self.tolerance = tolerance
        self.reportPath = reportPath
    }

    private enum CodingKeys: String, CodingKey { case verify, thresholds, target, minCRF, maxCRF, tolerance, reportPath }

    /// Decodes a request; absent thresholds are the defaults.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        verify = try c.decodeIfPresent(VerifyMode.self, forKey: .verify)
        thresholds = try c.decodeIfPresent(QualityThresholds.self, forKey: .thresholds) ?? QualityThresholds()
        target = try c.decodeIfPresent(QualityTarget.self, forKey: .target)
        minCRF = try c.decodeIfPresent(Double.self, forKey: .minCRF)
        maxCRF = try c.decodeIfPresent(Double.self, forKey: .maxCRF)
        tolerance = try c.decodeIfPresent(Double.self, forKey: .tolerance)
        reportPath = try c.decodeIfPresent(String.self, forKey: .reportPath)
    }

    /// Whether segments measure their pictures (verified, or steered to a target).
    public var measures: Bool { verify != nil || target != nil }

    /// The tolerance in the target's units.
    public var effectiveTolerance: Double? { target.map { tolerance ?? $0.metric.defaultTolerance } }

    /// Checks the request against the video settings it goes with. Throws naming the flag.
    public func validate(video: VideoSettings?, package: Bool, copiesVideo: Bool) throws(SettingsError) {
        if measures && package {
            throw SettingsError(field: verify != nil ? "verify" : "target-quality", value: "with a streaming package",
                                allowed: "left out: packages are not measured yet (use `splice verify` on a rendition)")
        }
        if measures && (video == nil || copiesVideo) {
            throw SettingsError(field: verify != nil ? "verify" : "target-quality", value: "without encoded video",
                                allowed: "used on a job that encodes its video")
        }
        try thresholds.validate()
        guard let target else {
            if minCRF != nil || maxCRF != nil || tolerance != nil {
                throw SettingsError(field: "min-crf", value: "without --target-quality",
                                    allowed: "given with --target-quality (they bound its search)")
            }
            return
        }
        try target.validate()
        guard let video else { return }
        guard let range = QualityTarget.defaultCRFRange(for: video.codec) else {
            throw SettingsError(field: "target-quality", value: "\(target)",
                                allowed: "used with h264, hevc, vp9 or av1 (\(video.codec) has no CRF)")
        }
        if video.quality != nil || video.bitrate != nil {
            throw SettingsError(field: "target-quality", value: "\(target)",
                                allowed: "given without --crf and --video-bitrate (it chooses each segment's CRF; "
                                    + "--max-bitrate and --buffer-size still cap it)")
        }
        let limit = Double(video.codec == .h264 || video.codec == .hevc ? 51 : 63)
        for (field, value) in [("min-crf", minCRF), ("max-crf", maxCRF)] {
            if let value, !(0...limit).contains(value) {
                throw SettingsError(field: field, value: "\(value)", allowed: "from 0 to \(Int(limit)) for \(video.codec)")
            }
        }
        let low = minCRF ?? range.lowerBound, high = maxCRF ?? range.upperBound
        if low > high {
            throw SettingsError(field: "min-crf", value: "\(low)", allowed: "at most --max-crf (\(high))")
        }
        if let tolerance, !(tolerance > 0 && tolerance <= target.metric.maximumTolerance) {
            throw SettingsError(field: "quality-tolerance", value: "\(tolerance)",
                                allowed: "above 0 and at most \(target.metric.maximumTolerance) for \(target.metric)")
        }
    }

    /// The CRF bounds a target searches within, for `codec`.
    func crfRange(for codec: VideoSettings.Codec) -> ClosedRange<Double> {
        let range = QualityTarget.defaultCRFRange(for: codec) ?? 0...51
        return (minCRF ?? range.lowerBound)...(maxCRF ?? range.upperBound)
    }
}

/// What a verified job does when its output fails a threshold.
public enum VerifyMode: String, Sendable, Codable, Hashable, CaseIterable, CustomStringConvertible {
    /// The job ends `failed`, the output is removed and the report kept.
    case fail
    /// The job succeeds; the failures are reported (and the report kept beside the output).
    case warn

    public var description: String { rawValue }
}

/// A quality each segment aims for: `ssim:0.985` (mean luma SSIM), `psnr:42` (luma PSNR of the
/// segment's mean squared error, dB) or `vmaf:93` (where FFmpeg has libvmaf).
public struct QualityTarget: Sendable, Codable, Hashable, CustomStringConvertible {
    public enum Metric: String, Sendable, Codable, Hashable, CaseIterable, CustomStringConvertible {
        case ssim, psnr, vmaf
        public var description: String { rawValue }

        /// How far a segment may miss before it is encoded again: half a dB of PSNR, 0.002 of SSIM
        /// (0.985 ± 0.002 is about ±0.6 dB in SSIM's dB), one VMAF point.
        var defaultTolerance: Double {
            switch self {
            case .psnr: 0.5
            case .ssim: 0.002
            case .vmaf: 1
            }
        }

        var maximumTolerance: Double {
            switch self {
            case .psnr: 10
            case .ssim: 0.1
            case .vmaf: 20
            }
        }
    }

    public var metric: Metric
    public var value: Double

    public init(metric: Metric, value: Double) {
        self.metric = metric
        self.value = value
    }

    /// Parses `ssim:0.985`, `psnr:42`, `vmaf:93`; nil for anything else.
    public init?(parsing text: String) {
        let parts = text.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let metric = Metric(rawValue: parts[0].lowercased()), let value = Double(parts[1]),
              value.isFinite else { return nil }
        self.init(metric: metric, value: value)
    }

    public var description: String {
        "\(metric):" + (value == value.rounded() ? String(Int(value)) : String(value))
    }

    /// Whether this FFmpeg can measure VMAF (its libavfilter has `libvmaf`; Debian's has not).
    public static var vmafAvailable: Bool { QualityFilterGraph.hasFilter("libvmaf") }

    /// Checks the value's range, and that the metric can be measured here.
    public func validate() throws(SettingsError) {
        switch metric {
        case .ssim where !(value > 0.5 && value < 1):
            throw SettingsError(field: "target-quality", value: description, allowed: "an SSIM above 0.5 and below 1")
        case .psnr where !(value >= 20 && value <= 80):
            throw SettingsError(field: "target-quality", value: description, allowed: "a PSNR from 20 to 80 dB")
        case .vmaf where !(value > 0 && value <= 100):
            throw SettingsError(field: "target-quality", value: description, allowed: "a VMAF above 0, at most 100")
        case .vmaf where !Self.vmafAvailable:
            throw SettingsError(field: "target-quality", value: description,
                                allowed: "ssim or psnr: this FFmpeg's libavfilter was built without libvmaf (Debian's is)")
        default:
            break
        }
        if metric == .vmaf {
            // Measured through libvmaf's filter, which the psnr/ssim graph does not run yet.
            throw SettingsError(field: "target-quality", value: description,
                                allowed: "ssim or psnr: Splice does not drive libvmaf yet, even where FFmpeg has it")
        }
    }

    /// The CRF range searched when none is given: wide enough for any sensible target, narrow
    /// enough that a probe never goes where an encoder behaves oddly (x264 below 10 spends bits
    /// on grain nobody sees; above 40 blocks show). Nil for codecs without a CRF.
    public static func defaultCRFRange(for codec: VideoSettings.Codec) -> ClosedRange<Double>? {
        switch codec {
        case .h264, .hevc: 10...42
        case .vp9, .av1: 10...58
        case .prores: nil
        }
    }

    /// The segment's score in this metric's terms, from its measured series.
    func score(_ series: QualitySeries, _ range: Range<Int>? = nil) -> Double? {
        let range = range ?? 0..<series.count
        guard !range.isEmpty else { return nil }
        switch metric {
        case .psnr: return series.psnr(mse: series.mseY[range].reduce(0, +) / Double(range.count))
        case .ssim: return series.ssimY[range].reduce(0, +) / Double(range.count)
        case .vmaf: return nil
        }
    }

    /// A score on a scale that moves about linearly with CRF: PSNR as it is, SSIM in dB
    /// (−10·log10(1 − SSIM), as x264 reports it).
    func linear(_ score: Double) -> Double {
        switch metric {
        case .ssim: -10 * log10(max(1e-9, 1 - score))
        case .psnr, .vmaf: score
        }
    }
}

/// What a verified output must reach; every figure is a flag of `splice verify`, `transcode` and
/// `submit`. PSNR and SSIM are luma (FFmpeg's Y).
public struct QualityThresholds: Sendable, Codable, Hashable {
    /// Each segment's PSNR (of its mean squared error), dB.
    public var minPSNR: Double
    /// Each segment's mean SSIM.
    public var minSSIM: Double
    /// Every second of frames' PSNR, dB (the worst second of each segment).
    public var minSecondPSNR: Double
    /// How far the frames at a video join may lie under the frames around it, dB.
    public var maxJoinDip: Double
    /// How far an audio block within two blocks of a join may lie under the file's median block
    /// SNR, dB.
    public var maxAudioJoinDrop: Double
    /// How far the output's audio may start from where the source's starts against its video,
    /// in milliseconds.
    public var maxAVOffsetMilliseconds: Double

    public init(minPSNR: Double = 30, minSSIM: Double = 0.9, minSecondPSNR: Double = 25, maxJoinDip: Double = 3,
                maxAudioJoinDrop: Double = 3, maxAVOffsetMilliseconds: Double = 1) {
        self.minPSNR = minPSNR
        self.minSSIM = minSSIM
        self.minSecondPSNR = minSecondPSNR
        self.maxJoinDip = maxJoinDip
        self.maxAudioJoinDrop = maxAudioJoinDrop
        self.maxAVOffsetMilliseconds = maxAVOffsetMilliseconds
    }

    private enum CodingKeys: String, CodingKey {
        case minPSNR, minSSIM, minSecondPSNR, maxJoinDip, maxAudioJoinDrop, maxAVOffsetMilliseconds
    }

    /// Decodes thresholds; each one absent is its default.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = QualityThresholds()
        minPSNR = try c.decodeIfPresent(Double.self, forKey: .minPSNR) ?? d.minPSNR
        minSSIM = try c.decodeIfPresent(Double.self, forKey: .minSSIM) ?? d.minSSIM
        minSecondPSNR = try c.decodeIfPresent(Double.self, forKey: .minSecondPSNR) ?? d.minSecondPSNR
        maxJoinDip = try c.decodeIfPresent(Double.self, forKey: .maxJoinDip) ?? d.maxJoinDip
        maxAudioJoinDrop = try c.decodeIfPresent(Double.self, forKey: .maxAudioJoinDrop) ?? d.maxAudioJoinDrop
        maxAVOffsetMilliseconds = try c.decodeIfPresent(Double.self, forKey: .maxAVOffsetMilliseconds)
            ?? d.maxAVOffsetMilliseconds
    }

    /// Checks each figure's range.
    public func validate() throws(SettingsError) {
        let checks: [(String, Double, ClosedRange<Double>)] = [
            ("min-psnr", minPSNR, 0...100), ("min-ssim", minSSIM, 0...1), ("min-second-psnr", minSecondPSNR, 0...100),
            ("max-join-dip", maxJoinDip, 0...100), ("max-audio-join-drop", maxAudioJoinDrop, 0...100),
            ("max-av-offset-ms", maxAVOffsetMilliseconds, 0...10_000),
        ]
        for (field, value, range) in checks where !range.contains(value) {
            throw SettingsError(field: field, value: "\(value)", allowed: "from \(range.lowerBound) to \(range.upperBound)")
        }
    }
}
