public import Foundation
import SpliceConcurrency
public import SpliceCore

extension JobRepository {
    // MARK: - Claiming

    /// Leases up to `limit` claimable segments to a worker: highest job priority first, then oldest
    /// job, then within the job the most expensive segment first (plan order among equal costs). Rows other claimers hold are skipped (`FOR UPDATE SKIP LOCKED`), so
    /// concurrent claimers never wait on or receive the same attempt. Every lease gets a fresh token.
    /// A revoked or unknown worker gets nothing.
    public func claimSegments(for workerID: UUID, limit: Int, leaseDuration: Duration) async throws -> [SegmentLease] {
        // One worker's claim is the batched claim with one demand (JobRepository+BatchClaims.swift).
        try await claimSegments(forWorkers: [ClaimDemand(workerID: workerID, limit: limit)],
                                leaseDuration: leaseDuration)[workerID] ?? []
    }

    // MARK: - Extending

    /// Extends several leases in one statement (a worker's heartbeat lists all of its segments).
    /// Leases missing from the answer are no longer current.
    public func extendLeases(_ leases: [LeaseReference], by duration: Duration) async throws -> [LeaseReference: Date] {
        guard !leases.isEmpty else { return [:] }
        // Rows are locked in id order first, the order completions lock them in: an extension and
        // a completion of the same segments (a PROGRESS just before its COMPLETE) then queue
        // instead of deadlocking (which Postgres only breaks after deadlock_timeout, 1 s).
        // The rows are found by their unique (job, index) key; `state = 'leased'` is checked by
        // the UPDATE only. In the locking scan it lets the planner pick the partial index on leased
        // segments, which under load holds thousands of dead entries of segments no longer leased
        // (bitmap scans never mark them dead), and every batch would walk them all.
        // A segment's backup attempt (JobRepository+Backups.swift) has its own token and expiry;
        // both of a segment's attempts may be in one batch, so the tokens are gathered per segment
        // (an UPDATE applies one joined row per target row), and each column is extended when its
        // token is among them — whichever column holds it by the time the row is locked.
        let rows = try await client.query("""
            WITH target AS (
                SELECT s.id, lease.token
                FROM segments s
                JOIN unnest(\(leases.map(\.job)), \(leases.map(\.index)), \(leases.map(\.token)))
                    AS lease(job_id, index, token)
                    ON s.job_id = lease.job_id AND s.index = lease.index
                       AND (s.lease_token = lease.token OR s.backup_token = lease.token)
                ORDER BY s.id
                FOR UPDATE OF s
            ), attempts AS (
                SELECT id, array_agg(token) AS tokens FROM target GROUP BY id
            )
            UPDATE segments s
            SET lease_expires_at = CASE WHEN s.lease_token = ANY(attempts.tokens)
                                        THEN now() + \(Int64(duration.wholeMilliseconds)) * interval '1 millisecond'
                                        ELSE s.lease_expires_at END,
                heartbeat_at = CASE WHEN s.lease_token = ANY(attempts.tokens) THEN now() ELSE s.heartbeat_at END,
                backup_expires_at = CASE WHEN s.backup_token = ANY(attempts.tokens)
                                         THEN now() + \(Int64(duration.wholeMilliseconds)) * interval '1 millisecond'
                                         ELSE s.backup_expires_at END,
                updated_at = now()
            FROM attempts
            WHERE s.id = attempts.id AND s.state = 'leased'
                AND (s.lease_token = ANY(attempts.tokens) OR s.backup_token = ANY(attempts.tokens))
            RETURNING s.job_id, s.index,
                      CASE WHEN s.lease_token = ANY(attempts.tokens) THEN s.lease_token END, s.lease_expires_at,
                      CASE WHEN s.backup_token = ANY(attempts.tokens) THEN s.backup_token END, s.backup_expires_at
            """)
        var extended: [LeaseReference: Date] = [:]
        for row in rows {
            let job: JobID = try row.decode(at: 0)
            let index: Int = try row.decode(at: 1)
            if let token = try row.decode(LeaseToken?.self, at: 2) {
                extended[LeaseReference(job: job, segment: index, token: token)] = try row.decode(Date.self, at: 3)
            }
            if let token = try row.decode(LeaseToken?.self, at: 4) {
                extended[LeaseReference(job: job, segment: index, token: token)] = try row.decode(Date.self, at: 5)
            }
        }
        return extended
    }

