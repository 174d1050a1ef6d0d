import Foundation
public import SpliceConcurrency
public import SpliceCore

/// The coordinator's view of the job store: every method is one transaction (retried by the
/// client after serialization failures, deadlocks and lost connections, so each is written to be
/// safe to run twice), and everything a restarted coordinator needs to resume is in the database.
///
/// Segment attempts are fenced: claiming issues a fresh lease token, and extending, completing or
/// failing a segment only takes effect with `WHERE id = … AND lease_token = … AND state = 'leased'`.
/// A worker whose lease was taken back can therefore never overwrite the result of a later attempt.
/// See docs/store.md.
public final class JobRepository: Sendable {
    /// Retry and give-up rules for segments.
    public struct Policy: Sendable {
        /// The wait before a failed segment may be claimed again.
        public var segmentBackoff: Backoff
        /// A segment whose attempts failed on this many different workers is dead, attempts left or not.
        public var deadAfterDistinctWorkers: Int

        public init(segmentBackoff: Backoff = .segmentRetry, deadAfterDistinctWorkers: Int = 3) {
            self.segmentBackoff = segmentBackoff
            self.deadAfterDistinctWorkers = deadAfterDistinctWorkers
        }
    }

    /// NOTIFY channels the repository signals on. They only wake pollers up; the tables are the truth.
    public enum Channel {
        /// A job was created: plan it.
        public static let jobs = "splice_jobs"
        /// Segments became claimable (a plan was recorded, a lease was taken back).
        public static let segments = "splice_segments"
    }

    public let client: PostgresClient
    public let policy: Policy
    let completionBatcher: GroupCommitter<SegmentCompletion, ResultOutcome>

    public init(client: PostgresClient, policy: Policy = Policy()) {
        self.client = client
        self.policy = policy
        completionBatcher = GroupCommitter(maxBatch: 256) { [client] batch in
            try await JobRepository.writeCompletions(batch, on: client)
        }
    }

    // MARK: - Creating and planning jobs

    /// Creates a `queued` job, or returns the existing one when its idempotency key was seen before.
    public func createJob(_ submission: JobSubmission) async throws -> JobCreation {
        try await client.transaction { connection in
            let inserted = try await connection.query("""
                WITH job AS (
                    INSERT INTO jobs (idempotency_key, submission_fingerprint, source_url, output_url, settings,
                                      priority, max_attempts, reference, webhook_url, webhook_secret, submitted_by)
                    VALUES (\(submission.idempotencyKey), \(submission.fingerprint), \(submission.input),
                            \(submission.output), \(submission.settings), \(submission.priority),
                            \(submission.maxAttempts), \(submission.reference), \(submission.webhookURL),
                            \(submission.webhookSecret), \(submission.submittedBy))
                    ON CONFLICT (idempotency_key) DO NOTHING
                    RETURNING *
                ), event AS (
                    INSERT INTO job_events (job_id, kind, to_state) SELECT id, 'job_created', state FROM job
                )
                SELECT \(Job.columns) FROM job
                """)
            if let row = inserted.first {
                try await notify(Channel.jobs, on: connection)
                return JobCreation(job: try Job(row: row), created: true)
            }
            // The key exists (possibly committed a moment ago by a concurrent submit; ON CONFLICT
            // waited for it). This statement's fresh snapshot sees it.
            let existing = try await connection.query(
                "SELECT \(Job.columns) FROM jobs WHERE idempotency_key = \(submission.idempotencyKey)")
            guard let row = existing.first else {
                throw StoreError(.notFound, "job with idempotency key vanished during create")
            }
            return JobCreation(job: try Job(row: row), created: false)
        }
    }

    /// `queued → planning`. Returns the job; a job already `planning` is returned unchanged (a
    /// coordinator that restarted mid-planning plans again).
    @discardableResult
    public func startPlanning(jobID: JobID) async throws -> Job {
        try await client.transaction { connection in
            try await transition(jobID, from: [.queued], to: .planning, alreadyThere: [.planning], on: connection)
        }
    }

