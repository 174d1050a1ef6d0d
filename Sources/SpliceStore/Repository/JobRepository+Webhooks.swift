public import Foundation
public import SpliceCore

/// One event of the webhook outbox, claimed for delivery, with what its body says of the job.
public struct WebhookEvent: Sendable, Equatable {
    /// `Splice-Event-Id`.
    public var id: UUID
    public var jobID: JobID
    /// `job.planned`, `job.succeeded`, `job.failed`, `job.cancelled`.
    public var type: String
    public var url: String
    /// The job's state the event reports, and why it failed or was cancelled.
    public var state: JobState
    public var error: String?
    public var createdAt: Date
    /// Delivery attempts before this one.
    public var attempts: Int
    /// The job's own signing secret; nil: the coordinator's.
    public var secret: String?
    public var reference: String?
    public var input: String
    public var output: String
}

/// How one delivery attempt ended.
public enum WebhookOutcome: String, Sendable, Hashable, CaseIterable {
    /// The receiver answered 2xx: the event is delivered.
    case delivered
    /// No answer, or not 2xx: tried again later.
    case failed
    /// Not 2xx, and the retry window is over: given up.
    case expired
}

/// One delivery attempt as recorded.
public struct WebhookDelivery: Sendable, Equatable {
    public var eventID: UUID
    public var type: String
    public var attempt: Int
    public var at: Date
    /// The receiver's status code; nil when no answer came (`error` says why).
    public var status: Int?
    public var error: String?
    public var durationMilliseconds: Int
    public var outcome: WebhookOutcome
}

extension JobRepository {
    /// Claims up to `limit` due events for `claim` (a crashed sender's claims run out; the next
    /// sender takes them): at most one per job, its oldest undelivered, so a job's events go out
    /// in order.
    public func claimWebhookEvents(limit: Int, claim: Duration) async throws -> [WebhookEvent] {
        let milliseconds = Int64(claim.components.seconds * 1000 + claim.components.attoseconds / 1_000_000_000_000_000)
        return try await client.query("""
            WITH due AS (
                SELECT w.id FROM webhook_events w
                WHERE w.delivered_at IS NULL AND w.given_up_at IS NULL AND w.next_attempt_at <= now()
                  AND (w.claimed_until IS NULL OR w.claimed_until <= now())
                  AND NOT EXISTS (SELECT 1 FROM webhook_events p WHERE p.job_id = w.job_id AND p.seq < w.seq
                                  AND p.delivered_at IS NULL AND p.given_up_at IS NULL)
                ORDER BY w.next_attempt_at, w.seq
                LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
            ), claimed AS (
                UPDATE webhook_events w SET claimed_until = now() + \(milliseconds) * interval '1 millisecond'
                FROM due WHERE w.id = due.id
                RETURNING w.*
            )
            SELECT c.id, c.job_id, c.type, c.url, c.state, c.error, c.created_at, c.attempts,
                   j.webhook_secret, j.reference, j.source_url, j.output_url
            FROM claimed c JOIN jobs j ON j.id = c.job_id
            ORDER BY c.seq
            """).map { row throws(StoreError) in
            WebhookEvent(
                id: try row.decode(column: "id"), jobID: try row.decode(column: "job_id"),
                type: try row.decode(column: "type"), url: try row.decode(column: "url"),
                state: try row.decode(column: "state"), error: try row.decode(column: "error"),
                createdAt: try row.decode(column: "created_at"), attempts: Int(try row.decode(Int32.self, column: "attempts")),
                secret: try row.decode(column: "webhook_secret"), reference: try row.decode(column: "reference"),
                input: try row.decode(column: "source_url"), output: try row.decode(column: "output_url"))
        }
    }

    /// Records an attempt at `event` and what follows: delivered, tried again after `retryAfter`
    /// (``WebhookOutcome/failed``), or given up. One statement; the claim ends with it.
    public func recordWebhookAttempt(
        _ event: WebhookEvent, status: Int?, error: String?, duration: Duration, outcome: WebhookOutcome,
        retryAfter: Duration = .zero
    ) async throws {
        let elapsed = Int32(clamping: duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        let delay = Int64(retryAfter.components.seconds * 1000 + retryAfter.components.attoseconds / 1_000_000_000_000_000)
        let statusCode = status.map { Int32(clamping: $0) }.flatMap { (100...599).contains($0) ? $0 : nil }
        let detail = error.map { String($0.prefix(500)) }
        try await client.query("""
                WITH event AS (
                    UPDATE webhook_events SET
                        attempts = attempts + 1, claimed_until = NULL,
                        delivered_at = CASE WHEN \(outcome.rawValue) = 'delivered' THEN now() END,
                        given_up_at = CASE WHEN \(outcome.rawValue) = 'expired' THEN now() END,
                        next_attempt_at = now() + \(delay) * interval '1 millisecond'
                    WHERE id = \(event.id) AND delivered_at IS NULL AND given_up_at IS NULL
                    RETURNING id, job_id, attempts
                )
                INSERT INTO webhook_deliveries (event_id, job_id, attempt, status, error, duration_ms, outcome)
                SELECT id, job_id, attempts, \(statusCode), \(detail), \(elapsed), \(outcome.rawValue) FROM event
                """)
    }

    /// Ends every claim (a sender starting: what a crashed one claimed is due again at once).
    /// At least once: an event whose POST was in flight when its sender died is sent again.
    public func releaseWebhookClaims() async throws {
        try await client.query("UPDATE webhook_events SET claimed_until = NULL WHERE claimed_until IS NOT NULL")
    }

    /// The job's most recent delivery attempts (up to `limit`), oldest first.
    public func webhookDeliveries(ofJob job: JobID, limit: Int = 100) async throws -> [WebhookDelivery] {
        try await client.query("""
            SELECT * FROM (
                SELECT d.id, d.event_id, e.type, d.attempt, d.at, d.status, d.error, d.duration_ms, d.outcome
                FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
                WHERE d.job_id = \(job) ORDER BY d.id DESC LIMIT \(limit)
            ) recent ORDER BY id
            """).map { row throws(StoreError) in
            WebhookDelivery(
                eventID: try row.decode(column: "event_id"), type: try row.decode(column: "type"),
                attempt: Int(try row.decode(Int32.self, column: "attempt")), at: try row.decode(column: "at"),
                status: try row.decode(Int32?.self, column: "status").map(Int.init), error: try row.decode(column: "error"),
                durationMilliseconds: Int(try row.decode(Int32.self, column: "duration_ms")),
                outcome: WebhookOutcome(rawValue: try row.decode(String.self, column: "outcome")) ?? .failed)
        }
    }

    /// Events not yet delivered nor given up (the metric `splice_webhook_events_pending`).
    public func pendingWebhookEvents() async throws -> Int {
        let rows = try await client.query("""
            SELECT count(*) FROM webhook_events WHERE delivered_at IS NULL AND given_up_at IS NULL
            """)
        return Int(try rows.first?.decode(Int64.self, at: 0) ?? 0)
    }
}
