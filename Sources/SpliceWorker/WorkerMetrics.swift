import SpliceConcurrency
import SpliceDaemon
import SpliceHTTP
import SpliceMetrics
import SpliceWire
import Synchronization

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

    /// The connections to the coordinators, once made: their messages received and dropped by reason.
    private let endpoints = Mutex<[WireCounters]>([])

    init(slots: Int, usableCores: Int, threadsPerSlot: Int) {
        self.slots.set(Double(slots))
        self.usableCores.set(Double(usableCores))
        self.threadsPerSlot.set(Double(threadsPerSlot))
    }

    var sources: [any MetricSource] {
        let messages = EndpointMessages { [self] in
            let all = endpoints.withLock { $0 }
            // One coordinator: `coordinator`; several (`--coordinator a,b`): `coordinator-0`, `coordinator-1`…
            return all.enumerated().map { index, counters in
                (all.count == 1 ? "coordinator" : "coordinator-\(index)", counters.snapshot())
            }
        }
        return [slots, usableCores, threadsPerSlot, busySlots, segments, frames, encodeSeconds, registered, messages]
    }

    /// The worker connected: its endpoints' counters (one per coordinator, in `--coordinator`
    /// order) are served from now on.
    func connected(_ counters: [WireCounters]) {
        endpoints.withLock { $0 = counters }
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

