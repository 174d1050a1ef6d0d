public import Foundation
public import SpliceCore

// MARK: - States

extension JobState: PostgresEncodable, PostgresDecodable, PostgresArrayElement {}
extension SegmentState: PostgresEncodable, PostgresDecodable, PostgresArrayElement {}
extension WorkerState: PostgresEncodable, PostgresDecodable {}

/// String-backed enums travel as their raw value.
extension PostgresEncodable where Self: RawRepresentable, RawValue == String {
    public static var postgresType: PostgresType { .text }
    public var postgresText: String? { rawValue }
}

extension PostgresArrayElement where Self: RawRepresentable, RawValue == String {
    public static var postgresArrayType: PostgresType { .textArray }
}

extension PostgresDecodable where Self: RawRepresentable, RawValue == String {
    public static func decode(postgresText text: String?) throws -> Self {
        let text = try String.decode(postgresText: text)
        guard let value = Self(rawValue: text) else { throw PostgresDecodingIssue("unknown \(Self.self): \(text)") }
        return value
    }
}

// MARK: - Jobs

/// What a client submits. Submitting the same `idempotencyKey` again returns the first job
/// (whose `submissionFingerprint` says whether it was the same request).
public struct JobSubmission: Sendable, Equatable {
    public var idempotencyKey: String
    /// The SHA-256 of the canonical request, kept with the key so a resend can be told from a
    /// reuse of the key for another request.
    public var fingerprint: SHA256Digest?
    public var input: String
    public var output: String
    /// The job's settings as JSON, opaque to the store.
    public var settings: PostgresJSON
    /// Higher runs first.
    public var priority: Int
    /// Attempts each segment gets before it is dead.
    public var maxAttempts: Int
    /// The caller's own id for the job (HTTP API), filterable.
    public var reference: String?
    /// Where the job's events are POSTed, and its own signing secret (nil: the coordinator's).
    public var webhookURL: String?
    public var webhookSecret: String?
    /// The HTTP API token that submitted it.
    public var submittedBy: UUID?

    public init(idempotencyKey: String, fingerprint: SHA256Digest? = nil, input: String, output: String,
                settings: PostgresJSON = .emptyObject, priority: Int = 0, maxAttempts: Int = 5, reference: String? = nil,
                webhookURL: String? = nil, webhookSecret: String? = nil, submittedBy: UUID? = nil) {
        self.idempotencyKey = idempotencyKey
        self.fingerprint = fingerprint
        self.input = input
        self.output = output
        self.settings = settings
        self.priority = priority
        self.maxAttempts = maxAttempts
        self.reference = reference
        self.webhookURL = webhookURL
        self.webhookSecret = webhookSecret
        self.submittedBy = submittedBy
    }
}

/// A job as stored.
public struct Job: Sendable, Equatable, Identifiable {
    public var id: JobID
    public var idempotencyKey: String
    /// The submitted request's fingerprint (`JobSubmission.fingerprint`); nil for jobs submitted
    /// without one, or before the store kept it (migration 0005).
    public var submissionFingerprint: SHA256Digest?
    public var input: String
    public var output: String
    public var settings: PostgresJSON
    /// The segment plan as JSON, once planning recorded it.
    public var plan: PostgresJSON?
    public var state: JobState
    public var priority: Int
    public var maxAttempts: Int
    public var segmentsTotal: Int
    public var segmentsDone: Int
    /// Why the job failed or was cancelled.
    public var error: String?
    public var createdAt: Date
    public var updatedAt: Date
    public var startedAt: Date?
    public var finishedAt: Date?
    /// The caller's own id for it (HTTP API).
    public var reference: String? = nil
    /// Where its events are POSTed (its own, or the coordinator's default when it was submitted).
    public var webhookURL: String? = nil
    /// Whether it signs its events with its own secret (never read back) rather than the coordinator's.
    public var hasOwnWebhookSecret = false
    /// The HTTP API token that submitted it.
    public var submittedBy: UUID? = nil
}

/// The answer to `createJob`: the job, and whether this call created it.
public struct JobCreation: Sendable, Equatable {
    public var job: Job
    /// False when a job with the same idempotency key already existed (that job is returned).
    public var created: Bool
}

// MARK: - Segments

/// One piece of a plan: a media time range `[rangeStart, rangeEnd)` in units of `1/timescale` s,
/// plus anything else the planner wants the worker to know (`spec`, opaque JSON).
public struct PlannedSegment: Sendable, Equatable {
    public var index: Int
    public var rangeStart: Int64
    public var rangeEnd: Int64
    public var timescale: Int32
    public var spec: PostgresJSON
    /// The planner's estimate of the work of encoding it, in the plan's units (0: unknown). Within
    /// a job the most expensive pending segments are claimed first.
    public var cost: Int64

    public init(index: Int, rangeStart: Int64, rangeEnd: Int64, timescale: Int32, spec: PostgresJSON = .emptyObject,
                cost: Int64 = 0) {
        self.index = index
        self.rangeStart = rangeStart
        self.rangeEnd = rangeEnd
        self.timescale = timescale
        self.spec = spec
        self.cost = max(0, cost)
    }
}

