public import Foundation
public import SpliceCore

/// Where a page of jobs (newest first) ends: the last job's submission time, in microseconds
/// since the Unix epoch as the store keeps it, and its id. The next page starts after it, so
/// jobs submitted meanwhile shift nothing.
public struct JobPageCursor: Sendable, Hashable {
    public var createdMicroseconds: Int64
    public var id: JobID

    public init(createdMicroseconds: Int64, id: JobID) {
        self.createdMicroseconds = createdMicroseconds
        self.id = id
    }
}

/// A page of jobs with their progress, and the cursor of the next page (nil: the last page).
public struct JobPage: Sendable, Equatable {
    public var jobs: [(job: Job, progress: JobProgress)]
    public var next: JobPageCursor?

    public static func == (lhs: JobPage, rhs: JobPage) -> Bool {
        lhs.next == rhs.next && lhs.jobs.map(\.job) == rhs.jobs.map(\.job)
            && lhs.jobs.map(\.progress) == rhs.jobs.map(\.progress)
    }
}

/// Everything a job's status says, read in one statement: the job, its progress by cost and its
/// backups, every segment with its figures, and why it waits (a running job whose last segment
/// was handed back).
public struct JobDetail: Sendable, Equatable {
    public var job: Job
    public var progress: JobProgress
    public var segments: [SegmentReport]
    public var waiting: String?
}

/// What an event stream watches of a job: its state and its progress, read for many jobs at once.
public struct JobStreamState: Sendable, Equatable {
    public var state: JobState
    public var segmentsDone: Int
    public var segmentsTotal: Int
    public var costDone: Int64
    public var costTotal: Int64
}

/// One state change from a job's audit log (`job_created`, `job_running`…), as an event stream
/// replays it.
public struct JobStateEvent: Sendable, Equatable {
    /// The audit log's id: an event stream's event id.
    public var id: Int64
    public var at: Date
    public var from: JobState?
    public var to: JobState
    public var detail: String?
}

extension Job {
    /// ``columns`` without the plan (which can be large): what pages and job status read.
    static let columnsWithoutPlan: PostgresQuery = """
        id, idempotency_key, submission_fingerprint, source_url, output_url, settings, NULL::jsonb AS plan, state, \
        priority, max_attempts, segments_total, segments_done, error, created_at, updated_at, started_at, \
        finished_at, reference, webhook_url, webhook_secret IS NOT NULL AS own_webhook_secret, submitted_by
        """
}

extension JobRepository {
    /// Jobs newest first (by submission time, then id), in any of `states` (nil: all), with
    /// `reference` when given, after `cursor`, at most `limit`.
    public func jobPage(states: [JobState]?, reference: String?, after cursor: JobPageCursor?, limit: Int)
        async throws -> JobPage
    {
        var filter: PostgresQuery = "TRUE"
        if let states { filter = "\(filter) AND s.state = ANY(\(states))" }
        if let reference { filter = "\(filter) AND s.reference = \(reference)" }
        if let cursor {
            filter = """
                \(filter) AND (s.created_at, s.id) < (timestamptz 'epoch' + \(cursor.createdMicroseconds) \
                * interval '1 microsecond', \(cursor.id))
                """
        }
        let rows = try await client.query("""
            SELECT \(Job.columnsWithoutPlan), \(JobProgress.columns),
                   (extract(epoch FROM s.created_at) * 1000000)::bigint AS created_us
            FROM jobs s WHERE \(filter)
            ORDER BY s.created_at DESC, s.id DESC LIMIT \(limit + 1)
            """)
        var jobs: [(job: Job, progress: JobProgress)] = []
        var next: JobPageCursor?
        for (index, row) in rows.enumerated() {
            guard index < limit else { break }
            let job = try Job(row: row)
            jobs.append((job, try JobProgress(row: row)))
            if index == limit - 1 && rows.count > limit {
                next = JobPageCursor(createdMicroseconds: try row.decode(column: "created_us"), id: job.id)
            }
        }
        return JobPage(jobs: jobs, next: next)
    }

