import SpliceCore
import SpliceWire

/// Backup attempts of stragglers (MapReduce's backup tasks, Spark's speculation): the pace of each
/// job's committed attempts, the segments that have had their one backup, and when to look for a
/// straggler again. Looking costs a pass over the running attempts, so it happens when something
/// changed (a run committed, a worker fell idle) but at most eight times per `checkInterval`, or
/// once per `checkInterval` as time passes — never on every event.
struct BackupAttempts: Sendable {
    typealias Instant = ContinuousClock.Instant

    /// A committed attempt: how long it ran (from its claim to its commit) for its cost.
    struct FinishedRun: Sendable, Hashable {
        var elapsed: Duration
        var cost: Int64
    }

    /// How many committed runs of a job its pace is taken from (the most recent).
    static let paceSamples = 64

    let afterPercent: Int
    let minimumRuntime: Duration
    let checkInterval: Duration
    /// Per job: the runs the pace is judged by (the most recent `paceSamples`).
    private var finishedRuns: [JobID: [FinishedRun]] = [:]
    /// Segments that have had a backup attempt (or whose backup the store refused): one each.
    private var backedUp: Set<SessionTable.SegmentKey> = []
    /// No look before this (nil: at the next chance).
    private var nextCheck: Instant?
    /// When the last look was: after a change the next comes at once, but never sooner than
    /// `checkInterval / 8` after it, so a farm whose workers fall idle one after another at
    /// thousands a second (the end of a big job) pays for a few looks a second, not one each.
    private var lastCheck: Instant?

    init(afterPercent: Int, minimumRuntime: Duration, checkInterval: Duration) {
        self.afterPercent = afterPercent
        self.minimumRuntime = minimumRuntime
        self.checkInterval = checkInterval
    }

    var isEnabled: Bool { afterPercent > 0 }

    /// Something changed that may make a backup possible: look at the next chance.
    mutating func lookAgain() { nextCheck = lastCheck.map { $0 + checkInterval / 8 } }

    mutating func recordRun(of held: WorkerSession.HeldAttempt, lasting elapsed: Duration) {
        var runs = finishedRuns[held.attempt.job] ?? []
        runs.append(FinishedRun(elapsed: elapsed, cost: held.cost))
        finishedRuns[held.attempt.job] = Array(runs.suffix(Self.paceSamples))
        lookAgain()
    }

    mutating func forget(job: JobID) {
        finishedRuns[job] = nil
        backedUp = backedUp.filter { $0.job != job }
    }

    /// The segment of `primary` has had its backup (or the store refused one).
    mutating func backedUp(_ primary: SegmentAttempt) {
        backedUp.insert(SessionTable.SegmentKey(primary))
    }

    /// What an attempt of `cost` should take at the job's median pace (time per unit of cost);
    /// nil before any of the job's attempts has committed here.
    func expectedRuntime(cost: Int64, job: JobID) -> Duration? {
        guard let runs = finishedRuns[job], !runs.isEmpty else { return nil }
        let paces = runs.map { $0.elapsed / max(1, $0.cost) }.sorted()
        return paces[paces.count / 2] * max(1, cost)
    }

    /// The running attempt furthest past its backup threshold — one that has run longer than
    /// `afterPercent` of what its cost predicts at its job's median pace, and at least
    /// `minimumRuntime` — that one of `idle` other than its own worker can take, and the worker
    /// running it. Nil when none is, or when it is not time to look again.
    mutating func straggler(
        in sessions: SessionTable, idle: Set<WorkerIdentity>, now: Instant
    ) -> (attempt: SegmentAttempt, holder: WorkerIdentity)? {
        guard isEnabled, !idle.isEmpty, nextCheck.map({ now >= $0 }) ?? true else { return nil }
        lastCheck = now
        var best: (attempt: SegmentAttempt, holder: WorkerIdentity, overdue: Duration)?
        for session in sessions.all where idle.count > 1 || !idle.contains(session.identity) {
            for held in session.held.values {
                guard !held.reported, !held.isBackup, let leasedAt = held.leasedAt,
                      !backedUp.contains(SessionTable.SegmentKey(held.attempt)),
                      let expected = expectedRuntime(cost: held.cost, job: held.attempt.job)
                else { continue }
                let threshold = max(minimumRuntime, expected * afterPercent / 100)
                let overdue = now - leasedAt - threshold
                guard overdue > .zero else { continue }
                if let current = best, current.overdue > overdue
                    || (current.overdue == overdue && current.attempt.description < held.attempt.description) {
                    continue
                }
                best = (held.attempt, session.identity, overdue)
            }
        }
        if best == nil { nextCheck = now + checkInterval }
        return best.map { ($0.attempt, $0.holder) }
    }
}