    // MARK: - Completing

    /// Records a segment's result, only for the current lease. The job's counter moves in the same
    /// transaction, and the last segment moves the job to `stitching`. Reporting the same attempt
    /// again answers `.alreadyCompleted` and changes nothing.
    ///
    /// Concurrent calls are group-committed: while one batch is being written, new completions
    /// queue and go together in the next statement, so many completions share one commit. The
    /// result's `figures`, when the worker reported them, are kept with the segment.
    public func completeSegment(_ lease: LeaseReference, outputPath: String, checksum: SHA256Digest,
                                figures: SegmentFigures? = nil) async throws -> ResultOutcome {
        try await completionBatcher.submit(SegmentCompletion(lease: lease, outputPath: outputPath, checksum: checksum,
                                                             figures: figures))
    }

    /// Records several results in one transaction; answers in the same order (the group
    /// committer's write, and the tests').
    package static func writeCompletions(_ completions: [SegmentCompletion], on client: PostgresClient) async throws
        -> [ResultOutcome] {
        guard !completions.isEmpty else { return [] }
        // Found by their (job, index) key, the state checked by the UPDATE (see `extendLeases`).
        // The figures are three more columns of the same unnest (NULL where a result has none).
        let figures = completions.map(\.figures)
        let rows = try await client.query("""
            WITH input AS (
                SELECT * FROM unnest(\(completions.map(\.lease.job)), \(completions.map(\.lease.index)),
                                     \(completions.map(\.lease.token)), \(completions.map(\.outputPath)),
                                     \(completions.map(\.checksum)), \(figures.map { $0?.videoBytes }),
                                     \(figures.map { $0?.videoBitsPerSecond }), \(figures.map { $0?.meanQP }),
                                     \(figures.map { $0?.crf }), \(figures.map { $0?.encodes }),
                                     \(try figures.map { try $0?.quality.map { try PostgresJSON(encoding: $0) } }))
                    WITH ORDINALITY AS input(job_id, index, token, output_url, checksum, video_bytes,
                                             video_bits_per_second, mean_qp, crf, encodes, quality, n)
            ), reporting AS (
                -- Which of the segment's attempts reports (the row as locked, before the update).
                SELECT s.id, input.token, input.output_url, input.checksum, input.video_bytes,
                       input.video_bits_per_second, input.mean_qp, input.crf, input.encodes, input.quality,
                       s.backup_token IS NOT NULL AS had_backup,
                       s.backup_token IS NOT DISTINCT FROM input.token AS by_backup,
                       CASE WHEN s.backup_token = input.token THEN s.backup_leased_by ELSE s.leased_by END AS worker_id
                FROM segments s
                JOIN input ON s.job_id = input.job_id AND s.index = input.index
                              AND (s.lease_token = input.token OR s.backup_token = input.token)
                ORDER BY s.id
                FOR UPDATE OF s
            ), segment AS (
                -- The first attempt to report wins: its token becomes the segment's (so a resend
                -- is recognised), and the other attempt, if any, is over (docs/store.md, Backup attempts).
                UPDATE segments s
                SET state = 'done', output_url = reporting.output_url, checksum = reporting.checksum, finished_at = now(),
                    video_bytes = reporting.video_bytes, video_bits_per_second = reporting.video_bits_per_second,
                    mean_qp = reporting.mean_qp, crf = reporting.crf, encodes = reporting.encodes,
                    quality = reporting.quality, updated_at = now(), lease_token = reporting.token, leased_by = NULL,
                    lease_expires_at = NULL, backup_token = NULL, backup_leased_by = NULL, backup_expires_at = NULL
                FROM reporting
                WHERE s.id = reporting.id AND s.state = 'leased'
                    AND (s.lease_token = reporting.token OR s.backup_token = reporting.token)
                RETURNING s.id, s.job_id, s.index, s.attempt, s.lease_token, reporting.worker_id, reporting.had_backup,
                          reporting.by_backup
            ), counted AS (
                SELECT job_id, count(*) AS done FROM segment GROUP BY job_id
            ), job AS (
                UPDATE jobs j
                SET segments_done = j.segments_done + counted.done, updated_at = now(),
                    state = CASE WHEN j.segments_done + counted.done = j.segments_total THEN 'stitching'
                                 ELSE j.state END
                FROM counted WHERE j.id = counted.job_id AND j.state = 'running'
                RETURNING j.id, j.state
            ), event AS (
                INSERT INTO job_events (job_id, segment_id, kind, from_state, to_state, attempt, worker_id, lease_token)
                SELECT job_id, id, 'segment_done', 'leased', 'done', attempt, worker_id, lease_token FROM segment
                UNION ALL
                SELECT job_id, id, CASE WHEN by_backup THEN 'segment_backup_won' ELSE 'segment_primary_won' END,
                       'leased', 'done', attempt, worker_id, lease_token
                FROM segment WHERE had_backup
                UNION ALL
                SELECT id, NULL, 'job_stitching', 'running', 'stitching', NULL, NULL, NULL
                FROM job WHERE state = 'stitching'
            )
            SELECT input.n, earlier.job_id,
                   EXISTS (SELECT 1 FROM segment WHERE segment.job_id = input.job_id AND segment.index = input.index
                                                       AND segment.lease_token = input.token) AS completed,
                   (SELECT state FROM job WHERE job.id = earlier.job_id) AS job_state,
                   earlier.state AS earlier_state, earlier.lease_token = input.token AS same_token
            FROM input LEFT JOIN segments earlier ON earlier.job_id = input.job_id AND earlier.index = input.index
            ORDER BY input.n
            """)
        // The statement's snapshot predates its own writes: `earlier_*` is the state before this batch.
        var outcomes: [ResultOutcome] = []
        var counted: Set<LeaseReference> = []
        var lastOfJob: [JobID: Int] = [:]
        for (offset, row) in rows.enumerated() {
            let reference = completions[offset].lease
            if try row.decode(Bool.self, column: "completed"), counted.insert(reference).inserted {
                outcomes.append(.completed(jobReadyToStitch: false))
                if try row.decode(JobState?.self, column: "job_state") == .stitching,
                   let jobID = try row.decode(JobID?.self, column: "job_id") {
                    lastOfJob[jobID] = offset
                }
                continue
            }
            let earlierState = try row.decode(SegmentState?.self, column: "earlier_state")
            let sameToken = try row.decode(Bool?.self, column: "same_token") == true
            if counted.contains(reference) || (earlierState == .done && sameToken) {
                outcomes.append(.alreadyCompleted)
            } else {
                outcomes.append(.staleLease)
            }
        }
        // Exactly one caller learns that the job is ready to stitch.
        for offset in lastOfJob.values { outcomes[offset] = .completed(jobReadyToStitch: true) }
        return outcomes
    }