    /// `planning → running`: stores the plan and its segments (with their costs, which order claims
    /// within the job). Recording the same plan again is a no-op. `requiredEncoder`: the video
    /// encoder the job names, which only workers that have it may claim its segments for.
    @discardableResult
    public func recordPlan(jobID: JobID, plan: PostgresJSON, segments: [PlannedSegment],
                           requiredEncoder: String? = nil) async throws -> Job {
        guard !segments.isEmpty else {
            throw StoreError(.invalidTransition, "job \(jobID): a plan needs at least one segment", isRetryable: false)
        }
        return try await client.transaction { connection in
            guard let job = try await lockJob(jobID, on: connection) else { throw notFound(jobID) }
            // A retry after a lost COMMIT answer finds its own plan already recorded.
            if [.running, .stitching, .succeeded].contains(job.state) && job.segmentsTotal == segments.count {
                return job
            }
            guard job.state == .planning else { throw invalidTransition(job, to: .running) }
            try await connection.query("""
                INSERT INTO segments (job_id, index, range_start, range_end, range_timescale, spec, cost,
                                      priority, job_created_at, max_attempts, required_encoder)
                SELECT j.id, u.index, u.range_start, u.range_end, u.range_timescale, u.spec, u.cost,
                       j.priority, j.created_at, j.max_attempts, \(requiredEncoder)
                FROM jobs j,
                     unnest(\(segments.map(\.index)), \(segments.map(\.rangeStart)), \(segments.map(\.rangeEnd)),
                            \(segments.map(\.timescale)), \(segments.map(\.spec)), \(segments.map(\.cost)))
                         AS u(index, range_start, range_end, range_timescale, spec, cost)
                WHERE j.id = \(jobID)
                """)
            let running = try await transition(
                jobID, from: [.planning], to: .running,
                setting: ", plan = \(plan), segments_total = \(segments.count), started_at = now()",
                on: connection)
            try await notify(Channel.segments, on: connection)
            return running
        }
    }

    // MARK: - Finishing jobs

    /// `stitching → completed`, once the coordinator has written the output. Idempotent.
    @discardableResult
    public func completeJob(jobID: JobID) async throws -> Job {
        try await client.transaction { connection in
            try await transition(jobID, from: [.stitching], to: .succeeded, setting: ", finished_at = now()",
                                 alreadyThere: [.succeeded], on: connection)
        }
    }

    /// Fails an unfinished job (planning or stitching went wrong), cancelling its open segments.
    /// A job that already failed is returned unchanged.
    @discardableResult
    public func failJob(jobID: JobID, error: String) async throws -> Job {
        try await client.transaction { connection in
            try await endJob(jobID, as: .failed, reason: error, on: connection)
        }
    }

    /// Cancels an unfinished job and its open segments (leased ones too: their workers' reports will
    /// be rejected as stale). A job already cancelled is returned unchanged.
    @discardableResult
    public func cancelJob(jobID: JobID, reason: String) async throws -> Job {
        try await client.transaction { connection in
            try await endJob(jobID, as: .cancelled, reason: reason, on: connection)
        }
    }

    // MARK: - Reading (what a restarted coordinator resumes from)

    /// The job, or nil.
    public func job(id: JobID) async throws -> Job? {
        try await client.query("SELECT \(Job.columns) FROM jobs WHERE id = \(id)").first.map(Job.init(row:))
    }

    /// The job submitted with `idempotencyKey`, or nil.
    public func job(idempotencyKey: String) async throws -> Job? {
        try await client.query("SELECT \(Job.columns) FROM jobs WHERE idempotency_key = \(idempotencyKey)")
            .first.map(Job.init(row:))
    }

    /// Jobs in any of `states`, highest priority then oldest first.
    public func jobs(in states: [JobState] = JobState.unfinished, limit: Int = 10_000) async throws -> [Job] {
        try await client.query("""
            SELECT \(Job.columns) FROM jobs WHERE state = ANY(\(states))
            ORDER BY priority DESC, created_at, id LIMIT \(limit)
            """).map(Job.init(row:))
    }

    /// The ids of the jobs in any of `states`, in the order of ``jobs(in:limit:)`` — for rounds
    /// that look at most jobs only to skip them, without reading every job's plan each time.
    public func jobIDs(in states: [JobState], limit: Int) async throws -> [JobID] {
        try await client.query("""
            SELECT id FROM jobs WHERE state = ANY(\(states))
            ORDER BY priority DESC, created_at, id LIMIT \(limit)
            """).map { row throws(StoreError) in try row.decode(JobID.self, at: 0) }
    }

