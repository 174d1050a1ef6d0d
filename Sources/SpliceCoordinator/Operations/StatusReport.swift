import Foundation
import SpliceCore
import SpliceStore
import SpliceWire

/// What the status page shows, also served as `/status.json`: the coordinator, its jobs and its
/// workers at one moment. Built from the store (jobs) and the state machine (workers, progress).
struct StatusReport: Codable, Sendable {
    struct Job: Codable, Sendable {
        var id: String
        /// The API's names: queued, planning, running, stitching, succeeded, failed, cancelled.
        var state: JobState
        var input: String
        var output: String
        var priority: Int
        var segmentsDone: Int
        var segmentsTotal: Int?
        /// 0…1: done segments plus the running ones' PROGRESS, weighted by the segments' costs (at
        /// most 0.99 until the output exists).
        var fraction: Double
        /// Seconds left at the pace so far (running jobs that have made some progress).
        var etaSeconds: Int?
        var failedAttempts: Int
        /// Backup attempts started for stragglers, and those that finished first.
        var backupsStarted: Int
        var backupsWon: Int
        var error: String?
        var waiting: String?
        var submittedAt: Date
        var startedAt: Date?
        var finishedAt: Date?
        /// The measured segments' luma PSNR and SSIM (`--verify`, quality targets).
        var psnrY: Double?
        var ssimY: Double?
    }

    struct Worker: Codable, Sendable {
        struct Segment: Codable, Sendable {
            var job: String
            var segment: Int
            var attempt: Int
            var fraction: Double
        }

        var name: String
        /// The CURVE key (Z85), or `route:…` without CURVE.
        var identity: String
        var slots: Int
        var busy: Int
        /// The worker-protocol version its session speaks.
        var protocolVersion: Int
        var segments: [Segment]
        /// Frames per second of the segments completed over the last minute.
        var framesPerSecond: Double?
        /// `ok`, `registering`, `silent`, or `quarantined`.
        var status: String
        var quarantineSeconds: Int?
        var quarantineReason: String?
    }

    /// Which coordinator is the active one (docs/coordinator.md, Standby coordinators).
    struct Leadership: Codable, Sendable {
        /// This coordinator's name and part: `active` or `standby`.
        var name: String
        var role: String
        /// The epoch it holds while active; else the active one's as last read (0: none known).
        var epoch: Int64
        /// The active coordinator (this one while active), when one is known.
        var activeName: String?
        var activeAPI: String?
        /// Its status page.
        var activeStatusPage: String?
        var activeSince: Date?
    }

    var generatedAt: Date
    var version: String
    /// `starting`, `running` or `stopping`.
    var coordinator: String
    var leadership: Leadership?
    var uptimeSeconds: Int
    /// Whether the database answered this report's queries in time.
    var storeUp: Bool
    var storeError: String?
    var pendingSegments: Int?
    var leasedSegments: Int?
    var jobs: [Job]
    var workers: [Worker]

    // MARK: - Building

    static func leadership(of runtime: CoordinatorRuntime) -> Leadership {
        let role = runtime.role
        let active = role.leader?.active
        return Leadership(
            name: runtime.candidate.name, role: role.term == nil ? "standby" : "active", epoch: role.epoch,
            activeName: active?.holderName, activeAPI: active?.apiEndpoint, activeStatusPage: active?.metricsEndpoint,
            activeSince: active?.acquiredAt)
    }

    static func job(_ summary: JobRepository.JobSummary, runningProgress: RunningProgress, now: Date) -> Job {
        let planned = summary.segmentsTotal > 0
        let fraction = JobStatusMapping.fraction(
            state: summary.state, segmentsDone: summary.segmentsDone, segmentsTotal: summary.segmentsTotal,
            progress: summary.progress, running: runningProgress)
        var eta: Int?
        if summary.state == .running, fraction >= 0.01, let started = summary.startedAt {
            let elapsed = max(0, now.timeIntervalSince(started))
            eta = Int((elapsed * (1 - fraction) / fraction).rounded())
        }
        return Job(
            id: summary.id.uuidString.lowercased(), state: summary.state,
            input: summary.input, output: summary.output, priority: summary.priority,
            segmentsDone: summary.segmentsDone, segmentsTotal: planned ? summary.segmentsTotal : nil, fraction: fraction,
            etaSeconds: eta, failedAttempts: summary.failedAttempts, backupsStarted: summary.progress.backupsStarted,
            backupsWon: summary.progress.backupsWon, error: summary.error, waiting: summary.waiting,
            submittedAt: summary.createdAt, startedAt: summary.startedAt, finishedAt: summary.finishedAt,
            psnrY: summary.psnrY.map { ($0 * 100).rounded() / 100 }, ssimY: summary.ssimY.map { ($0 * 10_000).rounded() / 10_000 })
    }

    static func worker(_ live: LiveWorker, framesPerSecond: Double?) -> Worker {
        let session = live.session
        let status: String
        if !session.active {
            status = "registering"
        } else if session.silent {
            status = "silent"
        } else if session.quarantineRemaining != nil {
            status = "quarantined"
        } else {
            status = "ok"
        }
        let running = live.attempts.filter { !$0.reported }
        return Worker(
            name: session.name, identity: session.identity.description, slots: session.slots,
            busy: min(session.slots, running.count), protocolVersion: session.protocolVersion,
            segments: running.map {
                Worker.Segment(job: $0.attempt.job.description, segment: $0.attempt.segment, attempt: $0.attempt.attempt,
                        fraction: $0.fraction)
            },
            framesPerSecond: framesPerSecond, status: status,
            quarantineSeconds: session.quarantineRemaining.map { Int(($0.inSeconds).rounded(.up)) },
            quarantineReason: session.quarantineReason)
    }

    /// The report as JSON: ISO 8601 dates, sorted keys.
    func json() -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return (try? String(decoding: encoder.encode(self), as: UTF8.self)) ?? "{}"
    }
}