    // MARK: - Failing, reaping, releasing

    /// Records a failed attempt, only for the current lease. A retryable failure with attempts left
    /// puts the segment back with backoff; a permanent one, the last attempt, or failures on
    /// `deadAfterDistinctWorkers` different workers end the segment (`failed` / `dead`) and fail its job.
    /// A retryable failure while a backup runs hands the segment to the backup instead; the failure
    /// of a backup only ends the backup.
    public func failSegment(_ lease: LeaseReference, failure: SegmentFailure) async throws -> ResultOutcome {
        try await client.transaction { connection in
            if try await endBackup(lease, reason: failure.message, on: connection) { return .recorded(.backupEnded) }
            let locked = try await lockLeases(
                where: """
                    job_id = \(lease.job) AND index = \(lease.segment) AND lease_token = \(lease.token) \
                    AND state = 'leased'
                    """,
                limit: 1, on: connection)
            guard let segment = locked.first else { return .staleLease }
            let outcome = try await endAttempt(segment, failure: failure, kind: "segment_failed", on: connection)
            return outcome.map(ResultOutcome.recorded) ?? .staleLease
        }
    }

    /// Hands a leased segment back without spending the attempt, only for the current lease: the
    /// attempt failed for a reason that is not the segment's (the worker's set-up, a worker that
    /// was leaving, an assignment that never reached it). The segment is claimable again at once
    /// and the worker is not counted among those it failed on; the event (`segment_returned`)
    /// keeps the reason, which `waitingReason(ofJob:)` shows while nothing else has happened.
    /// With a backup running, the backup carries on as the segment's attempt; handing back a
    /// backup only ends the backup.
    public func returnSegment(_ lease: LeaseReference, reason: String) async throws -> ResultOutcome {
        try await client.transaction { connection in
            if try await endBackup(lease, reason: reason, on: connection) { return .recorded(.backupEnded) }
            // With a backup running, the backup carries on as the segment's attempt.
            let rows = try await connection.query("""
                WITH target AS (
                    SELECT id, leased_by, backup_token IS NOT NULL AS backed_up FROM segments
                    WHERE job_id = \(lease.job) AND index = \(lease.segment) AND lease_token = \(lease.token)
                        AND state = 'leased'
                    FOR UPDATE
                ), segment AS (
                    UPDATE segments s
                    SET state = CASE WHEN target.backed_up THEN 'leased' ELSE 'pending' END,
                        attempt = CASE WHEN target.backed_up THEN s.attempt ELSE s.attempt - 1 END,
                        lease_token = coalesce(s.backup_token, s.lease_token), leased_by = s.backup_leased_by,
                        lease_expires_at = s.backup_expires_at, backup_token = NULL, backup_leased_by = NULL,
                        backup_expires_at = NULL, heartbeat_at = CASE WHEN target.backed_up THEN now() ELSE s.heartbeat_at END,
                        last_error = \(reason), next_attempt_at = now(), updated_at = now()
                    FROM target
                    WHERE s.id = target.id AND s.lease_token = \(lease.token) AND s.state = 'leased'
                    RETURNING s.id, s.job_id, s.attempt, s.state, s.next_attempt_at, target.leased_by AS worker_id,
                              target.backed_up
                ), event AS (
                    INSERT INTO job_events (job_id, segment_id, kind, from_state, to_state, attempt, worker_id,
                                            lease_token, detail)
                    SELECT job_id, id, 'segment_returned', 'leased', state,
                           CASE WHEN backed_up THEN attempt ELSE attempt + 1 END, worker_id, \(lease.token), \(reason)
                    FROM segment
                ), wake AS (
                    SELECT pg_notify(\(Channel.segments), '') FROM segment WHERE NOT backed_up
                )
                SELECT next_attempt_at, backed_up, (SELECT count(*) FROM wake) FROM segment
                """)
            guard let row = rows.first else { return .staleLease }
            if try row.decode(Bool.self, at: 1) { return .recorded(.carriedOnByBackup) }
            return .recorded(.willRetry(at: try row.decode(Date.self, at: 0)))
        }
    }

