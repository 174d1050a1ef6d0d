import SpliceConcurrency
import SpliceHTTP
import SpliceMetrics
import SpliceDaemon

/// A worker's figures, counted by ``WorkerDaemon`` as its encodes start and end.
final class WorkerMetrics: Sendable {
    let slots = Gauge("splice_worker_slots", help: "Segments this worker encodes at once (--slots).")
    let usableCores = Gauge("splice_worker_usable_cores",
                            help: "Cores this worker may use: its CPU affinity, capped by its cgroup's CPU limit.")
    let threadsPerSlot = Gauge("splice_worker_threads_per_slot",
                               help: "Encoder threads per slot while every slot is busy (usable cores / slots, or "
                                   + "--codec-threads); a segment that finds itself alone takes every usable core.")
    let busySlots = Gauge("splice_worker_busy_slots",
                          help: "Encodes running now (an aborted one counts until it has stopped).")
    let segments = Counter("splice_worker_segments_total",
                           help: "Encodes that ended, by outcome: completed, failed, aborted.",
                           labelNames: ["outcome"], initial: [["completed"], ["failed"], ["aborted"]])
    let frames = Counter("splice_worker_encoded_frames_total",
                         help: "Video frames written by the encodes that completed.")
    let encodeSeconds = Counter("splice_worker_encode_seconds_total",
                                help: "Wall-clock seconds spent in the encodes that completed.")
    let registered = Gauge("splice_worker_registered",
                           help: "1 while a coordinator has welcomed this worker (WELCOME received), else 0.")

    init(slots: Int, usableCores: Int, threadsPerSlot: Int) {
        self.slots.set(Double(slots))
        self.usableCores.set(Double(usableCores))
        self.threadsPerSlot.set(Double(threadsPerSlot))
    }

    var sources: [any MetricSource] {
        [slots, usableCores, threadsPerSlot, busySlots, segments, frames, encodeSeconds, registered]
    }

    /// An encode started.
    func started() {
        busySlots.add(1)
    }

    /// An encode ended with `outcome`.
    func ended(_ outcome: EncodeOutcome) {
        busySlots.add(-1)
        switch outcome {
        case .completed(_, _, let milliseconds, let videoFrames, _):
            segments.increment(["completed"])
            frames.increment(by: Double(videoFrames))
            encodeSeconds.increment(by: Double(milliseconds) / 1000)
        case .failed:
            segments.increment(["failed"])
        case .cancelled:
            segments.increment(["aborted"])
        }
    }
}

/// What a worker's operations endpoint serves: `/metrics` (``WorkerMetrics``, `splice_build_info`,
/// `process_*`), `/healthz` (the daemon's actor answers within 2 s), `/readyz` (registered with a
/// coordinator: WELCOME received and the coordinator heard from since).
struct WorkerSite: OperationsSite {
    let metrics = MetricsRegistry()
    let daemon: WorkerDaemon
    let figures: WorkerMetrics
    static let probeWait: Duration = .seconds(2)

    init(daemon: WorkerDaemon, figures: WorkerMetrics, version: String) {
        self.daemon = daemon
        self.figures = figures
        metrics.register(BuildInfo(version: version))
        for source in figures.sources { metrics.register(source) }
        metrics.register(ProcessFigures())
    }

    func liveness() async -> HealthCheck {
        let daemon = self.daemon
        guard await SpliceConcurrency.value(of: Task { await daemon.ping() }, within: Self.probeWait) != nil else {
            return .fail("the worker's main loop did not answer within \(Self.probeWait)")
        }
        return .pass("the main loop answers")
    }

    func readiness() async -> HealthCheck {
        figures.registered.value() == 1 ? .pass("registered with the coordinator")
            : .fail("not registered with a coordinator (no WELCOME yet, or the coordinator fell silent)")
    }

    func page(_ request: HTTPRequest) async -> HTTPResponse? { nil }
}
