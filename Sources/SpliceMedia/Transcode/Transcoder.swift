public import Foundation
import Synchronization

/// The embedded single-machine mode: plan, encode segments in parallel, stitch, clean up.
/// Uses exactly the planner, segment exporter and stitcher the cluster uses.
public final class Transcoder: Sendable {
    /// What to make, where, and how this machine runs it.
    public struct Options: Sendable {
        /// The source: a path, a URL FFmpeg opens, or a location in storage (`s3://…`).
        public var source: String
        /// Where the output goes: a path, or a location in storage (the segments are then kept in
        /// the temporary folder, not beside it).
        public var output: String
        /// What to make (the same request the cluster takes). With `request.overwrite` false an
        /// existing output is refused before any work (``MediaError/Code/outputExists``).
        public var request: TranscodeRequest
        /// Segments encoded at once; each encoder runs single-threaded when this is above 1.
        public var jobs: Int
        /// Keep the plan and segment files here instead of deleting them.
        public var keepSegmentsIn: URL?
        /// When a lane falls idle with nothing left to start, the running segment with the most
        /// left hands part of it to that lane (``LaneHandover``); nil: never. Made for video
        /// without a constant frame rate, a package or a quality target, where a segment may end
        /// at any picture without changing how the others are encoded; with a bit rate the new
        /// segment warms its rate control up as every later segment does (``RateControl``).
        public var handover: LaneHandover?
        /// Whether a ladder's rungs encode on threads of their own (``RenditionThread``); false
        /// only to compare against encoding them one after another.
        var rungsSideBySide = true

        public init(source: String, output: URL, request: TranscodeRequest,
                    jobs: Int = ProcessInfo.processInfo.activeProcessorCount, keepSegmentsIn: URL? = nil,
                    handover: LaneHandover? = LaneHandover()) {
            self.init(source: source, output: output.path, request: request, jobs: jobs, keepSegmentsIn: keepSegmentsIn,
                      handover: handover)
        }

        public init(source: String, output: String, request: TranscodeRequest,
                    jobs: Int = ProcessInfo.processInfo.activeProcessorCount, keepSegmentsIn: URL? = nil,
                    handover: LaneHandover? = LaneHandover()) {
            self.source = source
            self.output = output
            self.request = request
            self.jobs = max(1, jobs)
            self.keepSegmentsIn = keepSegmentsIn
            self.handover = handover
        }
    }

    /// How far a transcode is.
    public struct Progress: Sendable, Hashable {
        public var completedSegments: Int
        public var totalSegments: Int
        /// 0…1 over the whole job (encoding weighted by segment length, then stitching).
        public var fraction: Double
    }

    /// A running segment that handed the rest of its range to a new one (``LaneHandover``).
    public struct Handover: Sendable, Codable, Hashable {
        /// The segment that stopped early, and the one that took its pictures from `at` on.
        public var segment: Int
        public var newSegment: Int
        /// Asset time.
        public var at: MediaTime
        /// When, µs after the first segment started.
        public var atMicroseconds: Int64
    }

    /// What a transcode did, with timings for reports and benchmarks.
    public struct Summary: Sendable, Codable {
        /// The plan as stitched: with the segments handovers added, if any.
        public var plan: SegmentPlan
        public var segments: [SegmentResult]
        /// The handovers made, in order.
        public var handovers: [Handover]
        public var stitch: StitchSummary
        /// The streaming package written, when the request asked for one.
        public var package: PackageSummary?
        /// The checks of a verified output (`--verify`), every frame's figures included.
        public var quality: QualityReport?
        public var planNanoseconds: UInt64
        public var encodeNanoseconds: UInt64
        public var stitchNanoseconds: UInt64
        /// The CPU time the process spent during the run, every thread's: planning, stitching and
        /// the codecs' own worker threads included, which the segments' figures leave out
        /// (``SegmentResult/cpuMicroseconds``). The run's own when nothing else runs in the
        /// process (`splice transcode`). Nil in summaries written before it was kept.
        public var cpuMicroseconds: Int64?
    }

    private struct State: Sendable {
        var fractions: [Int: Double] = [:]
        var weights: [Int: Int64] = [:]
        /// What part of its span a segment still covers after handing the rest over.
        var scales: [Int: Double] = [:]
        var completed = 0
        var total = 0
        var stitching = false
        var observers: [UUID: AsyncStream<Progress>.Continuation] = [:]
    }

    public let options: Options
    private let state = Mutex(State())

    public init(options: Options) {
        self.options = options
    }

    /// Progress updates until the transcode ends. Each access is a new subscription.
    public var progressUpdates: AsyncStream<Progress> {
        let (stream, continuation) = AsyncStream<Progress>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        state.withLock { $0.observers[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.observers.removeValue(forKey: id) } }
        return stream
    }