    /// Why a job makes no progress: no online worker offers the encoder it names; or the newest
    /// thing that happened to its segments is a hand-back (`returnSegment`): the reason of that
    /// refusal. Nil once a segment was leased or finished since, and for jobs whose segments were
    /// never refused.
    public func waitingReason(ofJob jobID: JobID) async throws -> String? {
        // A job that names an encoder no online worker offers waits for one that does.
        let missing = try await client.query("""
            SELECT s.required_encoder FROM segments s
            WHERE s.job_id = \(jobID) AND s.state = 'pending' AND s.required_encoder IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM workers w
                                WHERE w.state = 'online' AND w.capabilities->'encoders' ? s.required_encoder)
            LIMIT 1
            """)
        if let row = missing.first {
            let encoder = try row.decode(String.self, at: 0)
            return "no online worker offers the \(encoder) encoder the job names; start one whose FFmpeg has it "
                + "(and whose --encoders, if given, lists it), or cancel the job"
        }
        let rows = try await client.query("""
            SELECT kind, detail FROM job_events
            WHERE job_id = \(jobID) AND kind IN ('segment_returned', 'segment_leased', 'segment_done')
            ORDER BY id DESC LIMIT 1
            """)
        guard let row = rows.first, try row.decode(String.self, at: 0) == "segment_returned" else { return nil }
        return try row.decode(String?.self, at: 1)
    }

