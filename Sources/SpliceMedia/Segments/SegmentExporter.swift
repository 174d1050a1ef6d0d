public import Foundation
public import SpliceCore

/// What encoding one segment produced.
public struct SegmentResult: Sendable, Codable, Hashable {
    public var index: Int
    /// Where the segment file is.
    public var path: String
    /// SHA-256 of the file.
    public var checksum: SHA256Digest
    public var bytes: Int64
    public var videoFrames: Int
    public var audioSamples: Int64
    /// CPU time the segment took, µs: the thread that decodes and exports it and every thread it
    /// started — a ladder's rung threads and the codecs' own worker threads (``ThreadTreeCPU``).
    /// Where the kernel gives no perf counter (a container's seccomp profile), the codecs' worker
    /// threads are left out: with one codec thread a lane (`transcode --jobs` at the cores,
    /// `--codec-threads 1`) there are none, but a segment given several spends much of its encoding
    /// there (a 6 s ladder segment with two: 0.2 s counted against 2.9 s). The run's whole CPU is
    /// ``Transcoder/Summary/cpuMicroseconds``.
    public var cpuMicroseconds: Int64
    /// Of that, what a quality target's probe encodes took, µs (nil without a target).
    public var probeCPUMicroseconds: Int64?
    /// For a video segment: the bytes of its video packets, their bit rate over the segment's
    /// span, and the encoder's mean frame QP, so a starved segment shows.
    public var figures: SegmentFigures?
    /// When `transcode` started and finished the segment, µs after its first segment started (nil
    /// elsewhere): with several lanes, the gaps show where a lane waited — the tail, when one lane
    /// ends before the others.
    public var startedMicroseconds: Int64?
    public var finishedMicroseconds: Int64?
}

/// Encodes one segment of a ``SegmentPlan``: video frames presented in the segment's range (the
/// first an IDR of a closed GOP), audio from its pre-roll to its tail, into a segment file.
/// Every segment of a plan resolves the same settings against the same source, so encoder
/// parameters — and the codec headers the stitcher compares — are identical.
public struct SegmentExporter: Sendable {
    public let plan: SegmentPlan
    /// Whether a ladder's rungs encode on threads of their own
    /// (``RenditionThread``); false only to compare against one after another.
    var rungsSideBySide = true

    public init(plan: SegmentPlan) {
        self.plan = plan
    }

    /// Encodes segment `index` into `output` (written beside it and renamed into place; nothing
    /// is left on failure or cancellation). `codecThreads` 1 suits several segments in parallel.
    /// With `excerpt` (the segment's ``SourceExcerpt``), reads that instead of the plan's source:
    /// the result is the same, byte for byte. With `end`, a video segment stops where `end` says
    /// when it is moved (the rest of its range handed to another segment; ``SegmentEnd``).
    public func export(segment index: Int, to output: URL, from excerpt: URL? = nil, codecThreads: Int = 1,
                       end: SegmentEnd? = nil,
                       progress: @escaping @Sendable (Double) -> Void = { _ in }) async throws -> SegmentResult {
        guard let spec = plan.segments.first(where: { $0.index == index }) else {
            throw MediaError(.internalError, "plan \(plan.id) has no segment \(index)")
        }
        let plan = self.plan
        let flag = CancelFlag()
        return try await withTaskCancellationHandler {
            try await BlockingThread.run("splice.segment.\(index)") {
                // Before any thread of the segment's starts: they all inherit the counter.
                let tree = ThreadTreeCPU()
                let cpuStart = threadCPUMicroseconds()
                _ = FFmpeg.setUp
                let asset = try excerpt.map { try SourceExcerpt.asset(of: $0.path, planID: plan.id, index: index) }
                    ?? Asset(probing: plan.source)
                var exportPlan = try ExportPlan.segment(plan, spec: spec, asset: asset, destination: output.path,
                                                        codecThreads: codecThreads)
                exportPlan.excerpt = excerpt?.path
                exportPlan.rungsSideBySide = rungsSideBySide
                let helperCPU = ThreadCPUTally()
                exportPlan.helperCPU = helperCPU
                if !spec.isAudio { exportPlan.movableEnd = end }
                let quality = spec.isAudio ? nil : plan.quality
                exportPlan.measuresQuality = quality?.measures == true
                var search: TargetQualityEncode.Outcome?
                let result: ExportPipeline.Result
                if let quality, let target = quality.target, let settings = plan.videoSettings,
                   case .encode(let encoding)? = exportPlan.video {
                    exportPlan.extraVideoOptions.merge(TargetQualityEncode.stitchingOptions(encoding)) { _, own in own }
                    let span = ExportPlan.Window(start: spec.videoStart ?? plan.outputZero,
                                                 end: spec.videoEnd ?? plan.outputEnd ?? plan.assetDuration)
                    let outcome = try TargetQualityEncode(request: quality, target: target, settings: settings,
                                                          encoderName: encoding.encoderName)
                        .run(exportPlan, segment: span, isCancelled: { flag.isSet }, progress: progress)
                    search = outcome
                    result = outcome.result
                } else {
                    result = try ExportPipeline(plan: exportPlan, isCancelled: { flag.isSet }, onProgress: progress).run()
                }
                // The span it ended up covering (its end may have moved).
                var covered = spec
                if let end, !spec.isAudio { covered.videoEnd = end.end }
                guard let checksum = result.checksum else {
                    throw MediaError(.internalError, "segment \(index) was written to '\(output.path)' without its checksum")
                }
                let bytes = (try? FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int64) ?? 0
                var segment = SegmentResult(index: index, path: output.path, checksum: checksum, bytes: bytes,
                                            videoFrames: result.videoFrames, audioSamples: result.audioSamples,
                                            cpuMicroseconds: tree?.microseconds
                                                ?? threadCPUMicroseconds() - cpuStart + helperCPU.microseconds)
                segment.probeCPUMicroseconds = search?.probeCPUMicroseconds
                if result.videoFrames > 0 {
                    var figures = SegmentFigures(videoBytes: result.videoBytes,
                                                 meanQP: result.meanQP.map { ($0 * 100).rounded() / 100 },
                                                 crf: search?.crf, quality: result.quality?.summary(),
                                                 encodes: search?.encodes)
                    if let span = plan.approximateDuration(of: covered), span > .zero {
                        let micros = span.converted(to: 1_000_000, rounding: .nearest).value
                        figures.videoBitsPerSecond = MediaTime.rescale(result.videoBytes * 8, multiplier: 1_000_000,
                                                                       divisor: max(1, micros))
                    }
                    segment.figures = figures
                }
                return segment
            }
        } onCancel: {
            flag.set()
        }
    }
}

/// CPU time consumed by the whole process (every thread, living or exited), in microseconds.
func processCPUMicroseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}

/// CPU time consumed by the calling thread, in microseconds.
func threadCPUMicroseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}
