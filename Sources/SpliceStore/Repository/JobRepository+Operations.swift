public import Foundation
public import SpliceCore

// Read-only figures for operators: the metrics endpoint's gauges, the status page, readiness.
// Nothing here writes; every query is one statement, cheap enough to run at every scrape.

extension JobRepository {
    /// How much work the store holds, by job state and by queue priority.
    public struct Overview: Sendable, Equatable {
        /// Jobs in each state (every state present, 0 included).
        public var jobs: [JobState: Int]
        /// Segments waiting to be leased (`pending`, in backoff or not), by their job's priority.
        public var pendingSegments: [Int: Int]
        /// Segments leased to a worker now.
        public var leasedSegments: Int
    }

    /// One row of the status page: a job without its plan and settings (which can be large).
    public struct JobSummary: Sendable, Equatable, Identifiable {
        public var id: UUID
        public var input: String
        public var output: String
        public var state: JobState
        public var priority: Int
        public var segmentsTotal: Int
        public var segmentsDone: Int
        /// Attempts that ended without a result: failed, expired, released, or refused by a worker.
        /// Backup attempts that lost or ended are not among them.
        public var failedAttempts: Int
        /// Costs and backup attempts.
        public var progress: JobProgress
        public var error: String?
        /// While running: the reason its last segment was handed back, when nothing happened since.
        public var waiting: String?
        public var createdAt: Date
        public var startedAt: Date?
        public var finishedAt: Date?
        /// The measured segments' luma PSNR (of their frames' mean squared error) and mean luma
        /// SSIM, weighted by frames; nil when no segment was measured (`--verify`, quality targets).
        public var psnrY: Double?
        public var ssimY: Double?

        public init(id: UUID, input: String, output: String, state: JobState, priority: Int, segmentsTotal: Int,
                    segmentsDone: Int, failedAttempts: Int, progress: JobProgress = JobProgress(), error: String?,
                    waiting: String?, createdAt: Date, startedAt: Date?, finishedAt: Date?, psnrY: Double? = nil,
                    ssimY: Double? = nil) {
            self.psnrY = psnrY
            self.ssimY = ssimY
            self.id = id
            self.input = input
            self.output = output
            self.state = state
            self.priority = priority
            self.segmentsTotal = segmentsTotal
            self.segmentsDone = segmentsDone
            self.failedAttempts = failedAttempts
            self.progress = progress
            self.error = error
            self.waiting = waiting
            self.createdAt = createdAt
            self.startedAt = startedAt
            self.finishedAt = finishedAt
        }
    }

    /// Job counts by state and queued segments by priority (two index-backed counts).
    public func overview() async throws -> Overview {
        var jobs = Dictionary(uniqueKeysWithValues: JobState.allCases.map { ($0, 0) })
        for row in try await client.query("SELECT state, count(*) FROM jobs GROUP BY state") {
            jobs[try row.decode(JobState.self, at: 0)] = Int(try row.decode(Int64.self, at: 1))
        }
        var pending: [Int: Int] = [:]
        var leased = 0
        for row in try await client.query("""
            SELECT state, priority, count(*) FROM segments WHERE state IN ('pending', 'leased') GROUP BY state, priority
            """) {
            let count = Int(try row.decode(Int64.self, at: 2))
            if try row.decode(SegmentState.self, at: 0) == .pending {
                pending[Int(try row.decode(Int32.self, at: 1)), default: 0] += count
            } else {
                leased += count
            }
        }
        return Overview(jobs: jobs, pendingSegments: pending, leasedSegments: leased)
    }

    /// The unfinished jobs (newest first, up to `unfinished`) and the most recently finished ones
    /// (up to `finished`), with their failed attempts and backup attempts counted from the audit log.
    public func jobSummaries(unfinished: Int = 200, finished: Int = 20) async throws -> [JobSummary] {
        try await client.query("""
            WITH shown AS (
                (SELECT id, source_url, output_url, state, priority, segments_total, segments_done, error,
                        created_at, started_at, finished_at
                 FROM jobs WHERE finished_at IS NULL ORDER BY created_at DESC LIMIT \(unfinished))
                UNION ALL
                (SELECT id, source_url, output_url, state, priority, segments_total, segments_done, error,
                        created_at, started_at, finished_at
                 FROM jobs WHERE finished_at IS NOT NULL ORDER BY finished_at DESC LIMIT \(finished))
            )
            SELECT s.*,
                   (SELECT count(*) FROM job_events e WHERE e.job_id = s.id AND e.kind IN
                        ('segment_failed', 'segment_lease_expired', 'segment_lease_released', 'segment_returned'))
                       AS failed_attempts,
                   \(JobProgress.columns),
                   CASE WHEN s.state = 'running' THEN
                       (SELECT CASE WHEN e.kind = 'segment_returned' THEN e.detail END FROM job_events e
                        WHERE e.job_id = s.id AND e.kind IN ('segment_returned', 'segment_leased', 'segment_done')
                        ORDER BY e.id DESC LIMIT 1)
                   END AS waiting,
                   -- Measured segments as one stretch: each PSNR back to its mean squared error, by frames.
                   -10 * log(q.error / q.frames) AS psnr_y, q.ssim / q.frames AS ssim_y
            FROM shown s
            LEFT JOIN LATERAL (
                SELECT sum((m.quality->>'frames')::float8) AS frames,
                       sum((m.quality->>'frames')::float8 * power(10, -(m.quality->>'psnrY')::float8 / 10)) AS error,
                       sum((m.quality->>'frames')::float8 * (m.quality->>'ssimY')::float8) AS ssim
                FROM segments m WHERE m.job_id = s.id AND m.quality IS NOT NULL
            ) q ON q.frames > 0
            ORDER BY s.finished_at IS NOT NULL, coalesce(s.finished_at, s.created_at) DESC
            """).map { row throws(StoreError) in
            JobSummary(
                id: try row.decode(column: "id"), input: try row.decode(column: "source_url"),
                output: try row.decode(column: "output_url"), state: try row.decode(column: "state"),
                priority: Int(try row.decode(Int32.self, column: "priority")),
                segmentsTotal: Int(try row.decode(Int32.self, column: "segments_total")),
                segmentsDone: Int(try row.decode(Int32.self, column: "segments_done")),
                failedAttempts: Int(try row.decode(Int64.self, column: "failed_attempts")),
                progress: try JobProgress(row: row),
                error: try row.decode(column: "error"), waiting: try row.decode(column: "waiting"),
                createdAt: try row.decode(column: "created_at"), startedAt: try row.decode(column: "started_at"),
                finishedAt: try row.decode(column: "finished_at"), psnrY: try row.decode(column: "psnr_y"),
                ssimY: try row.decode(column: "ssim_y"))
        }
    }

