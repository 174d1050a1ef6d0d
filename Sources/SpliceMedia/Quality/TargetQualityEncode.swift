import Foundation
import SpliceCore

/// Encodes one video segment at the CRF that meets a quality target (`--target-quality`), on the
/// machine that encodes the segment — so in a cluster every worker searches its own segments, in
/// parallel:
///
/// 1. **Probes.** One pass decodes the segment up to its last sample chunk and encodes only the
///    chunks — about a seventh of its frames, spread over it, each chunk opening with an IDR
///    picture — at two CRFs at once, from the same pictures, at the final preset, measuring each.
/// 2. **Interpolation.** On a scale that moves about linearly with CRF (PSNR in dB, SSIM in dB),
///    the line through the two probes gives the CRF that meets the target (x264 and x265 take
///    tenths; the others whole numbers), within the CRF bounds.
/// 3. **The encode**, measured as `--verify` measures it, and when it missed the target by more
///    than the tolerance, **one corrective encode**, aimed half a tolerance above the target on
///    the line through what the encode measured and the probe across the target from it. Of the
///    two, the one that meets the target with fewer bytes is kept (or the better one, when
///    neither does).
///
/// The chosen CRF goes to the encoder as a private option over the resolved settings' own, so
/// `--max-bitrate`/`--buffer-size` still cap it and nothing else about the encode changes.
struct TargetQualityEncode {
    let target: QualityTarget
    let tolerance: Double
    let bounds: ClosedRange<Double>
    /// Whether the encoder takes a fractional CRF (x264, x265).
    let fractional: Bool
    /// The CRF the probes straddle: the encoder's usual level.
    let centre: Double
    /// Half the distance between the two probes.
    let spread: Double

    /// Share of a segment's frames the probes encode.
    static let sampleShare = (numerator: Int64(1), denominator: Int64(7))
    /// The shortest probe chunk: shorter ones are mostly their opening IDR picture.
    static let minimumChunk = MediaTime(value: 1, timescale: 3)

    init(request: QualityRequest, target: QualityTarget, settings: VideoSettings, encoderName: String) {
        self.target = target
        tolerance = request.effectiveTolerance ?? target.metric.defaultTolerance
        bounds = request.crfRange(for: settings.codec)
        fractional = settings.codec == .h264 || settings.codec == .hevc
        let usual = Double(settings.codec.descriptor.encoders.first { $0.name == encoderName }?.defaultQuality ?? 23)
        centre = min(bounds.upperBound, max(bounds.lowerBound, usual))
        spread = settings.codec == .h264 || settings.codec == .hevc ? 4 : 8
    }

    /// What the search did, for the segment's figures and the benchmark.
    struct Outcome {
        var result: ExportPipeline.Result
        var crf: Double
        /// Full encodes of the segment: 1, or 2 with a corrective one.
        var encodes: Int
        /// CPU time of the probe pass on the calling thread, µs.
        var probeCPUMicroseconds: Int64
    }

