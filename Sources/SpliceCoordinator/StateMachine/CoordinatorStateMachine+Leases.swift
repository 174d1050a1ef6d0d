import SpliceCore
import SpliceWire

// Leases extended, lost and taken back; jobs ended; sends that failed.
extension CoordinatorStateMachine {
    /// Whether an ACCEPT can be answered from the commit of the claim that granted its lease: this
    /// process assigned the attempt to this worker within `acceptFromClaimWindow`, and nothing has
    /// taken it back since (a reaped, released or cancelled lease leaves `held`). That commit made
    /// the lease run until at least the claim's issue time + `leaseDuration`; the worker's
    /// deadline becomes the ACCEPT's send time + `leaseDuration`, later by less than the window,
    /// which its safety margin covers — the same overshoot the ASSIGN itself already grants.
    func leaseIsFresh(_ attempt: SegmentAttempt, of identity: WorkerIdentity, now: Instant) -> Bool {
        guard let held = sessions[identity]?.held[attempt.leaseToken], held.attempt == attempt, !held.reported,
              let leasedAt = held.leasedAt
        else { return false }
        return now - leasedAt <= policy.acceptFromClaimWindow
    }

    /// Extensions committed: `current` holds the tokens the store extended; the others are gone.
    mutating func onLeasesExtended(
        _ attempts: [SegmentAttempt], worker identity: WorkerIdentity, check: LeaseCheck, current: Set<LeaseToken>,
        now: Instant
    ) -> [CoordinatorDirective] {
        guard sessions[identity] != nil else { return [] }
        var directives: [CoordinatorDirective] = []
        for attempt in attempts {
            let token = attempt.leaseToken
            if current.contains(token) {
                // A worker running an attempt this process never assigned (it did so before a
                // restart) holds a slot too — unless its result has already come in.
                if sessions[identity]?.held[token] == nil, !results.isPending(token), results.outcome(of: token) == nil {
                    sessions.hold(WorkerSession.HeldAttempt(attempt: attempt), by: identity)
                }
                if let acknowledged = check.acknowledged {
                    let ack = Ack(attempt: attempt, acknowledges: acknowledged, outcome: .accepted)
                    directives += send(.ack(ack), to: identity, now: now)
                }
            } else if results.isPending(token) || results.outcome(of: token).map({ $0 != .staleLease }) == true {
                // The lease ended because this attempt's own COMPLETE/FAIL was committed (a
                // PROGRESS raced it): nothing was lost, and a worker told `stale` or CANCEL might
                // delete the very output whose COMPLETE is being acknowledged.
                if let acknowledged = check.acknowledged {
                    let ack = Ack(attempt: attempt, acknowledges: acknowledged, outcome: .duplicate)
                    directives += send(.ack(ack), to: identity, now: now)
                }
            } else {
                sessions.drop(token, from: identity)
                directives.append(.notice(.leaseLost(identity, attempt)))
                if let acknowledged = check.acknowledged {
                    let ack = Ack(attempt: attempt, acknowledges: acknowledged, outcome: .stale)
                    directives += send(.ack(ack), to: identity, now: now)
                }
                directives += send(.cancel(Cancel(attempt: attempt, reason: .leaseLost)), to: identity, now: now)
            }
        }
        if case .helloRunning(let incarnation) = check {
            directives += helloWorkDone(identity, incarnation: incarnation, now: now)
        }
        return directives
    }

    /// The extension could not be committed: no ACK (the worker keeps its own deadline and sends
    /// PROGRESS again); a HELLO's running attempts stay counted as running.
    mutating func onLeaseExtensionFailed(worker identity: WorkerIdentity, check: LeaseCheck, now: Instant)
        -> [CoordinatorDirective]
    {
        guard case .helloRunning(let incarnation) = check else { return [] }
        return helloWorkDone(identity, incarnation: incarnation, now: now)
    }

    /// The store took leases back (expired, or released): the worker holding one, if any, is told
    /// to stop; a job that failed because of it cancels its other attempts.
    mutating func onLeasesTakenBack(_ leases: [TakenBackLease], now: Instant) -> [CoordinatorDirective] {
        var directives: [CoordinatorDirective] = []
        var failedJobs: [JobID] = []
        for lease in leases {
            for holding in sessions.holdings(of: lease.leaseToken) where !holding.held.reported {
                sessions.drop(lease.leaseToken, from: holding.identity)
                directives.append(.notice(.leaseLost(holding.identity, holding.held.attempt)))
                directives += send(.cancel(Cancel(attempt: holding.held.attempt, reason: .leaseLost)),
                                   to: holding.identity, now: now)
            }
            if lease.jobFailed && !failedJobs.contains(lease.job) { failedJobs.append(lease.job) }
        }
        for job in failedJobs { directives += onJobEnded(job, reason: .jobFailed, now: now) }
        return directives
    }

    /// A job was cancelled or failed: every attempt of it still running anywhere gets CANCEL, and
    /// its segment files are removed.
    mutating func onJobEnded(_ job: JobID, reason: Cancel.Reason, now: Instant) -> [CoordinatorDirective] {
        var directives: [CoordinatorDirective] = []
        backups.forget(job: job)
        let holdings = sessions.holdings(ofJob: job)
            .sorted { ($0.identity.description, $0.held.attempt.description) < ($1.identity.description, $1.held.attempt.description) }
        for holding in holdings {
            sessions.drop(holding.held.attempt.leaseToken, from: holding.identity)
            // An attempt whose result is being committed has stopped already: its ACK says the rest.
            guard !holding.held.reported else { continue }
            directives += send(.cancel(Cancel(attempt: holding.held.attempt, reason: reason)), to: holding.identity, now: now)
        }
        return directives + [.removeJobFiles(job)]
    }

    /// A send failed. An ASSIGN that did not go out is handed back at once without spending an
    /// attempt (ROUTER_MANDATORY is why we know). A worker whose current route is gone (its
    /// process died: the connection closed) is forgotten and its leases are released at once, so
    /// its segments run elsewhere within seconds, not at lease expiry. A failure to an older
    /// address of a worker that has since reconnected ends nothing.
    mutating func onSendFailed(
        _ message: CoordinatorMessage, to peer: WirePeer, worker identity: WorkerIdentity, error: WireError, now: Instant
    ) -> [CoordinatorDirective] {
        guard error.code != .closed else { return [] }  // shutting down: the next coordinator takes over
        var directives: [CoordinatorDirective] = [
            .notice(.undeliverable(identity, messageType: type(of: message.body).messageType, error: error.description))
        ]
        if case .assign(let assign) = message {
            sessions.drop(assign.attempt.leaseToken, from: identity)
            directives.append(.abandonAttempt(
                assign.attempt, reason: "the assignment could not be delivered: \(error.message)", spendsAttempt: false))
        }
        let gone: Set<WireError.Code> = [.unroutable, .unknownPeer, .peerMismatch, .peerRevoked]
        if gone.contains(error.code), sessions[identity]?.peer == peer, let session = sessions.close(identity) {
            directives.append(.notice(.workerForgotten(identity)))
            if let workerID = session.workerID {
                directives.append(.releaseWorker(
                    workerID: workerID, reason: "the worker's connection is gone (\(error.code.rawValue))"))
                directives.append(.markWorkers([workerID], online: false))
            }
        }
        return directives
    }
}