    /// The job with its progress, segments and waiting reason; nil when there is no such job.
    public func jobDetail(id: JobID) async throws -> JobDetail? {
        let rows = try await client.query("""
            SELECT \(Job.columnsWithoutPlan), g.*,
                   (SELECT count(*) FROM job_events e WHERE e.job_id = s.id AND e.kind = 'segment_backup_started')
                       AS backups_started,
                   (SELECT count(*) FROM job_events e WHERE e.job_id = s.id AND e.kind = 'segment_backup_won')
                       AS backups_won,
                   CASE WHEN s.state = 'running' THEN
                       (SELECT CASE WHEN e.kind = 'segment_returned' THEN e.detail END FROM job_events e
                        WHERE e.job_id = s.id AND e.kind IN ('segment_returned', 'segment_leased', 'segment_done')
                        ORDER BY e.id DESC LIMIT 1)
                   END AS waiting
            FROM jobs s LEFT JOIN LATERAL (
                SELECT coalesce(sum(cost), 0)::bigint AS cost_total,
                       coalesce(sum(cost) FILTER (WHERE state = 'done'), 0)::bigint AS cost_done,
                       array_agg(index ORDER BY index) AS segment_index,
                       array_agg(state ORDER BY index) AS segment_state,
                       array_agg(video_bytes ORDER BY index) AS segment_bytes,
                       array_agg(video_bits_per_second ORDER BY index) AS segment_rate,
                       array_agg(mean_qp ORDER BY index) AS segment_qp
                FROM segments WHERE job_id = s.id
            ) g ON TRUE
            WHERE s.id = \(id)
            """)
        guard let row = rows.first else { return nil }
        let indexes = try row.decode([Int32]?.self, column: "segment_index") ?? []
        let states = try row.decode([SegmentState]?.self, column: "segment_state") ?? []
        let bytes = try row.decode([Int64?]?.self, column: "segment_bytes") ?? []
        let rates = try row.decode([Int64?]?.self, column: "segment_rate") ?? []
        let qps = try row.decode([Double?]?.self, column: "segment_qp") ?? []
        guard states.count == indexes.count, bytes.count == indexes.count, rates.count == indexes.count,
              qps.count == indexes.count else {
            throw StoreError(.decodingFailed, "job \(id): the segment lists differ in length")
        }
        let segments = indexes.indices.map { at in
            SegmentReport(index: Int(indexes[at]), state: states[at], figures: bytes[at].map {
                SegmentFigures(videoBytes: $0, videoBitsPerSecond: rates[at], meanQP: qps[at])
            })
        }
        return JobDetail(job: try Job(row: row), progress: try JobProgress(row: row), segments: segments,
                         waiting: try row.decode(column: "waiting"))
    }

    /// The state and progress of each of `ids` that exists.
    public func jobStreamStates(_ ids: [JobID]) async throws -> [JobID: JobStreamState] {
        guard !ids.isEmpty else { return [:] }
        var states: [JobID: JobStreamState] = [:]
        for row in try await client.query("""
            SELECT s.id, s.state, s.segments_done, s.segments_total, g.cost_done, g.cost_total
            FROM jobs s LEFT JOIN LATERAL (
                SELECT coalesce(sum(cost) FILTER (WHERE state = 'done'), 0)::bigint AS cost_done,
                       coalesce(sum(cost), 0)::bigint AS cost_total
                FROM segments WHERE job_id = s.id
            ) g ON TRUE
            WHERE s.id = ANY(\(ids))
            """) {
            states[try row.decode(JobID.self, column: "id")] = JobStreamState(
                state: try row.decode(column: "state"), segmentsDone: try row.decode(column: "segments_done"),
                segmentsTotal: try row.decode(column: "segments_total"), costDone: try row.decode(column: "cost_done"),
                costTotal: try row.decode(column: "cost_total"))
        }
        return states
    }

    /// The job's state changes after audit-log id `after`, oldest first.
    public func stateEvents(ofJob job: JobID, after: Int64) async throws -> [JobStateEvent] {
        try await client.query("""
            SELECT id, at, from_state, to_state, detail FROM job_events
            WHERE job_id = \(job) AND id > \(after) AND kind LIKE 'job\\_%' AND to_state IS NOT NULL
            ORDER BY id
            """).compactMap { row throws(StoreError) -> JobStateEvent? in
            guard let to = JobState(rawValue: try row.decode(String.self, column: "to_state")) else { return nil }
            return JobStateEvent(
                id: try row.decode(column: "id"), at: try row.decode(column: "at"),
                from: try row.decode(String?.self, column: "from_state").flatMap(JobState.init(rawValue:)), to: to,
                detail: try row.decode(column: "detail"))
        }
    }
}