    /// Releases leases that no live session holds (`held`, every token the coordinator's sessions
    /// hold or are committing) and that nobody has extended for `idle`: claimed by a coordinator
    /// that stopped before its ASSIGN went out, or held by a worker that did not come back after
    /// a coordinator restart. Fenced like the reaper; a retryable failure of the attempt.
    @discardableResult
    public func releaseOrphanedLeases(held: Set<LeaseToken>, idle: Duration) async throws -> [ReleasedLease] {
        try await releaseLeases(
            where: """
                state = 'leased' AND heartbeat_at < now() - \(Int64(idle.wholeMilliseconds)) * interval '1 millisecond'
                AND lease_token <> ALL(\(Array(held)))
                """,
            failure: SegmentFailure(message: "lease orphaned: no worker holds it", isRetryable: true),
            kind: "segment_lease_released", limit: 1000)
    }

    /// Takes back leases that expired (their worker stopped extending them). The reaper's
    /// predicate is repeated inside each UPDATE, so a completion that committed first always wins.
    /// Expired backup attempts end too (`.backupEnded`).
    @discardableResult
    public func reapExpiredLeases(limit: Int = 1000) async throws -> [ReleasedLease] {
        try await releaseLeases(where: "state = 'leased' AND lease_expires_at < now()",
                                failure: SegmentFailure(message: "lease expired: the worker stopped reporting",
                                                        isRetryable: true),
                                kind: "segment_lease_expired", limit: limit, backups: "backup_expires_at < now()")
    }

    /// Takes back every lease a worker holds at once (it disconnected, was revoked, or a send to it
    /// failed), and ends the backup attempts it runs.
    @discardableResult
    public func releaseLeases(ofWorker workerID: UUID, reason: String) async throws -> [ReleasedLease] {
        try await releaseLeases(where: "state = 'leased' AND leased_by = \(workerID)",
                                failure: SegmentFailure(message: reason, isRetryable: true),
                                kind: "segment_lease_released", limit: 100_000,
                                backups: "backup_leased_by = \(workerID)")
    }

    private func releaseLeases(where predicate: PostgresQuery, failure: SegmentFailure, kind: String,
                               limit: Int, backups: PostgresQuery? = nil) async throws -> [ReleasedLease] {
        try await client.transaction { connection in
            try await releaseLeases(where: predicate, failure: failure, kind: kind, limit: limit, backups: backups,
                                    on: connection)
        }
    }

    /// Ends the leased attempts matching `predicate` with `failure`, then the backup attempts
    /// matching `backups` (when given) without counting anything against their segments.
    func releaseLeases(where predicate: PostgresQuery, failure: SegmentFailure, kind: String, limit: Int,
                       backups: PostgresQuery? = nil, on connection: PostgresConnection) async throws -> [ReleasedLease] {
        var released: [ReleasedLease] = []
        if let backups {
            released += try await endBackups(where: backups, reason: failure.message, limit: limit, on: connection)
        }
        for segment in try await lockLeases(where: predicate, limit: limit, on: connection) {
            guard let reference = segment.lease, let workerID = segment.leasedBy,
                  let outcome = try await endAttempt(segment, failure: failure, kind: kind, also: predicate,
                                                     on: connection)
            else { continue }
            released.append(ReleasedLease(reference: reference, workerID: workerID, outcome: outcome))
        }
        if !released.isEmpty { try await notify(Channel.segments, on: connection) }
        return released
    }

    /// Locks the leased segments matching `predicate`, skipping rows another transaction holds.
    private func lockLeases(where predicate: PostgresQuery, limit: Int,
                            on connection: PostgresConnection) async throws -> [Segment] {
        try await connection.query("""
            SELECT \(Segment.columns) FROM segments WHERE \(predicate) ORDER BY id LIMIT \(limit)
            FOR UPDATE SKIP LOCKED
            """).map(Segment.init(row:))
    }

