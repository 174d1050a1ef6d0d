internal import CFFmpeg
public import Foundation
public import SpliceCore

/// A verified job's checks once its segments are stitched (`--verify`: `splice transcode`, and
/// the coordinator's stitching step): every video segment measured itself on the machine that
/// encoded it, against the source pictures it decoded, and left its per-frame figures in its
/// segment file's trailer; here they are read back, the stitched file's frames are checked
/// against them (demuxed, not decoded), each segment and each join is judged, and each encoded
/// audio track is decoded with the source's to check its samples, its lag at the start, every
/// join and the end, the blocks at every join, and where it starts against the video. The video
/// of the source is not decoded again.
public struct StitchVerification: Sendable {
    public let plan: SegmentPlan

    public init(plan: SegmentPlan) {
        self.plan = plan
    }

    /// The report for `output`, stitched from `segments` (index → file), with the segments' own
    /// `figures` (what their encoders reported) when known.
    public func verify(segments: [Int: String], output: URL, figures: [Int: SegmentFigures] = [:]) async throws -> QualityReport {
        let plan = self.plan
        return try await BlockingThread.run("splice.verify") {
            try Self.run(plan: plan, segments: segments, output: output.path, figures: figures)
        }
    }

    private static func run(plan: SegmentPlan, segments: [Int: String], output: String,
                            figures: [Int: SegmentFigures]) throws(MediaError) -> QualityReport {
        _ = FFmpeg.setUp
        let thresholds = plan.quality?.thresholds ?? QualityThresholds()
        // The segments' own figures, in output order.
        var series: QualitySeries?
        var boundaries: [QualityAssessment.Boundary] = []
        for spec in plan.videoSegments {
            guard let path = segments[spec.index] else {
                throw MediaError(.incompatibleSegments, "segment \(spec.index) of plan \(plan.id) is missing")
            }
            let reader = try SegmentFileReader(path: path, verifying: false)
            guard let measured = reader.trailer.quality else {
                throw MediaError(.incompatibleSegments, "segment \(spec.index) ('\(path)') carries no quality figures; "
                                 + "it was encoded without --verify (or by a worker that predates it)")
            }
            if series == nil { series = QualitySeries(timeBase: measured.timeBase, peak: measured.peak) }
            series!.append(contentsOf: measured)
            boundaries.append(.init(segment: spec.index, start: (spec.videoStart ?? plan.outputZero) - plan.outputZero))
        }
        guard let series else { throw MediaError(.noUsableTrack, "plan \(plan.id) has no video to verify") }

        // The stitched file's frames against the frames the segments measured.
        let demuxer = try Demuxer(location: output)
        guard let videoStream = demuxer.bestStream(AVMEDIA_TYPE_VIDEO) else {
            throw MediaError(.noUsableTrack, "'\(output)' has no video track")
        }
        demuxer.discardAll(except: [videoStream])
        let timeBase = Rational(demuxer.stream(videoStream).pointee.time_base)
        let packet = Packet()
        var written: [Int64] = []
        while try demuxer.read(into: packet) {
            if Int(packet.streamIndex) == videoStream && packet.pts != FFmpeg.noPTS { written.append(packet.pts) }
        }
        let expected = Set((0..<series.count).map { series.time($0).value(in: timeBase, rounding: .nearest) })
        let found = Set(written)
        let toMS = { (pts: Int64) in MediaTime(value: pts, timeBase: timeBase).milliseconds }
        let frames = QualityReport.FrameCheck(
            expected: series.count, output: written.count,
            missing: expected.subtracting(found).sorted().map(toMS), extra: found.subtracting(expected).sorted().map(toMS))

        let assessment = QualityAssessment(thresholds: thresholds)
        let (entries, segmentProblems) = assessment.segments(series, boundaries: boundaries, figures: figures)
        let (joins, joinProblems) = assessment.joins(series, boundaries: boundaries)
        var problems = QualityAssessment.frameProblems(frames, boundaries: boundaries) + segmentProblems + joinProblems
        let (audio, audioProblems) = try checkAudio(plan: plan, output: output, thresholds: thresholds)
        problems += audioProblems
        return QualityReport(source: plan.source, output: output, thresholds: thresholds, segmentsFrom: "plan",
                             overall: series.summary(), frames: frames, segments: entries, videoJoins: joins, audio: audio,
                             problems: problems, series: series)
    }

