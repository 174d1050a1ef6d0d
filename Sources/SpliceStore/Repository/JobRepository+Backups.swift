public import Foundation
import SpliceCore

// Backup attempts for stragglers (MapReduce's backup tasks, Spark's speculation): when a job has
// nothing left to claim and a slot is idle, the coordinator may start a second attempt of a leased
// segment on another worker. The backup has a fence of its own (`backup_token`, `backup_leased_by`,
// `backup_expires_at`); whichever of the two attempts commits its result first wins
// (`writeCompletions` accepts either token and makes the winner's the segment's), and the other is
// over — told to stop, not counted as a failure, no attempt spent. A segment gets one backup at
// most (`backups`). docs/store.md, Backup attempts.

extension JobRepository {
    /// Starts a backup attempt of the segment whose current lease is `primary`, for `workerID`:
    /// only while that lease is current, the segment has had no backup, the worker is not the one
    /// running it (nor revoked), and the job is running with no segment left pending. Nil when any
    /// of that no longer holds. The backup runs as the same attempt number, under its own token.
    public func claimBackup(of primary: LeaseReference, for workerID: UUID, leaseDuration: Duration) async throws
        -> SegmentLease?
    {
        let rows = try await client.query("""
            WITH target AS (
                SELECT s.id FROM segments s
                WHERE s.job_id = \(primary.job) AND s.index = \(primary.index) AND s.lease_token = \(primary.token)
                    AND s.state = 'leased' AND s.backups = 0 AND s.leased_by <> \(workerID)
                    AND EXISTS (SELECT 1 FROM workers w WHERE w.id = \(workerID) AND w.state <> 'revoked'
                                AND (s.required_encoder IS NULL OR w.capabilities->'encoders' ? s.required_encoder))
                    AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = s.job_id AND j.state = 'running')
                    AND NOT EXISTS (SELECT 1 FROM segments p WHERE p.job_id = s.job_id AND p.state = 'pending')
                FOR UPDATE
            ), segment AS (
                UPDATE segments s
                SET backup_token = gen_random_uuid(), backup_leased_by = \(workerID), backups = s.backups + 1,
                    backup_expires_at = now() + \(Int64(leaseDuration.wholeMilliseconds)) * interval '1 millisecond',
                    updated_at = now()
                FROM target
                WHERE s.id = target.id AND s.state = 'leased' AND s.lease_token = \(primary.token) AND s.backups = 0
                RETURNING s.*
            ), event AS (
                INSERT INTO job_events (job_id, segment_id, kind, from_state, to_state, attempt, worker_id,
                                        lease_token, detail)
                SELECT job_id, id, 'segment_backup_started', 'leased', 'leased', attempt, backup_leased_by,
                       backup_token, 'beside lease ' || lease_token
                FROM segment
            )
            SELECT \(Segment.columns) FROM segment
            """)
        guard let row = rows.first else { return nil }
        let segment = try Segment(row: row)
        guard let reference = segment.backupLease, let expiresAt = segment.backupExpiresAt else {
            throw StoreError(.decodingFailed, "a backup attempt came back without its lease")
        }
        return SegmentLease(segment: segment, reference: reference, expiresAt: expiresAt)
    }

    /// Ends the backup attempts matching `predicate` (a condition on `segments`) without a result:
    /// the segment's leased attempt carries on, nothing is counted against the segment, and the
    /// event (`segment_backup_ended`) keeps `reason`.
    func endBackups(where predicate: PostgresQuery, reason: String, limit: Int = 1000,
                    on connection: PostgresConnection) async throws -> [ReleasedLease] {
        let rows = try await connection.query("""
            WITH target AS (
                SELECT id, backup_token, backup_leased_by FROM segments
                WHERE backup_token IS NOT NULL AND \(predicate)
                ORDER BY id LIMIT \(limit)
                FOR UPDATE
            ), segment AS (
                UPDATE segments s
                SET backup_token = NULL, backup_leased_by = NULL, backup_expires_at = NULL, updated_at = now()
                FROM target
                WHERE s.id = target.id AND s.backup_token = target.backup_token
                RETURNING s.id, s.job_id, s.index, s.attempt, target.backup_token, target.backup_leased_by
            ), event AS (
                INSERT INTO job_events (job_id, segment_id, kind, from_state, to_state, attempt, worker_id,
                                        lease_token, detail)
                SELECT job_id, id, 'segment_backup_ended', 'leased', 'leased', attempt, backup_leased_by,
                       backup_token, \(reason)
                FROM segment
            )
            SELECT job_id, index, backup_token, backup_leased_by FROM segment
            """)
        return try rows.map { row throws(StoreError) in
            ReleasedLease(
                reference: LeaseReference(job: try row.decode(at: 0), segment: try row.decode(at: 1),
                                          token: try row.decode(at: 2)),
                workerID: try row.decode(at: 3), outcome: .backupEnded)
        }
    }

    /// Ends the backup attempt `lease` if it is one (a FAIL or a hand-back of the backup itself).
    func endBackup(_ lease: LeaseReference, reason: String, on connection: PostgresConnection) async throws -> Bool {
        try await !endBackups(
            where: "job_id = \(lease.job) AND index = \(lease.index) AND backup_token = \(lease.token)",
            reason: reason, limit: 1, on: connection
        ).isEmpty
    }
}