/// A segment as stored.
public struct Segment: Sendable, Equatable, Identifiable {
    public var id: Int64
    public var jobID: JobID
    public var plan: PlannedSegment
    public var state: SegmentState
    /// How many attempts have started (the current one included while leased).
    public var attempt: Int
    public var maxAttempts: Int
    /// The current lease's token while leased; afterwards the last attempt's.
    public var leaseToken: LeaseToken?
    public var leasedBy: UUID?
    public var leaseExpiresAt: Date?
    public var heartbeatAt: Date?
    /// Not claimable before this (backoff after a failure).
    public var nextAttemptAt: Date
    /// Workers whose attempts failed or were taken back.
    public var failedWorkers: [UUID]
    public var outputPath: String?
    public var checksum: SHA256Digest?
    public var lastError: String?
    public var finishedAt: Date?
    /// The backup attempt running beside the leased one, if any: its own token, holder and expiry.
    public var backupToken: LeaseToken?
    public var backupLeasedBy: UUID?
    public var backupExpiresAt: Date?
    /// Backup attempts started for this segment (at most one).
    public var backups: Int
    /// What the winning attempt's video came to, as its worker reported it (done segments with
    /// video, from workers that report it).
    public var figures: SegmentFigures?

    /// The fence a worker must present to extend, complete or fail this attempt.
    public var lease: LeaseReference? {
        leaseToken.map { LeaseReference(job: jobID, segment: plan.index, token: $0) }
    }

    /// The backup attempt's fence, while one runs.
    public var backupLease: LeaseReference? {
        backupToken.map { LeaseReference(job: jobID, segment: plan.index, token: $0) }
    }
}

/// A segment as job status lists it: where it is, and what its video came to once done.
public struct SegmentReport: Sendable, Equatable {
    public var index: Int
    public var state: SegmentState
    public var figures: SegmentFigures?

    public init(index: Int, state: SegmentState, figures: SegmentFigures? = nil) {
        self.index = index
        self.state = state
        self.figures = figures
    }
}

/// Names one attempt at one segment — the job, the segment's index in its plan, the attempt's
/// lease token, as the worker protocol names it too — so only the holder of the current token
/// can act on it.
public struct LeaseReference: Sendable, Hashable, CustomStringConvertible {
    public var job: JobID
    /// The segment's index in the job's plan.
    public var segment: Int
    public var token: LeaseToken

    public init(job: JobID, segment: Int, token: LeaseToken) {
        self.job = job
        self.segment = segment
        self.token = token
    }

    public var description: String { "job=\(job) segment=\(segment) lease=\(token)" }

    /// The segment index as the `segments.index` column holds it (`integer`).
    var index: Int32 { Int32(clamping: segment) }
}

/// A segment just leased to a worker.
public struct SegmentLease: Sendable, Equatable {
    public var segment: Segment
    public var reference: LeaseReference
    public var expiresAt: Date
}

/// A worker's result for one attempt.
public struct SegmentCompletion: Sendable, Equatable {
    public var lease: LeaseReference
    /// Where the attempt wrote its output (unique per attempt).
    public var outputPath: String
    public var checksum: SHA256Digest
    /// What its video came to, when the worker reported it.
    public var figures: SegmentFigures?

    public init(lease: LeaseReference, outputPath: String, checksum: SHA256Digest, figures: SegmentFigures? = nil) {
        self.lease = lease
        self.outputPath = outputPath
        self.checksum = checksum
        self.figures = figures
    }
}

/// Why an attempt failed, as the worker reports it.
public struct SegmentFailure: Sendable, Equatable {
    public var message: String
    /// False for deterministic failures (undecodable input) that no retry can fix.
    public var isRetryable: Bool

    public init(message: String, isRetryable: Bool) {
        self.message = message
        self.isRetryable = isRetryable
    }
}

/// A lease the reaper (or a worker's revocation) took back.
public struct ReleasedLease: Sendable, Equatable {
    public var reference: LeaseReference
    public var workerID: UUID
    public var outcome: AttemptOutcome
}

// MARK: - Workers and events

/// A worker machine, known by its CURVE public key.
public struct Worker: Sendable, Equatable, Identifiable {
    public var id: UUID
    public var publicKey: String
    public var name: String
    public var slots: Int
    public var capabilities: PostgresJSON
    public var state: WorkerState
    public var enrolledAt: Date
    public var lastSeenAt: Date?
    public var revokedAt: Date?
}

/// One line of a job's audit log.
public struct JobEvent: Sendable, Equatable {
    public var id: Int64
    public var jobID: JobID
    public var segmentID: Int64?
    public var at: Date
    /// `job_created`, `job_planning`, `segment_leased`, `segment_done`, `segment_retry`, …
    public var kind: String
    public var fromState: String?
    public var toState: String?
    public var attempt: Int?
    public var workerID: UUID?
    public var leaseToken: LeaseToken?
    public var detail: String?
}