    /// Runs the transcode. Temporary segments are removed on success, failure and cancellation.
    /// An output that may not or cannot be written (``OutputDestination``) fails before the
    /// source is even opened.
    public func run() async throws -> Summary {
        defer { finishObservers() }
        let clock = ContinuousClock()
        let t0 = clock.now
        let cpuAtStart = processCPUMicroseconds()
        let options = self.options
        try await BlockingThread.run("splice.transcode.check") {
            try OutputDestination.check(output: options.output, inputs: [options.source],
                                        overwrite: options.request.overwrite)
        }
        try options.request.validate()
        if options.request.quality?.verify != nil && StorageRegistry.isStored(options.output) {
            throw MediaError(.invalidSettings, "--verify reads the stitched output back as a file; an object output "
                + "(\(options.output)) cannot be verified yet: write to a path, or leave --verify out")
        }
        let planned = try await SegmentPlanner.plan(source: options.source, request: options.request, lanes: options.jobs)
        let t1 = clock.now
        state.withLock { s in
            s.total = planned.segments.count
            for spec in planned.segments {
                s.weights[spec.index] = max(1, spec.cost ?? planned.approximateDuration(of: spec)?.converted(to: 1000).value ?? 1)
            }
        }
        publish()

        let fm = FileManager.default
        let work: URL
        if let keep = options.keepSegmentsIn {
            work = keep
        } else {
            // Beside the output (the same file system as the stitched file), or in the temporary
            // folder when the output goes to storage.
            let folder = StorageRegistry.isStored(options.output) ? fm.temporaryDirectory
                : URL(fileURLWithPath: options.output).deletingLastPathComponent()
            work = folder.appendingPathComponent(".splice-\(planned.id.prefix(8))")
        }
        do {
            try fm.createDirectory(at: work, withIntermediateDirectories: true)
        } catch {
            throw MediaError(.writeFailed, "cannot create the working folder '\(work.path)': \(error.localizedDescription)")
        }
        defer { if options.keepSegmentsIn == nil { try? fm.removeItem(at: work) } }
        if options.keepSegmentsIn != nil {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(planned).write(to: work.appendingPathComponent("plan.json"))
        }

        let (stitched, results, handovers) = try await encodeSegments(planned, into: work)
        let plan = stitched
        if !handovers.isEmpty, options.keepSegmentsIn != nil {
            // The kept plan is the one the segments were made for (`splice stitch` reads it).
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(plan).write(to: work.appendingPathComponent("plan.json"))
        }
        let t2 = clock.now
        state.withLock { $0.stitching = true }
        publish()
        let paths = Dictionary(uniqueKeysWithValues: results.map { ($0.index, $0.path) })
        let checksums = Dictionary(uniqueKeysWithValues: results.map { ($0.index, $0.checksum) })
        try Task.checkCancellation()
        var package: PackageSummary?
        let stitch: StitchSummary
        if plan.package != nil {
            let written = try await Packager(plan: plan).package(segments: paths, checksums: checksums, to: options.output,
                                                                 overwrite: options.request.overwrite)
            package = written
            stitch = written.stitchSummary
        } else {
            stitch = try await Stitcher(plan: plan).stitch(segments: paths, checksums: checksums, to: options.output,
                                                           overwrite: options.request.overwrite)
        }
        var quality: QualityReport?
        if let request = plan.quality, request.verify != nil {
            let figures = Dictionary(uniqueKeysWithValues: results.compactMap { r in r.figures.map { (r.index, $0) } })
            let output = URL(fileURLWithPath: options.output)
            let report = try await StitchVerification(plan: plan).verify(segments: paths, output: output, figures: figures)
            try QualityGate.conclude(report, request: request, output: output)
            quality = report
        }
        let t3 = clock.now
        return Summary(plan: plan, segments: results.sorted { $0.index < $1.index }, handovers: handovers,
                       stitch: stitch, package: package,
                       quality: quality,
                       planNanoseconds: nanoseconds(t1 - t0), encodeNanoseconds: nanoseconds(t2 - t1),
                       stitchNanoseconds: nanoseconds(t3 - t2), cpuMicroseconds: processCPUMicroseconds() - cpuAtStart)
    }

    /// What a lane's task reports: a segment done, or time to look again for a handover.
    private enum LaneEvent: Sendable {
        case finished(SegmentResult)
        case tick
    }

