import SpliceCore
import SpliceWire

// COMPLETE and FAIL: committed once, acknowledged every time they are reported.
extension CoordinatorStateMachine {
    /// Queues a COMPLETE/FAIL for its commit, or answers a resend at once.
    mutating func submit(_ result: WorkerResult, from identity: WorkerIdentity, fromHello: Bool, now: Instant)
        -> (directives: [CoordinatorDirective], awaitingCommit: Bool)
    {
        let token = result.attempt.leaseToken
        guard let session = sessions[identity] else { return ([], false) }
        if let outcome = results.outcome(of: token) {
            sessions.drop(token, from: identity)
            let ack = Ack(attempt: result.attempt, acknowledges: result.acknowledged, outcome: outcome.resendAckOutcome)
            return (send(.ack(ack), to: identity, now: now), false)
        }
        // The worker is no longer running the attempt; its slot frees when the result is committed.
        sessions.updateHeld(token, of: identity) { $0.reported = true }
        let waiter = ResultCommits.Waiter(
            identity: identity, incarnation: session.incarnation, peer: session.peer,
            acknowledged: result.acknowledged, fromHello: fromHello)
        return results.wait(waiter, for: token) ? ([.commitResult(result)], true) : ([], true)
    }

    /// The result is committed: ACK every report of it that waited, then act on the outcome.
    mutating func onResultCommitted(_ result: WorkerResult, outcome: ResultOutcome, now: Instant)
        -> [CoordinatorDirective]
    {
        let token = result.attempt.leaseToken
        var directives: [CoordinatorDirective] = []
        let waiters = results.committed(token, outcome: outcome)
        var run: WorkerSession.HeldAttempt?
        for waiter in waiters where run == nil { run = sessions[waiter.identity]?.held[token] }
        for (position, waiter) in waiters.enumerated() {
            sessions.drop(token, from: waiter.identity)
            let ackOutcome = position == 0 ? outcome.ackOutcome : outcome.resendAckOutcome
            let ack = Ack(attempt: result.attempt, acknowledges: waiter.acknowledged, outcome: ackOutcome)
            directives += send(.ack(ack), to: waiter.identity, fallback: waiter.peer, now: now)
            if waiter.fromHello {
                directives += helloWorkDone(waiter.identity, incarnation: waiter.incarnation, now: now)
            }
        }
        if case .completed = outcome {
            if let first = waiters.first { quarantines.cleared(first.identity) }
            if let run, let leasedAt = run.leasedAt { backups.recordRun(of: run, lasting: now - leasedAt) }
            directives += supersede(result.attempt, now: now)
        }
        switch outcome {
        case .completed(jobReadyToStitch: true):
            backups.forget(job: result.attempt.job)
            directives.append(.wakeStitcher)
        case .recorded(.jobFailed):
            directives += onJobEnded(result.attempt.job, reason: .jobFailed, now: now)
        default:
            break
        }
        return directives
    }

    /// The commit failed (the store stayed unreachable): no ACK, so the worker resends.
    mutating func onResultCommitFailed(_ result: WorkerResult, now: Instant) -> [CoordinatorDirective] {
        var directives: [CoordinatorDirective] = []
        for waiter in results.failed(result.attempt.leaseToken) {
            sessions.drop(result.attempt.leaseToken, from: waiter.identity)
            if waiter.fromHello {
                directives += helloWorkDone(waiter.identity, incarnation: waiter.incarnation, now: now)
            }
        }
        return directives
    }

    /// `winner`'s result is committed: any other attempt of its segment still running (the backup,
    /// or the straggler it backed up) is told to stop. It lost a race; nothing failed. Runs for
    /// every committed result: the segment index answers without looking at other sessions.
    private mutating func supersede(_ winner: SegmentAttempt, now: Instant) -> [CoordinatorDirective] {
        let losers = sessions.holdings(ofSegment: SessionTable.SegmentKey(winner))
            .filter { $0.held.attempt.leaseToken != winner.leaseToken && !$0.held.reported }
        guard !losers.isEmpty else { return [] }
        var directives: [CoordinatorDirective] = []
        for loser in losers.sorted(by: { $0.identity.description < $1.identity.description }) {
            sessions.drop(loser.held.attempt.leaseToken, from: loser.identity)
            directives.append(.notice(.attemptSuperseded(loser.identity, loser.held.attempt)))
            directives += send(.cancel(Cancel(attempt: loser.held.attempt, reason: .leaseLost)), to: loser.identity, now: now)
        }
        return directives
    }
}