    /// Each encoded audio track against the source's.
    private static func checkAudio(plan: SegmentPlan, output: String, thresholds: QualityThresholds) throws(MediaError)
        -> ([QualityReport.AudioTrackCheck], [QualityReport.Problem]) {
        let encoded = plan.audioTracks.enumerated().filter { !$0.element.copies && $0.element.framing != nil }
        guard !encoded.isEmpty else { return ([], []) }
        let source = try Asset(probing: plan.source)
        let out = try Asset(probing: output)
        let outputAudio = out.tracks.filter { $0.kind == .audio }
        var checks: [QualityReport.AudioTrackCheck] = []
        var problems: [QualityReport.Problem] = []
        for (t, track) in encoded {
            guard let framing = track.framing, outputAudio.indices.contains(t),
                  let sourceTrack = source.track(track.source), let inputRate = sourceTrack.sampleRate else { continue }
            let rate = framing.sampleRate
            let skip = MediaTime.rescale(track.firstSample, multiplier: Int64(rate), divisor: Int64(inputRate))
            var expected: Int64?
            if let end = plan.outputEnd {
                expected = (end - plan.outputZero).count(of: MediaTime(value: 1, timescale: Int32(rate)), rounding: .nearest)
                    - track.lead
            }
            let joins = plan.audioSegments(track: t).dropFirst().compactMap { spec in
                spec.audio?.keepStart.map { (segment: spec.index, sample: $0) }
            }
            let offset = avOffset(source: source, sourceAudio: sourceTrack, output: out, outputAudio: outputAudio[t],
                                  zero: plan.outputZero)
            let (check, found) = try AudioVerification(thresholds: thresholds).run(.init(
                track: t, source: plan.source, sourceStream: track.source, sourceSkip: skip, output: output,
                outputStream: outputAudio[t].id, rate: rate, expectedSamples: expected, packetSamples: framing.samplesPerPacket,
                avOffsetMilliseconds: offset,
                joins: Array(joins)))
            checks.append(check)
            problems += found
        }
        return (checks, problems)
    }

    /// Where the output's audio starts against its video, less where the source's does (after
    /// output zero), in milliseconds.
    static func avOffset(source: Asset, sourceAudio: Track, output: Asset, outputAudio: Track, zero: MediaTime) -> Double {
        guard let sourceVideo = source.videoTrack, let outputVideo = output.videoTrack,
              let sa = sourceAudio.startTime, let sv = sourceVideo.startTime,
              let oa = outputAudio.startTime, let ov = outputVideo.startTime else { return 0 }
        let expected = MediaTime.max(.zero, sa - zero) - MediaTime.max(.zero, sv - zero)
        let found = oa - ov
        return Double((found - expected).converted(to: 1_000_000, rounding: .nearest).value) / 1000
    }
}

/// What a verified job does with its report: write it where asked (an HTML page), or beside the
/// output when the output fails its thresholds, and in `fail` mode remove the output and fail.
public enum QualityGate {
    /// Applies `request` to `report` for `output`. Returns where the report was written (nil:
    /// nowhere); throws ``MediaError/Code/qualityBelowThreshold`` (the output removed) when the
    /// output failed and the mode is `fail`.
    @discardableResult
    public static func conclude(_ report: QualityReport, request: QualityRequest, output: URL) throws -> String? {
        var path = request.reportPath
        if path == nil && !report.passed {
            path = output.path + ".verify.html"
        }
        if let path {
            do {
                try Data(QualityReportPage(report: report).html.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            } catch {
                throw MediaError(.writeFailed, "cannot write the quality report '\(path)': \(error.localizedDescription)")
            }
        }
        guard !report.passed, request.verify == .fail else { return path }
        unlink(output.path)
        let first = report.problems.prefix(3).map(\.message).joined(separator: "; ")
        let more = report.problems.count > 3 ? " (and \(report.problems.count - 3) more)" : ""
        throw MediaError(.qualityBelowThreshold, "the output '\(output.path)' failed its quality checks and was removed: "
                         + first + more + (path.map { "; report: \($0)" } ?? "") + "; see the report, or use --verify warn "
                         + "to keep such an output")
    }
}
