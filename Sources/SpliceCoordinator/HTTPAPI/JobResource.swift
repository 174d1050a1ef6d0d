import Foundation
import Glibc
import SpliceCore
import SpliceJSON
import SpliceStore
import SpliceWire

/// A job as the HTTP API shows it (`GET /v1/jobs/{id}`, the list, the answer to a submission).
/// Times are RFC 3339 in UTC with milliseconds; a field without a value is left out.
struct JobResource: Encodable, Sendable {
    struct Progress: Encodable, Sendable {
        /// 0…1, weighted by the segments' planned costs (by count without costs); 1 only once the
        /// output exists.
        var fraction: Double
        var segmentsDone: Int
        var segmentsTotal: Int?
    }

    struct Segment: Encodable, Sendable {
        var index: Int
        var state: SegmentState
        var figures: SegmentFigures?
    }

    struct Backups: Encodable, Sendable {
        var started: Int
        var won: Int
    }

    struct Webhook: Encodable, Sendable {
        var url: String
        /// Whether the job signs with its own secret (never shown) rather than the coordinator's.
        var ownSecret: Bool
        var deliveries: [Delivery]?
    }

    struct Delivery: Encodable, Sendable {
        var event: String
        var type: String
        var attempt: Int
        var at: String
        var status: Int?
        var error: String?
        var durationMs: Int
        var outcome: String
    }

    var id: String
    var state: JobState
    var input: String
    var output: String
    var priority: Int
    var reference: String?
    var settings: JSONValue?
    var progress: Progress
    var segments: [Segment]?
    var backups: Backups?
    var waiting: String?
    var error: String?
    var submittedAt: String
    var startedAt: String?
    var finishedAt: String?
    var webhook: Webhook?

    /// The job with its progress (`running`: its attempts' PROGRESS); segments, settings and
    /// deliveries only when given (job status, not the list).
    init(job: Job, progress: JobProgress, running: RunningProgress, segments: [SegmentReport]? = nil,
         waiting: String? = nil, deliveries: [WebhookDelivery]? = nil, webhookHasOwnSecret: Bool = false,
         withSettings: Bool = false) {
        id = job.id.description
        state = job.state
        input = job.input
        output = job.output
        priority = job.priority
        reference = job.reference
        settings = withSettings ? try? JSONValue(parsing: Array(job.settings.text.utf8)) : nil
        let planned = job.segmentsTotal > 0
        self.progress = Progress(
            fraction: JobStatusMapping.fraction(state: job.state, segmentsDone: job.segmentsDone,
                                                segmentsTotal: job.segmentsTotal, progress: progress, running: running),
            segmentsDone: job.segmentsDone, segmentsTotal: planned ? job.segmentsTotal : nil)
        self.segments = segments.flatMap { $0.isEmpty ? nil : $0.map {
            Segment(index: $0.index, state: $0.state, figures: $0.figures)
        } }
        backups = progress.backupsStarted > 0 ? Backups(started: progress.backupsStarted, won: progress.backupsWon) : nil
        self.waiting = job.state == .running ? waiting : nil
        error = job.error
        submittedAt = Timestamp.text(job.createdAt)
        startedAt = job.startedAt.map(Timestamp.text)
        finishedAt = job.finishedAt.map(Timestamp.text)
        webhook = job.webhookURL.map { url in
            Webhook(url: url, ownSecret: webhookHasOwnSecret, deliveries: deliveries?.map {
                Delivery(event: $0.eventID.uuidString.lowercased(), type: $0.type, attempt: $0.attempt,
                         at: Timestamp.text($0.at), status: $0.status, error: $0.error,
                         durationMs: $0.durationMilliseconds, outcome: $0.outcome.rawValue)
            })
        }
    }
}

/// A page of `GET /v1/jobs`.
struct JobListResource: Encodable, Sendable {
    var jobs: [JobResource]
    /// The `cursor` of the next page; absent on the last.
    var next: String?
}

/// A worker as `GET /v1/workers` shows it.
struct WorkerResource: Encodable, Sendable {
    struct Quarantine: Encodable, Sendable {
        var remainingMs: Int
        var reason: String?
    }

    var key: String
    var name: String?
    var enrolled: Bool
    var connected: Bool
    var slots: Int?
    var running: Int
    var lastSeenAt: String?
    var quarantine: Quarantine?
    var storage: String?
    var usableCores: Int?
    var threadsPerSlot: Int?
    /// The worker-protocol version its session speaks (docs/protocol.md, Versions).
    var protocolVersion: Int?

    init(_ info: WorkerInfo) {
        key = info.publicKey.z85
        name = info.name
        enrolled = info.enrolled
        connected = info.connected
        slots = info.slots
        running = info.running
        lastSeenAt = info.lastSeenAtMilliseconds.map { Timestamp.text(Date(timeIntervalSince1970: Double($0) / 1000)) }
        quarantine = info.quarantineRemainingMilliseconds.map { Quarantine(remainingMs: $0, reason: info.quarantineReason) }
        storage = info.storage?.rawValue
        usableCores = info.usableCores
        threadsPerSlot = info.threadsPerSlot
        protocolVersion = info.protocolVersion
    }
}

/// `GET /v1/workers`.
struct WorkerListResource: Encodable, Sendable {
    var workers: [WorkerResource]
}

/// Times as the HTTP API writes them: RFC 3339, UTC, milliseconds (`2026-12-01T09:30:00.125Z`).
enum Timestamp {
    static func text(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000)
        let fraction = Int(milliseconds - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return pad(parts.tm_year + 1900, 4) + "-" + pad(parts.tm_mon + 1, 2) + "-" + pad(parts.tm_mday, 2) + "T"
            + pad(parts.tm_hour, 2) + ":" + pad(parts.tm_min, 2) + ":" + pad(parts.tm_sec, 2) + "." + pad(Int32(fraction), 3)
            + "Z"
    }
}
