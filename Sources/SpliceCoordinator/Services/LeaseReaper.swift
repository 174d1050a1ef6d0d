import SpliceCore
import SpliceLog

/// Takes back leases whose workers stopped extending them, so their segments are retried (the
/// store repeats its own predicate in every UPDATE: a completion that committed first wins), and
/// leases nobody holds: once `orphanGrace` has passed since this coordinator started (time for
/// the workers to register again), a lease that no session holds and nobody extended for that
/// long was claimed by a coordinator that died before sending it, or belongs to a worker that
/// did not come back.
struct LeaseReaper: Sendable {
    let store: CoordinatorStore
    let shell: CoordinatorShell
    let orphanGrace: Duration
    let startedAt: ContinuousClock.Instant
    let logger: Logger

    func round() async {
        do {
            while !Task.isCancelled {
                let taken = try await store.reapExpiredLeases()
                guard !taken.leases.isEmpty else { break }
                shell.metrics.takenBack(taken.leases.count, reason: AttemptFailure.leaseExpired)
                logger.info("expired leases reaped", ["count": taken.leases.count])
                await shell.takenBack(taken)
                if taken.leases.count < 1000 { break }
            }
            guard !Task.isCancelled, ContinuousClock.now - startedAt >= orphanGrace else { return }
            let orphans = try await store.releaseOrphanedLeases(held: await shell.heldLeaseTokens, idle: orphanGrace)
            guard !orphans.leases.isEmpty else { return }
            shell.metrics.takenBack(orphans.leases.count, reason: AttemptFailure.leaseOrphaned)
            logger.info("orphaned leases released", ["count": orphans.leases.count])
            await shell.takenBack(orphans)
        } catch is CancellationError {
            return  // shutting down
        } catch {
            logger.warning("reaping failed", ["error": "\(error)"])
        }
    }
}

/// Sweeps the spool for directories of jobs that have ended (a worker's late write after a
/// cancel, a removal that failed): whatever is there is garbage once the job is finished.
struct SpoolJanitor: Sendable {
    let store: CoordinatorStore
    let cleaner: SpoolCleaner
    let logger: Logger

    func round() async {
        for job in await cleaner.jobsWithFiles() {
            if Task.isCancelled { return }
            do {
                guard let state = try await store.repository.job(id: job)?.state, state.isTerminal else { continue }
                await cleaner.removeJob(job)
            } catch {
                logger.debug("spool sweep skipped a job", ["job": job.description, "error": "\(error)"])
            }
        }
    }
}
