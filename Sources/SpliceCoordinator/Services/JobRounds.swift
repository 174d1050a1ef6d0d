import Foundation
import SpliceCore
import SpliceLog
import SpliceStore
import Synchronization

/// What the planner and the stitcher share: rounds over the jobs in some states, a per-job
/// backoff after a failure that may pass, and failing a job for good — with its reason — when
/// no retry can help or the retries run out. Nothing is retried forever.
final class JobRounds: Sendable {
    /// `planning`, `stitching`: for log lines and the job's error.
    let stage: String
    private let repository: JobRepository
    private let logger: Logger
    private let retries = RetryBook(attempts: 5, base: .seconds(2))

    init(stage: String, repository: JobRepository, logger: Logger) {
        self.stage = stage
        self.repository = repository
        self.logger = logger
    }

    /// Runs `body` for each job in `states` that is not backing off, one at a time. Rounds list
    /// ids only and read a job (its plan can be megabytes) when it is due: a job backing off
    /// costs a round almost nothing.
    func forEachDue(in states: [JobState], _ body: (Job) async -> Void) async {
        let ids: [JobID]
        do {
            ids = try await repository.jobIDs(in: states, limit: 64)
        } catch is CancellationError {
            return  // shutting down
        } catch {
            logger.warning("cannot list jobs", ["stage": stage, "error": "\(error)"])
            return
        }
        for id in ids where retries.isDue(id) {
            if Task.isCancelled { return }
            let job: Job?
            do {
                job = try await repository.job(id: id)
            } catch is CancellationError {
                return
            } catch {
                logger.warning("cannot read a job", ["stage": stage, "job": id.description, "error": "\(error)"])
                return
            }
            // Moved on since the listing (cancelled, or another step took it): not this round's.
            guard let job, states.contains(job.state) else { continue }
            await body(job)
        }
    }

    /// A failure that may pass: try the job again after a backoff, or fail it once the attempts
    /// are used up. Returns true when the job was failed.
    @discardableResult
    func retry(_ job: Job, after error: any Error) async -> Bool {
        if retries.failed(job.id) {
            logger.warning("job step failed; will retry", ["job": job.id.description, "stage": stage, "error": "\(error)"])
            return false
        }
        return await fail(job, reason: "\(stage) kept failing: \(error)")
    }

    /// Fails the job with `reason`; returns whether that was recorded.
    @discardableResult
    func fail(_ job: Job, reason: String) async -> Bool {
        retries.forget(job.id)
        do {
            try await repository.failJob(jobID: job.id, error: reason)
            logger.error("job failed", ["job": job.id.description, "stage": stage, "error": reason])
            return true
        } catch {
            logger.warning("cannot record the job's failure", ["job": job.id.description, "error": "\(error)"])
            return false
        }
    }

    /// The job's step succeeded: forget its failures.
    func succeeded(_ job: Job) {
        retries.forget(job.id)
    }
}

/// Per-job backoff: a job that failed is skipped until its backoff ends (base · 2^(n−1)), and
/// after `attempts` failures the caller gives up on it.
final class RetryBook: Sendable {
    private struct Entry {
        var failures: Int
        var notBefore: ContinuousClock.Instant
    }

    private let entries = Mutex<[JobID: Entry]>([:])
    private let attempts: Int
    private let base: Duration

    init(attempts: Int, base: Duration) {
        self.attempts = attempts
        self.base = base
    }

    /// Whether the job may be tried now.
    func isDue(_ job: JobID) -> Bool {
        entries.withLock { $0[job].map { ContinuousClock.now >= $0.notBefore } ?? true }
    }

    /// Records a failure; false when the job has run out of attempts (the entry is then dropped).
    func failed(_ job: JobID) -> Bool {
        entries.withLock { entries in
            let failures = (entries[job]?.failures ?? 0) + 1
            guard failures < attempts else {
                entries[job] = nil
                return false
            }
            entries[job] = Entry(failures: failures, notBefore: .now + base * (1 << min(failures - 1, 10)))
            return true
        }
    }

    func forget(_ job: JobID) {
        _ = entries.withLock { $0.removeValue(forKey: job) }
    }
}