    /// Ends the attempt `segment.leaseToken` without a result: back to pending with backoff, or the
    /// segment ends and its job fails. The UPDATE repeats the fence (and `also`, the caller's own
    /// predicate). Nil when the fence no longer holds.
    private func endAttempt(_ segment: Segment, failure: SegmentFailure, kind: String, also: PostgresQuery = "TRUE",
                            on connection: PostgresConnection) async throws -> AttemptOutcome? {
        guard let token = segment.leaseToken, let workerID = segment.leasedBy else { return nil }
        if segment.backupToken != nil && failure.isRetryable {
            return try await handOverToBackup(segment, failure: failure, kind: kind, also: also, on: connection)
        }
        let failedOn = Set(segment.failedWorkers + [workerID])
        let retry = failure.isRetryable && segment.attempt < segment.maxAttempts
            && failedOn.count < policy.deadAfterDistinctWorkers
        let endState: SegmentState = retry ? .pending : (failure.isRetryable ? .dead : .failed)
        let delay = retry ? policy.segmentBackoff.delay(attempt: segment.attempt) : .zero
        let rows = try await connection.query("""
            WITH segment AS (
                UPDATE segments
                SET state = \(endState), leased_by = NULL, lease_expires_at = NULL, updated_at = now(),
                    backup_token = NULL, backup_leased_by = NULL, backup_expires_at = NULL,
                    last_error = \(failure.message), failed_workers = array_append(failed_workers, \(workerID)),
                    next_attempt_at = now() + \(Int64(delay.wholeMilliseconds)) * interval '1 millisecond',
                    finished_at = CASE WHEN \(retry) THEN NULL ELSE now() END
                WHERE id = \(segment.id) AND lease_token = \(token) AND state = 'leased' AND \(also)
                RETURNING id, job_id, attempt, lease_token, next_attempt_at
            ), event AS (
                INSERT INTO job_events (job_id, segment_id, kind, from_state, to_state, attempt, worker_id,
                                        lease_token, detail)
                SELECT job_id, id, \(kind), 'leased', \(endState), attempt, \(workerID), lease_token, \(failure.message)
                FROM segment
            )
            SELECT next_attempt_at FROM segment
            """)
        guard let row = rows.first else { return nil }
        if retry { return .willRetry(at: try row.decode(Date.self, at: 0)) }
        let why = endState == .dead ? "gave up after \(segment.attempt) attempt(s) on \(failedOn.count) worker(s)"
            : "permanent error"
        _ = try await endJob(segment.jobID, as: .failed,
                             reason: "segment \(segment.plan.index) \(endState.rawValue) (\(why)): \(failure.message)",
                             on: connection)
        return .jobFailed(segmentState: endState)
    }

    /// Ends the attempt `segment.leaseToken` while a backup of it runs: the failure is recorded
    /// against its worker as usual, and the backup carries on as the segment's attempt (same
    /// attempt number, its own token, holder and expiry) — nothing to retry. Nil when the fence no
    /// longer holds.
    private func handOverToBackup(_ segment: Segment, failure: SegmentFailure, kind: String, also: PostgresQuery,
                                  on connection: PostgresConnection) async throws -> AttemptOutcome? {
        guard let token = segment.leaseToken, let workerID = segment.leasedBy else { return nil }
        let rows = try await connection.query("""
            WITH segment AS (
                UPDATE segments
                SET lease_token = backup_token, leased_by = backup_leased_by, lease_expires_at = backup_expires_at,
                    heartbeat_at = now(), backup_token = NULL, backup_leased_by = NULL, backup_expires_at = NULL,
                    last_error = \(failure.message), failed_workers = array_append(failed_workers, \(workerID)),
                    updated_at = now()
                WHERE id = \(segment.id) AND lease_token = \(token) AND state = 'leased' AND backup_token IS NOT NULL
                    AND \(also)
                RETURNING id, job_id, attempt
            ), event AS (
                INSERT INTO job_events (job_id, segment_id, kind, from_state, to_state, attempt, worker_id,
                                        lease_token, detail)
                SELECT job_id, id, \(kind), 'leased', 'leased', attempt, \(workerID), \(token),
                       \(failure.message) || ' (its backup carries on)'
                FROM segment
            )
            SELECT id FROM segment
            """)
        return rows.isEmpty ? nil : .carriedOnByBackup
    }
}
