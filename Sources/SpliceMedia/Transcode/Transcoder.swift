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

        public init(source: String, output: URL, request: TranscodeRequest,
                    jobs: Int = ProcessInfo.processInfo.activeProcessorCount, keepSegmentsIn: URL? = nil) {
            self.init(source: source, output: output.path, request: request, jobs: jobs, keepSegmentsIn: keepSegmentsIn)
        }

        public init(source: String, output: String, request: TranscodeRequest,
                    jobs: Int = ProcessInfo.processInfo.activeProcessorCount, keepSegmentsIn: URL? = nil) {
            self.source = source
            self.output = output
            self.request = request
            self.jobs = max(1, jobs)
            self.keepSegmentsIn = keepSegmentsIn
        }
    }

    /// How far a transcode is.
    public struct Progress: Sendable, Hashable {
        public var completedSegments: Int
        public var totalSegments: Int
        /// 0…1 over the whole job (encoding weighted by segment length, then stitching).
        public var fraction: Double
    }

    /// What a transcode did, with timings for reports and benchmarks.
    public struct Summary: Sendable, Codable {
        public var plan: SegmentPlan
        public var segments: [SegmentResult]
        public var stitch: StitchSummary
        /// The streaming package written, when the request asked for one.
        public var package: PackageSummary?
        /// The checks of a verified output (`--verify`), every frame's figures included.
        public var quality: QualityReport?
        public var planNanoseconds: UInt64
        public var encodeNanoseconds: UInt64
        public var stitchNanoseconds: UInt64
    }

    private struct State: Sendable {
        var fractions: [Int: Double] = [:]
        var weights: [Int: Int64] = [:]
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
        let plan = try await SegmentPlanner.plan(source: options.source, request: options.request, lanes: options.jobs)
        let t1 = clock.now
        state.withLock { s in
            s.total = plan.segments.count
            for spec in plan.segments {
                s.weights[spec.index] = max(1, spec.cost ?? plan.approximateDuration(of: spec)?.converted(to: 1000).value ?? 1)
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
            work = folder.appendingPathComponent(".splice-\(plan.id.prefix(8))")
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
            try encoder.encode(plan).write(to: work.appendingPathComponent("plan.json"))
        }

        let results = try await encodeSegments(plan, into: work)
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
        return Summary(plan: plan, segments: results.sorted { $0.index < $1.index }, stitch: stitch, package: package,
                       quality: quality,
                       planNanoseconds: nanoseconds(t1 - t0), encodeNanoseconds: nanoseconds(t2 - t1),
                       stitchNanoseconds: nanoseconds(t3 - t2))
    }

    /// Encodes the segments `jobs` at a time, the most expensive first (so the lanes end
    /// together on the cheap ones), each encoder single-threaded while every lane is busy; a
    /// segment started when fewer are left than there are idle lanes gets their threads.
    private func encodeSegments(_ plan: SegmentPlan, into work: URL) async throws -> [SegmentResult] {
        let exporter = SegmentExporter(plan: plan)
        let jobs = options.jobs
        var pending = Self.longestFirst(plan.segments)[...]
        var running = 0
        var results: [SegmentResult] = []
        let clock = ContinuousClock()
        let origin = clock.now
        try await withThrowingTaskGroup(of: SegmentResult.self) { group in
            func startNext() {
                guard let index = pending.popFirst() else { return }
                let idle = jobs - running
                let threads = jobs == 1 ? 0 : max(1, idle / (pending.count + 1))
                running += 1
                let url = work.appendingPathComponent(String(format: "segment-%05d.splseg", index))
                group.addTask { [self] in
                    let started = clock.now
                    var result = try await exporter.export(segment: index, to: url, codecThreads: threads) { fraction in
                        self.state.withLock { $0.fractions[index] = fraction }
                        self.publish()
                    }
                    result.startedMicroseconds = Int64(self.nanoseconds(started - origin) / 1000)
                    result.finishedMicroseconds = Int64(self.nanoseconds(clock.now - origin) / 1000)
                    return result
                }
            }
            for _ in 0..<min(options.jobs, pending.count) { startNext() }
            while let result = try await group.next() {
                running -= 1
                results.append(result)
                state.withLock {
                    $0.fractions[result.index] = 1
                    $0.completed += 1
                }
                publish()
                startNext()
            }
        }
        return results
    }

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
                sum + Int64((s.fractions[entry.key] ?? 0) * 1000) * entry.value / 1000
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
