import SpliceCore

// Column lists and row decoders for the repository's types; every query that returns one of
// these types selects `\(X.columns)` and decodes with `X(row:)`, so the two cannot drift apart.

extension Job {
    static let columns: PostgresQuery = """
        id, idempotency_key, submission_fingerprint, source_url, output_url, settings, plan, state, priority, \
        max_attempts, segments_total, segments_done, error, created_at, updated_at, started_at, finished_at, \
        reference, webhook_url, webhook_secret IS NOT NULL AS own_webhook_secret, submitted_by
        """

    init(row: PostgresRow) throws(StoreError) {
        self.init(
            id: try row.decode(column: "id"), idempotencyKey: try row.decode(column: "idempotency_key"),
            submissionFingerprint: try row.decode(column: "submission_fingerprint"),
            input: try row.decode(column: "source_url"), output: try row.decode(column: "output_url"),
            settings: try row.decode(column: "settings"), plan: try row.decode(column: "plan"),
            state: try row.decode(column: "state"), priority: try row.decode(column: "priority"),
            maxAttempts: try row.decode(column: "max_attempts"), segmentsTotal: try row.decode(column: "segments_total"),
            segmentsDone: try row.decode(column: "segments_done"), error: try row.decode(column: "error"),
            createdAt: try row.decode(column: "created_at"), updatedAt: try row.decode(column: "updated_at"),
            startedAt: try row.decode(column: "started_at"), finishedAt: try row.decode(column: "finished_at"),
            reference: try row.decode(column: "reference"), webhookURL: try row.decode(column: "webhook_url"),
            hasOwnWebhookSecret: try row.decode(column: "own_webhook_secret"),
            submittedBy: try row.decode(column: "submitted_by"))
    }
}

extension Segment {
    static let columns: PostgresQuery = """
        id, job_id, index, range_start, range_end, range_timescale, spec, cost, state, attempt, max_attempts, \
        lease_token, leased_by, lease_expires_at, heartbeat_at, next_attempt_at, failed_workers, output_url, \
        checksum, last_error, finished_at, backup_token, backup_leased_by, backup_expires_at, backups, \
        \(SegmentFigures.columns)
        """

    init(row: PostgresRow) throws(StoreError) {
        let plan = PlannedSegment(
            index: try row.decode(column: "index"), rangeStart: try row.decode(column: "range_start"),
            rangeEnd: try row.decode(column: "range_end"), timescale: try row.decode(column: "range_timescale"),
            spec: try row.decode(column: "spec"), cost: try row.decode(column: "cost"))
        self.init(
            id: try row.decode(column: "id"), jobID: try row.decode(column: "job_id"), plan: plan,
            state: try row.decode(column: "state"), attempt: try row.decode(column: "attempt"),
            maxAttempts: try row.decode(column: "max_attempts"), leaseToken: try row.decode(column: "lease_token"),
            leasedBy: try row.decode(column: "leased_by"), leaseExpiresAt: try row.decode(column: "lease_expires_at"),
            heartbeatAt: try row.decode(column: "heartbeat_at"), nextAttemptAt: try row.decode(column: "next_attempt_at"),
            failedWorkers: try row.decode(column: "failed_workers"), outputPath: try row.decode(column: "output_url"),
            checksum: try row.decode(column: "checksum"), lastError: try row.decode(column: "last_error"),
            finishedAt: try row.decode(column: "finished_at"), backupToken: try row.decode(column: "backup_token"),
            backupLeasedBy: try row.decode(column: "backup_leased_by"),
            backupExpiresAt: try row.decode(column: "backup_expires_at"), backups: try row.decode(column: "backups"),
            figures: try SegmentFigures(row: row))
    }
}

extension SegmentFigures {
    /// Its columns in `segments` (migrations 0004 and 0007).
    static let columns: PostgresQuery = "video_bytes, video_bits_per_second, mean_qp, crf, encodes, quality"

    /// The figures a row holds; nil when it holds none (`video_bytes` NULL).
    init?(row: PostgresRow) throws(StoreError) {
        guard let bytes = try row.decode(Int64?.self, column: "video_bytes") else { return nil }
        var quality: SegmentQuality?
        if let json = try row.decode(PostgresJSON?.self, column: "quality") {
            do {
                quality = try json.decode(SegmentQuality.self)
            } catch {
                throw StoreError(.decodingFailed, "segment quality figures that cannot be read: \(error)")
            }
        }
        self.init(videoBytes: bytes, videoBitsPerSecond: try row.decode(column: "video_bits_per_second"),
                  meanQP: try row.decode(column: "mean_qp"), crf: try row.decode(column: "crf"),
                  quality: quality, encodes: try row.decode(column: "encodes"))
    }
}

extension Worker {
    static let columns: PostgresQuery = """
        id, public_key, name, slots, capabilities, state, enrolled_at, last_seen_at, revoked_at
        """

    init(row: PostgresRow) throws(StoreError) {
        self.init(
            id: try row.decode(column: "id"), publicKey: try row.decode(column: "public_key"),
            name: try row.decode(column: "name"), slots: try row.decode(column: "slots"),
            capabilities: try row.decode(column: "capabilities"), state: try row.decode(column: "state"),
            enrolledAt: try row.decode(column: "enrolled_at"), lastSeenAt: try row.decode(column: "last_seen_at"),
            revokedAt: try row.decode(column: "revoked_at"))
    }
}

extension JobEvent {
    package static let columns: PostgresQuery = """
        id, job_id, segment_id, at, kind, from_state, to_state, attempt, worker_id, lease_token, detail
        """

    package init(row: PostgresRow) throws(StoreError) {
        self.init(
            id: try row.decode(column: "id"), jobID: try row.decode(column: "job_id"),
            segmentID: try row.decode(column: "segment_id"), at: try row.decode(column: "at"),
            kind: try row.decode(column: "kind"), fromState: try row.decode(column: "from_state"),
            toState: try row.decode(column: "to_state"), attempt: try row.decode(column: "attempt"),
            workerID: try row.decode(column: "worker_id"), leaseToken: try row.decode(column: "lease_token"),
            detail: try row.decode(column: "detail"))
    }
}