    /// Encodes the segments `jobs` at a time, the most expensive first (so the lanes end
    /// together on the cheap ones), each encoder single-threaded while every lane is busy; a
    /// segment started when fewer are left than there are idle lanes gets their threads. Once
    /// nothing is left to start, a lane that falls idle takes over the second part of what the
    /// running segment with the most left still has to do (``LaneHandover``): the plan returned
    /// has the segments that added, in their place.
    private func encodeSegments(_ planned: SegmentPlan, into work: URL) async throws
        -> (SegmentPlan, [SegmentResult], [Handover]) {
        var plan = planned
        let jobs = options.jobs
        let handover = jobs > 1 && Self.canHandOver(plan) ? options.handover : nil
        let videoEnd = handover == nil ? nil : try await Self.videoEnd(of: plan)
        // A handover's new segment warms a bit rate up over the video before it, as far back as
        // the output's zero at most (the range's start, as the planner's segments).
        let warmUp = Self.handoverWarmUp(plan), videoStart = plan.outputZero
        var pending = Self.longestFirst(plan.segments)[...]
        var running = 0
        /// The movable ends of the video segments running, by index.
        var ends: [Int: SegmentEnd] = [:]
        var ticking = false
        var results: [SegmentResult] = []
        var handovers: [Handover] = []
        let clock = ContinuousClock()
        let origin = clock.now
        try await withThrowingTaskGroup(of: LaneEvent.self) { group in
            func start(_ index: Int, threads: Int) {
                running += 1
                let url = work.appendingPathComponent(String(format: "segment-%05d.splseg", index))
                var exporter = SegmentExporter(plan: plan)
                exporter.rungsSideBySide = options.rungsSideBySide
                var end: SegmentEnd?
                if handover != nil, let spec = plan.segments.first(where: { $0.index == index }), !spec.isAudio {
                    end = SegmentEnd(end: spec.videoEnd)
                    ends[index] = end
                }
                group.addTask { [self, end] in
                    let started = clock.now
                    var result = try await exporter.export(segment: index, to: url, codecThreads: threads, end: end) { fraction in
                        self.state.withLock { $0.fractions[index] = fraction }
                        self.publish()
                    }
                    result.startedMicroseconds = Int64(self.nanoseconds(started - origin) / 1000)
                    result.finishedMicroseconds = Int64(self.nanoseconds(clock.now - origin) / 1000)
                    return .finished(result)
                }
            }
            func startNext() {
                guard let index = pending.popFirst() else { return }
                let idle = jobs - running
                start(index, threads: jobs == 1 ? 0 : max(1, idle / (pending.count + 1)))
            }
            /// Hands part of a running segment to an idle lane; false when none pays.
            func handOver() -> Bool {
                guard let handover, running < jobs, pending.isEmpty else { return false }
                let candidates = ends.compactMap { index, end in
                    (end.end ?? videoEnd).map { LaneHandover.Running(index: index, end: $0, position: end.position) }
                }
                guard let decision = handover.choose(candidates, warmUp: warmUp), let end = ends[decision.index],
                      let before = end.end ?? videoEnd, end.moveEnd(to: decision.at),
                      let slot = plan.segments.firstIndex(where: { $0.index == decision.index }) else { return false }
                var parent = plan.segments[slot]
                let newIndex = (plan.segments.map(\.index).max() ?? 0) + 1
                var taken = SegmentSpec(index: newIndex, videoStart: decision.at, videoEnd: parent.videoEnd)
                let from = parent.videoStart ?? plan.outputZero
                // The parent keeps (at − from) of its (before − from); costs and progress split alike.
                let kept = Self.micros(decision.at - from), whole = max(1, Self.micros(before - from))
                if let cost = parent.cost {
                    parent.cost = max(1, MediaTime.rescale(cost, multiplier: kept, divisor: whole))
                    taken.cost = max(1, cost - parent.cost!)
                }
                // A bit rate's control warms up over the video before the new segment, as the
                // planner's later segments do (never before the video's start).
                if warmUp > .zero, decision.at > videoStart {
                    let lead = MediaTime.min(warmUp, decision.at - videoStart)
                    taken.videoWarmUp = lead
                    taken.cost = taken.cost.map { $0 + Self.micros(lead) }
                }
                parent.videoEnd = decision.at
                plan.segments[slot] = parent
                plan.segments.insert(taken, at: slot + 1)
                handovers.append(Handover(segment: decision.index, newSegment: newIndex, at: decision.at,
                                          atMicroseconds: Int64(nanoseconds(clock.now - origin) / 1000)))
                state.withLock { s in
                    let weight = s.weights[decision.index] ?? 1
                    let keeps = max(1, MediaTime.rescale(weight, multiplier: kept, divisor: whole))
                    s.weights[decision.index] = keeps
                    s.weights[newIndex] = max(1, weight - keeps)
                    // The parent's progress is still reported over the span it started with.
                    s.scales[decision.index] = (s.scales[decision.index] ?? 1) * Double(kept) / Double(whole)
                    s.total += 1
                }
                start(newIndex, threads: 1)
                return true
            }
            /// Looks again shortly while a lane is idle and a running segment might still hand over.
            func tickIfIdle() {
                guard handover != nil, !ticking, running < jobs, pending.isEmpty, !ends.isEmpty else { return }
                ticking = true
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(250))
                    return .tick
                }
            }
            for _ in 0..<min(options.jobs, pending.count) { startNext() }
            while let event = try await group.next() {
                switch event {
                case .tick:
                    ticking = false
                case .finished(let result):
                    running -= 1
                    ends[result.index] = nil
                    results.append(result)
                    state.withLock {
                        $0.fractions[result.index] = 1
                        $0.completed += 1
                    }
                    publish()
                    startNext()
                }
                while handOver() {}
                tickIfIdle()
                // Done: a look-again still asleep need not be waited for.
                if running == 0 && pending.isEmpty && ticking { group.cancelAll() }
            }
        }
        return (plan, results, handovers)
    }

    /// Whether a segment of `plan` may stop at any picture and hand the rest over without the
    /// join showing: encoded video with no constant frame rate (pictures placed on a grid from the
    /// segment's start), no streaming grid (a package's rungs switch on it), no quality target (its
    /// CRF is chosen for the segment's whole range). A bit rate may: the new segment warms up
    /// (``handoverWarmUp(_:)``) and starts its buffer model where every segment does.
    static func canHandOver(_ plan: SegmentPlan) -> Bool {
        guard let video = plan.videoSettings, video.frameRate == nil, plan.package == nil,
              plan.quality?.target == nil else { return false }
        return true
    }

    /// The rate-control warm-up a segment made by a handover encodes first: what the planner gives
    /// every later segment (``RateControl/warmUp``) when the video has a bit rate, else none.
    static func handoverWarmUp(_ plan: SegmentPlan) -> MediaTime {
        plan.videoSettings.map(RateControl.warmsUp) == true ? RateControl.warmUp : .zero
    }

    /// Where the video ends, for the open end of the last segment: as the planner cut it — the
    /// requested range's end, no later than the video track's (its duration, or where its packets
    /// end when the container gives it none, ``SegmentPlan/videoTrackEnd``).
    static func videoEnd(of plan: SegmentPlan) async throws -> MediaTime? {
        var track = plan.videoTrackEnd
        if track == nil {
            let source = plan.source
            let asset = try await BlockingThread.run("splice.transcode.probe") { try Asset(probing: source) }
            track = asset.videoTrack.flatMap { t in t.duration.map { (t.startTime ?? .zero) + $0 } }
            if track == nil && plan.outputEnd == nil { return asset.duration }
        }
        guard let end = plan.outputEnd else { return track }
        return track.map { MediaTime.min(end, $0) } ?? end
    }

    private static func micros(_ t: MediaTime) -> Int64 { t.converted(to: 1_000_000, rounding: .down).value }

    /// Segment indexes, the most expensive first (plan order among equals, and for plans without costs).
    static func longestFirst(_ segments: [SegmentSpec]) -> [Int] {
        segments.enumerated().sorted { a, b in
            let (ca, cb) = (a.element.cost ?? 0, b.element.cost ?? 0)
            return ca != cb ? ca > cb : a.offset < b.offset
        }.map(\.element.index)
    }

    private func publish() {
        state.withLock { s in
            let totalWeight = s.weights.values.reduce(0, +)
            let done = s.weights.reduce(Int64(0)) { sum, entry in
                let fraction = min(1, (s.fractions[entry.key] ?? 0) / (s.scales[entry.key] ?? 1))
                return sum + Int64(fraction * 1000) * entry.value / 1000
            }
            let encodeFraction = totalWeight > 0 ? Double(done) / Double(totalWeight) : 0
            let progress = Progress(completedSegments: s.completed, totalSegments: s.total,
                                    fraction: s.stitching ? 0.97 : encodeFraction * 0.97)
            for c in s.observers.values { c.yield(progress) }
        }
    }

    private func finishObservers() {
        let observers = state.withLock { s -> [AsyncStream<Progress>.Continuation] in
            defer { s.observers.removeAll() }
            return Array(s.observers.values)
        }
        for c in observers { c.finish() }
    }

    private func nanoseconds(_ d: Duration) -> UInt64 {
        let (s, atto) = d.components
        return UInt64(s) * 1_000_000_000 + UInt64(atto / 1_000_000_000)
    }
}
