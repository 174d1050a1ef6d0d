import Foundation
import SpliceMedia

extension VerifyMode: ArgumentValue {}

extension QualityTarget: ArgumentValue {
    init(argument: String) throws {
        guard let target = QualityTarget(parsing: argument) else {
            throw InvalidArgumentValue(expected: "a metric and a value, like ssim:0.985 or psnr:42")
        }
        self = target
    }
}

/// The quality flags. The thresholds are shared by `verify`, `transcode` and `submit`; verifying
/// a job and aiming each segment at a quality, by `transcode` and `submit` (docs/media.md, Quality).
struct QualityOptions: Sendable {
    static let minPSNR = Option<Double>("min-psnr", valueName: "dB",
        help: "Fail a segment whose PSNR (luma, of its mean squared error) is under this (default 30).")
    static let minSSIM = Option<Double>("min-ssim", valueName: "ssim",
        help: "Fail a segment whose mean SSIM (luma) is under this (default 0.9).")
    static let minSecondPSNR = Option<Double>("min-second-psnr", valueName: "dB",
        help: "Fail a segment whose worst second of frames has a PSNR under this (default 25).")
    static let maxJoinDip = Option<Double>("max-join-dip", valueName: "dB",
        help: "Fail a video join whose 12 nearest frames lie this far under the second around it (default 3).")
    static let maxAudioJoinDrop = Option<Double>("max-audio-join-drop", valueName: "dB",
        help: "Fail an audio join with a 1,024-sample block this far under the track's median block SNR (default 3).")
    static let maxAVOffset = Option<Double>("max-av-offset-ms", valueName: "ms",
        help: "Fail audio that starts this far off where the source's starts against its video (default 1).")

    static let thresholdArguments: [any ArgumentDeclaration] = [
        minPSNR, minSSIM, minSecondPSNR, maxJoinDip, maxAudioJoinDrop, maxAVOffset,
    ]

    static let verify = Option<VerifyMode>("verify", valueName: "fail|warn",
        help: "Measure every segment's PSNR and SSIM where it is encoded (against the source frames it decodes) and "
            + "check the joins after the stitch; a failed threshold fails the job and removes the output (fail, "
            + "the default), or only reports it (warn). The report goes beside the output (OUT.verify.html) when "
            + "it fails.", implied: .fail)
    static let verifyReport = Option<String>("verify-report", valueName: "file.html",
        help: "Write the verified output's report (one HTML page with a per-frame plot) here, pass or fail.") { $0 }
    static let targetQuality = Option<QualityTarget>("target-quality", valueName: "metric:value",
        help: "Give each segment its own CRF to reach this quality: ssim:0.985 (mean luma SSIM) or psnr:42 (dB); "
            + "found by two probe encodes of a seventh of the segment, then encoded, measured, and encoded once more "
            + "if it missed by more than --quality-tolerance. h264, hevc, vp9, av1; --max-bitrate/--buffer-size still "
            + "cap it. VMAF: " + (QualityTarget.vmafAvailable ? "this FFmpeg has libvmaf, but Splice does not drive it yet."
                                   : "not available (this FFmpeg's libavfilter has no libvmaf; Debian's has none)."))
    static let minCRF = Option<Double>("min-crf", valueName: "crf",
        help: "The lowest CRF --target-quality may choose (default: h264/hevc 10, vp9/av1 10).")
    static let maxCRF = Option<Double>("max-crf", valueName: "crf",
        help: "The highest CRF --target-quality may choose (default: h264/hevc 42, vp9/av1 58).")
    static let tolerance = Option<Double>("quality-tolerance", valueName: "amount",
        help: "How far a segment may miss --target-quality before it is encoded again (default: psnr 0.5, ssim 0.002).")

    static let jobArguments: [any ArgumentDeclaration] = [verify, verifyReport, targetQuality, minCRF, maxCRF, tolerance]
        + thresholdArguments

    /// The thresholds the flags give, over `base`.
    static func thresholds(_ arguments: ParsedArguments, over base: QualityThresholds = QualityThresholds())
        -> QualityThresholds {
        var t = base
        if let v = arguments[minPSNR] { t.minPSNR = v }
        if let v = arguments[minSSIM] { t.minSSIM = v }
        if let v = arguments[minSecondPSNR] { t.minSecondPSNR = v }
        if let v = arguments[maxJoinDip] { t.maxJoinDip = v }
        if let v = arguments[maxAudioJoinDrop] { t.maxAudioJoinDrop = v }
        if let v = arguments[maxAVOffset] { t.maxAVOffsetMilliseconds = v }
        return t
    }

    /// Whether any threshold flag was given.
    static func givesThresholds(_ arguments: ParsedArguments) -> Bool {
        [minPSNR, minSSIM, minSecondPSNR, maxJoinDip, maxAudioJoinDrop, maxAVOffset].contains { arguments[$0] != nil }
    }

    /// What `transcode` and `submit` ask about quality; nil when no quality flag was given.
    static func request(_ arguments: ParsedArguments) throws -> QualityRequest? {
        let target = arguments[targetQuality]
        let mode = arguments[verify]
        let report = arguments[verifyReport]
        guard mode != nil || target != nil || report != nil || givesThresholds(arguments)
                || arguments[minCRF] != nil || arguments[maxCRF] != nil || arguments[tolerance] != nil else { return nil }
        if mode == nil && (report != nil || givesThresholds(arguments)) {
            throw UsageError("--verify-report and the threshold flags judge a verified output: add --verify (or --verify warn)")
        }
        var request = QualityRequest(verify: mode, thresholds: thresholds(arguments), target: target,
                                     minCRF: arguments[minCRF], maxCRF: arguments[maxCRF],
                                     tolerance: arguments[tolerance])
        if let report {
            request.reportPath = URL(fileURLWithPath: report).standardizedFileURL.path
        }
        return request
    }
}