    /// Runs the search for the segment `plan` encodes (its video window), writing the kept encode
    /// to `plan.destination`.
    func run(_ plan: ExportPlan, segment: ExportPlan.Window, isCancelled: @escaping () -> Bool,
             progress: @escaping (Double) -> Void) throws(MediaError) -> Outcome {
        // The probes' own threads and the codecs' workers they start count too, where the kernel
        // gives a counter (``ThreadTreeCPU``), as in the segment's figure this is a part of.
        let probeTree = ThreadTreeCPU()
        let cpuStart = threadCPUMicroseconds() + (plan.helperCPU?.microseconds ?? 0)
        let probes = probeCRFs()
        var probePlan = plan
        probePlan.output = .discard
        probePlan.videoWarmUp = .zero
        probePlan.measuresQuality = false
        probePlan.probe = ExportPlan.Probe(crfs: probes, chunks: Self.chunks(of: segment))
        let probed = try ExportPipeline(plan: probePlan, isCancelled: isCancelled, onProgress: { progress($0 * 0.2) }).run()
        let probeCPU = probeTree?.microseconds
            ?? threadCPUMicroseconds() + (plan.helperCPU?.microseconds ?? 0) - cpuStart
        let points = zip(probes, probed.probes).compactMap { crf, outcome in
            outcome.quality.flatMap { target.score($0) }.map { (crf: crf, score: target.linear($0)) }
        }
        guard points.count == 2 else {
            throw MediaError(.internalError, "the quality probes of '\(plan.location)' measured nothing")
        }
        let slope = Self.slope(points[0], points[1], metric: target.metric, codecScale: spread)
        let goal = target.linear(target.value)
        let first = choose(points[0].crf + (goal - points[0].score) / slope)

        var encode = plan
        encode.measuresQuality = true
        encode.extraVideoOptions["crf"] = Self.crfOption(first)
        let kept = try ExportPipeline(plan: encode, isCancelled: isCancelled, onProgress: { progress(0.2 + $0 * 0.8) }).run()
        guard let measured = kept.quality.flatMap({ target.score($0) }) else {
            throw MediaError(.internalError, "the encode of '\(plan.location)' at CRF \(first) measured nothing")
        }
        guard abs(measured - target.value) > tolerance else {
            return Outcome(result: kept, crf: first, encodes: 1, probeCPUMicroseconds: probeCPU)
        }
        // The correction: the line through the encode just measured and the probe on the other
        // side of the target (else the nearest probe), which brackets the answer better than the
        // probes' own slope where quality bends (grain falls steeply towards low CRFs).
        let reached = target.linear(measured)
        let across = points.filter { ($0.score - goal) * (reached - goal) < 0 && $0.crf != first }
        let partner = (across.isEmpty ? points.filter { $0.crf != first } : across).min { abs($0.crf - first) < abs($1.crf - first) }
        let correction = partner.map { Self.slope((first, reached), $0, metric: target.metric, codecScale: spread) } ?? slope
        // A second miss cannot be corrected, so the correction aims half a tolerance above the target.
        let aim = target.linear(target.value + tolerance / 2)
        let second = choose(first + (aim - reached) / correction)
        guard second != first else { return Outcome(result: kept, crf: first, encodes: 1, probeCPUMicroseconds: probeCPU) }

        // The corrective encode goes beside the first; the better of the two takes the place.
        let destination = URL(fileURLWithPath: plan.destination)
        let aside = destination.deletingLastPathComponent()
            .appendingPathComponent(".\(destination.lastPathComponent).crf-\(Self.crfOption(second))").path
        var retry = encode
        retry.destination = aside
        retry.extraVideoOptions["crf"] = Self.crfOption(second)
        let corrected: ExportPipeline.Result
        do {
            corrected = try ExportPipeline(plan: retry, isCancelled: isCancelled, onProgress: { _ in }).run()
        } catch {
            unlink(aside)
            throw error
        }
        let remeasured = corrected.quality.flatMap { target.score($0) } ?? -.infinity
        let meets = { (score: Double) in score >= self.target.value - self.tolerance }
        let takesSecond: Bool
        switch (meets(measured), meets(remeasured)) {
        case (true, true): takesSecond = corrected.videoBytes < kept.videoBytes
        case (false, true): takesSecond = true
        case (true, false): takesSecond = false
        case (false, false): takesSecond = remeasured > measured
        }
        guard takesSecond else {
            unlink(aside)
            return Outcome(result: kept, crf: first, encodes: 2, probeCPUMicroseconds: probeCPU)
        }
        guard rename(aside, plan.destination) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(aside)
            throw MediaError(.writeFailed, "cannot move the corrected segment into '\(plan.destination)': \(reason)",
                             isRetryable: true)
        }
        return Outcome(result: corrected, crf: second, encodes: 2, probeCPUMicroseconds: probeCPU)
    }

    /// The two probe CRFs: the encoder's usual level ± ``spread``, inside the bounds.
    func probeCRFs() -> [Double] {
        let low = max(bounds.lowerBound, min(centre - spread, bounds.upperBound - 2 * spread))
        let high = min(bounds.upperBound, low + 2 * spread)
        return high > low ? [low, high] : [bounds.lowerBound, bounds.upperBound]
    }

    /// `crf` within the bounds, to a tenth (x264, x265) or a whole number.
    func choose(_ crf: Double) -> Double {
        let step = fractional ? 10.0 : 1.0
        guard crf.isFinite else { return bounds.upperBound }
        return min(bounds.upperBound, max(bounds.lowerBound, (crf * step).rounded() / step))
    }

    /// The slope of quality against CRF between two probes (negative: quality falls as CRF
    /// rises). Where the two probes say nothing about it — a still picture both code perfectly —
    /// a typical slope stands in, so the line still points the right way.
    static func slope(_ a: (crf: Double, score: Double), _ b: (crf: Double, score: Double), metric: QualityTarget.Metric,
                      codecScale: Double) -> Double {
        let measured = (b.score - a.score) / (b.crf - a.crf)
        // About 0.6 dB of PSNR and 0.45 dB of SSIM per CRF step on the 51 scale, half that on 63's.
        let typical = (metric == .ssim ? -0.45 : -0.6) * (codecScale > 4 ? 0.5 : 1)
        return measured < typical / 10 ? measured : typical
    }

    /// Private options every segment of a target job is encoded with, so segments at different
    /// CRFs still share their codec headers (the stitcher requires it): x264 otherwise codes the
    /// CRF into the picture parameter set's initial QP (`stitchable` keeps it at 26; given as
    /// `x264opts`, which libx264 applies besides the resolved `x264-params`). (x265 would write its
    /// whole option string, CRF included, into an SEI of its headers; every x265 segment leaves it
    /// out, ``VideoEncoderDescriptor/x265``.)
    static func stitchingOptions(_ encoding: VideoEncoding) -> [String: String] {
        switch encoding.encoderName {
        case "libx264": ["x264opts": "stitchable=1"]
        default: [:]
        }
    }

    /// The encoder option for a CRF: "23" or "23.4".
    static func crfOption(_ crf: Double) -> String {
        crf == crf.rounded() ? String(Int(crf)) : String(format: "%.1f", crf)
    }

    /// The probe chunks of a segment's span `[start, end)` (asset time): about ``sampleShare`` of
    /// it in chunks of at least ``minimumChunk``, one in the middle of each equal part.
    static func chunks(of window: ExportPlan.Window) -> [ExportPlan.Window] {
        guard let end = window.end, end > window.start else {
            return [ExportPlan.Window(start: window.start, end: window.start + minimumChunk * 2)]
        }
        let length = end - window.start
        let sample = length.scaled(by: sampleShare.numerator, sampleShare.denominator)
        let count = max(1, min(8, sample.count(of: minimumChunk)))
        let chunk = MediaTime.max(minimumChunk, sample.scaled(by: 1, count))
        let part = length.scaled(by: 1, count)
        return (0..<count).map { i in
            let middle = window.start + part * Int64(i) + part.scaled(by: 1, 2)
            let start = MediaTime.max(window.start, middle - chunk.scaled(by: 1, 2))
            return ExportPlan.Window(start: start, end: MediaTime.min(end, start + chunk))
        }
    }
}
