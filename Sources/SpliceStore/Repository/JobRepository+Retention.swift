public import Foundation
public import SpliceCore

/// What one prune removed (or, dry, would remove).
public struct PruneReport: Sendable, Equatable {
    /// The jobs, oldest finished first.
    public var jobs: [JobID] = []
    public var segments = 0
    public var events = 0
    /// Webhook outbox rows and their delivery attempts.
    public var webhookEvents = 0
    public var webhookDeliveries = 0
    /// Transactions it took, and the longest one (no table is locked longer than that).
    public var transactions = 0
    public var longestTransaction: Duration = .zero

    public init() {}
}

extension JobRepository {
    /// The states a job may be pruned in: finished, never running.
    public static let prunableStates = ["succeeded", "failed", "cancelled"]

    /// Deletes the jobs that finished more than `olderThan` ago, with their segments, events and
    /// webhook rows, `batchSize` jobs per transaction so that no table is locked for long (a job
    /// still running, or finished since the cutoff, is never touched). With `dryRun`, only counts.
    /// `pruned` hears each batch's jobs once it has committed (to remove their spool files).
    /// Written like every coordinator write, under the session's epoch (the fence).
    public func pruneJobs(
        finishedBefore olderThan: Duration, batchSize: Int = 1000, dryRun: Bool = false,
        pruned: @Sendable ([JobID]) async -> Void = { _ in }
    ) async throws -> PruneReport {
        precondition(batchSize >= 1, "a prune batch holds at least one job")
        let seconds = Double(olderThan.components.seconds)
        var report = PruneReport()
        if dryRun {
            let row = try await client.query("""
                WITH doomed AS (
                    SELECT id FROM jobs WHERE finished_at < now() - make_interval(secs => \(seconds))
                      AND state = ANY(\(Self.prunableStates)))
                SELECT (SELECT count(*) FROM doomed) AS jobs,
                       (SELECT count(*) FROM segments WHERE job_id IN (SELECT id FROM doomed)) AS segments,
                       (SELECT count(*) FROM job_events WHERE job_id IN (SELECT id FROM doomed)) AS events,
                       (SELECT count(*) FROM webhook_events WHERE job_id IN (SELECT id FROM doomed)) AS webhook_events,
                       (SELECT count(*) FROM webhook_deliveries WHERE job_id IN (SELECT id FROM doomed))
                           AS webhook_deliveries
                """).first
            guard let row else { return report }
            let ids = try await client.query("""
                SELECT id FROM jobs WHERE finished_at < now() - make_interval(secs => \(seconds))
                  AND state = ANY(\(Self.prunableStates)) ORDER BY finished_at, id
                """).map { JobID(try $0.decode(UUID.self, column: "id")) }
            report.jobs = ids
            report.segments = Int(try row.decode(Int64.self, column: "segments"))
            report.events = Int(try row.decode(Int64.self, column: "events"))
            report.webhookEvents = Int(try row.decode(Int64.self, column: "webhook_events"))
            report.webhookDeliveries = Int(try row.decode(Int64.self, column: "webhook_deliveries"))
            return report
        }
        let clock = ContinuousClock()
        while true {
            let started = clock.now
            let batch = try await client.transaction { connection -> PruneReport in
                try await connection.execute("SET LOCAL splice.prune = 'on'")
                // SKIP LOCKED: a job some other transaction holds (a late cancel) waits for the next round.
                let ids = try await connection.query("""
                    SELECT id FROM jobs WHERE finished_at < now() - make_interval(secs => \(seconds))
                      AND state = ANY(\(Self.prunableStates))
                    ORDER BY finished_at, id LIMIT \(batchSize) FOR UPDATE SKIP LOCKED
                    """).map { try $0.decode(UUID.self, column: "id") }
                var batch = PruneReport()
                guard !ids.isEmpty else { return batch }
                batch.jobs = ids.map { JobID($0) }
                batch.webhookDeliveries = try await connection.execute(
                    "DELETE FROM webhook_deliveries WHERE job_id = ANY(\(ids))")
                batch.webhookEvents = try await connection.execute(
                    "DELETE FROM webhook_events WHERE job_id = ANY(\(ids))")
                batch.events = try await connection.execute("DELETE FROM job_events WHERE job_id = ANY(\(ids))")
                batch.segments = try await connection.execute("DELETE FROM segments WHERE job_id = ANY(\(ids))")
                // The state is checked again by the delete itself: nothing that left a finished state is removed.
                let deleted = try await connection.execute("""
                    DELETE FROM jobs WHERE id = ANY(\(ids)) AND state = ANY(\(Self.prunableStates))
                    """)
                guard deleted == ids.count else {
                    throw StoreError(.invalidTransition, "a job to prune left its finished state; the batch is undone",
                                     isRetryable: true)
                }
                return batch
            }
            if batch.jobs.isEmpty { break }
            let took = clock.now - started
            report.transactions += 1
            report.longestTransaction = max(report.longestTransaction, took)
            report.jobs += batch.jobs
            report.segments += batch.segments
            report.events += batch.events
            report.webhookEvents += batch.webhookEvents
            report.webhookDeliveries += batch.webhookDeliveries
            await pruned(batch.jobs)
            if batch.jobs.count < batchSize { break }
        }
        return report
    }
}
