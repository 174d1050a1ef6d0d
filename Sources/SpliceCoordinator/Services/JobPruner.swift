import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceLog
import SpliceStore

/// Retention: deletes jobs that finished longer ago than the cutoff, with their segments, events,
/// webhook rows and spool files, in batches (docs/deploy.md, Retention). The coordinator's
/// `--retention` runs a round every hour in its active term, and `splice jobs prune` runs one on
/// request; both write through the term's fenced pool, so a deposed coordinator deletes nothing.
struct JobPruner: Sendable {
    let repository: JobRepository
    let cleaner: SpoolCleaner
    let metrics: CoordinatorMetrics
    let logger: Logger
    var batchSize = 1000

    /// Prunes (or, dry, counts) what finished before `olderThan` ago; throws the store's errors.
    func prune(finishedBefore olderThan: Duration, dryRun: Bool) async throws -> PruneReport {
        let cleaner = self.cleaner
        let metrics = self.metrics
        let report = try await repository.pruneJobs(finishedBefore: olderThan, batchSize: batchSize, dryRun: dryRun) {
            jobs in
            metrics.jobsPruned.increment(by: Double(jobs.count))
            for job in jobs { await cleaner.removeJob(job) }
        }
        if !dryRun, !report.jobs.isEmpty {
            logger.info("finished jobs pruned", [
                "jobs": report.jobs.count, "segments": report.segments, "events": report.events,
                "webhook_events": report.webhookEvents, "transactions": report.transactions,
                "longest_transaction_ms": report.longestTransaction.wholeMilliseconds,
                "finished_before_s": olderThan.components.seconds,
            ])
        }
        return report
    }

    /// One hourly round: logs a failure and waits for the next.
    func round(finishedBefore olderThan: Duration) async {
        do {
            _ = try await prune(finishedBefore: olderThan, dryRun: false)
        } catch is CancellationError {
            return
        } catch let error as StoreError where error.code == .fenced {
            return  // another coordinator took over: it prunes now
        } catch {
            logger.warning("retention failed; trying again in an hour", ["error": "\(error)"])
        }
    }
}