    /// Every segment of a job, by index.
    public func segments(ofJob jobID: JobID) async throws -> [Segment] {
        try await client.query("SELECT \(Segment.columns) FROM segments WHERE job_id = \(jobID) ORDER BY index")
            .map(Segment.init(row:))
    }

    // MARK: - Shared steps (inside a caller's transaction)

    func lockJob(_ jobID: JobID, on connection: PostgresConnection) async throws -> Job? {
        try await connection.query("SELECT \(Job.columns) FROM jobs WHERE id = \(jobID) FOR UPDATE")
            .first.map(Job.init(row:))
    }

    /// Moves a job from one of `from` to `to`, setting `setting` too (a fragment starting with a
    /// comma), and logs the event. A job already in one of `alreadyThere` is returned unchanged.
    func transition(
        _ jobID: JobID, from: [JobState], to: JobState, setting: PostgresQuery = "", detail: String? = nil,
        alreadyThere: [JobState] = [], retried: Bool = false, on connection: PostgresConnection
    ) async throws -> Job {
        let moved = try await connection.query("""
            WITH previous AS (
                SELECT id, state FROM jobs WHERE id = \(jobID) AND state = ANY(\(from)) FOR UPDATE
            ), job AS (
                UPDATE jobs j SET state = \(to), updated_at = now() \(setting)
                FROM previous WHERE j.id = previous.id AND j.state = previous.state
                RETURNING j.*, previous.state AS from_state
            ), event AS (
                INSERT INTO job_events (job_id, kind, from_state, to_state, detail)
                SELECT id, 'job_' || state, from_state, state, \(detail) FROM job
            )
            SELECT \(Job.columns) FROM job
            """)
        if let row = moved.first { return try Job(row: row) }
        guard let job = try await lockJob(jobID, on: connection) else { throw notFound(jobID) }
        if alreadyThere.contains(job.state) { return job }
        // Another transaction moved the job between this statement's snapshot and its row lock
        // (planning → running while a cancel came in): the CTE locked the new version, the UPDATE
        // still saw the old one and matched nothing. The lock is held now, so a fresh statement
        // sees the current state.
        if !retried, from.contains(job.state) {
            return try await transition(jobID, from: from, to: to, setting: setting, detail: detail,
                                        alreadyThere: alreadyThere, retried: true, on: connection)
        }
        throw invalidTransition(job, to: to)
    }

    /// Ends a job as failed or cancelled: first its open segments (segments before the job row,
    /// the lock order every write here follows), then the job.
    func endJob(_ jobID: JobID, as state: JobState, reason: String, on connection: PostgresConnection) async throws -> Job {
        try await connection.query("""
            WITH segment AS (
                UPDATE segments SET state = 'cancelled', leased_by = NULL, lease_expires_at = NULL,
                                    backup_token = NULL, backup_leased_by = NULL, backup_expires_at = NULL,
                                    finished_at = now(), updated_at = now()
                WHERE job_id = \(jobID) AND state IN ('pending', 'leased')
                RETURNING id, job_id, attempt, lease_token
            )
            INSERT INTO job_events (job_id, segment_id, kind, to_state, attempt, lease_token, detail)
            SELECT job_id, id, 'segment_cancelled', 'cancelled', attempt, lease_token, \(reason) FROM segment
            """)
        return try await transition(
            jobID, from: JobState.unfinished, to: state, setting: ", error = \(reason), finished_at = now()",
            detail: reason, alreadyThere: [state], on: connection)
    }

    func notify(_ channel: String, on connection: PostgresConnection) async throws {
        try await connection.query("SELECT pg_notify(\(channel), '')")
    }

    func notFound(_ jobID: JobID) -> StoreError {
        StoreError(.notFound, "job \(jobID) does not exist", isRetryable: false)
    }

    func invalidTransition(_ job: Job, to state: JobState) -> StoreError {
        StoreError(.invalidTransition, "job \(job.id) is \(job.state.rawValue) and cannot become \(state.rawValue)", isRetryable: false)
    }
}