    /// The costs and backup attempts of these jobs (jobs that do not exist are left out).
    public func progress(ofJobs ids: [JobID]) async throws -> [JobID: JobProgress] {
        guard !ids.isEmpty else { return [:] }
        var progress: [JobID: JobProgress] = [:]
        for row in try await client.query("SELECT s.id, \(JobProgress.columns) FROM jobs s WHERE s.id = ANY(\(ids))") {
            progress[try row.decode(JobID.self, at: 0)] = try JobProgress(row: row)
        }
        return progress
    }

    /// Every segment of a job by index, with its state and figures: job status's list, without
    /// the segments' specs (one statement on the `(job_id, index)` key).
    public func segmentReports(ofJob jobID: JobID) async throws -> [SegmentReport] {
        try await client.query("""
            SELECT index, state, \(SegmentFigures.columns) FROM segments WHERE job_id = \(jobID) ORDER BY index
            """).map { row throws(StoreError) in
                SegmentReport(index: try row.decode(column: "index"), state: try row.decode(column: "state"),
                              figures: try SegmentFigures(row: row))
            }
    }

    /// `SELECT 1`: the database answers.
    public func ping() async throws {
        _ = try await client.query("SELECT 1")
    }
}

extension ConnectionConfiguration {
    /// The same server for a read-only side channel (the operators' endpoint): its own
    /// `application_name`, and every statement cut off by the server after `statementTimeout`, so a
    /// scrape during trouble never holds a connection for long.
    public func forOperations(statementTimeout: Duration) -> ConnectionConfiguration {
        let milliseconds = max(1, Int(statementTimeout.components.seconds * 1000
            + statementTimeout.components.attoseconds / 1_000_000_000_000_000))
        let own = value(of: "options").map { $0 + " " } ?? ""
        return setting("application_name", "splice-operations")
            .setting("options", own + "-c statement_timeout=\(milliseconds) -c default_transaction_read_only=on")
            .setting("connect_timeout", value(of: "connect_timeout") ?? "5")
    }
}

/// A job's work by cost — what its progress is weighted by — and its backup attempts, read from
/// its segments and its audit log.
public struct JobProgress: Sendable, Equatable {
    /// The summed costs of its segments, and of those done (0 when the plan has no costs).
    public var costTotal: Int64
    public var costDone: Int64
    /// Backup attempts started for stragglers, and those that finished first.
    public var backupsStarted: Int
    public var backupsWon: Int

    public init(costTotal: Int64 = 0, costDone: Int64 = 0, backupsStarted: Int = 0, backupsWon: Int = 0) {
        self.costTotal = costTotal
        self.costDone = costDone
        self.backupsStarted = backupsStarted
        self.backupsWon = backupsWon
    }

    /// Its columns, for a query over `jobs` aliased `s`.
    static let columns: PostgresQuery = """
        (SELECT coalesce(sum(g.cost), 0)::bigint FROM segments g WHERE g.job_id = s.id) AS cost_total,
        (SELECT coalesce(sum(g.cost), 0)::bigint FROM segments g WHERE g.job_id = s.id AND g.state = 'done')
            AS cost_done,
        (SELECT count(*) FROM job_events e WHERE e.job_id = s.id AND e.kind = 'segment_backup_started')
            AS backups_started,
        (SELECT count(*) FROM job_events e WHERE e.job_id = s.id AND e.kind = 'segment_backup_won') AS backups_won
        """

    init(row: PostgresRow) throws(StoreError) {
        self.init(
            costTotal: try row.decode(column: "cost_total"), costDone: try row.decode(column: "cost_done"),
            backupsStarted: Int(try row.decode(Int64.self, column: "backups_started")),
            backupsWon: Int(try row.decode(Int64.self, column: "backups_won")))
    }
}
