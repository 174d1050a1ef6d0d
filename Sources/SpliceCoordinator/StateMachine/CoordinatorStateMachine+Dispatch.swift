import SpliceConcurrency
import SpliceCore
import SpliceWire

// Turning free slots into claims and claims into ASSIGNs; backup attempts of stragglers.
extension CoordinatorStateMachine {
    /// Something may be claimable: a plan was recorded, a lease was taken back, a backoff ended,
    /// or the poll timer fired.
    mutating func onWorkAvailable() -> [CoordinatorDirective] {
        dispatcher.workAppeared()
        return []
    }

    /// One claim for every worker with free slots, when none is in flight: slots freed while one
    /// is in flight go into the next, which batches claims under load without delaying them when
    /// idle — one store round trip per round, whatever the number of workers. Only the sessions
    /// that changed since the last dispatch are looked at.
    /// When the last claim came back short (nothing left to claim) and a slot is idle, it may
    /// start a backup attempt of a straggler instead.
    package mutating func dispatch(at now: ContinuousClock.Instant) -> [CoordinatorDirective] {
        guard !shuttingDown, !dispatcher.claimInFlight else { return [] }
        let quarantines = self.quarantines
        if dispatcher.refresh(&sessions, isQuarantined: { quarantines.isQuarantined($0, now: now) }) {
            backups.lookAgain()
        }
        guard dispatcher.workAvailable else { return dispatchBackup(at: now) }
        let demands = dispatcher.takeDemands(&sessions)
        guard !demands.isEmpty else { return [] }
        dispatcher.claimIssued(at: now)
        return [.claim(demands, generation: dispatcher.generation)]
    }

    /// A claim came back with these segments per worker: ASSIGN each. Fewer than asked means
    /// nothing else is claimable right now.
    mutating func onClaimed(
        _ assignments: [WorkerIdentity: [Assignment]], demands: [ClaimDemand], generation: UInt64, now: Instant
    ) -> [CoordinatorDirective] {
        let leasedAt = dispatcher.claimAnswered()
        let granted = assignments.values.reduce(0) { $0 + $1.count }
        if granted < demands.reduce(0, { $0 + $1.limit }) { dispatcher.claimCameBackShort(generation: generation) }
        var directives: [CoordinatorDirective] = []
        for demand in demands {
            let identity = demand.worker
            let claimed = assignments[identity] ?? []
            guard sessions[identity] != nil else {
                directives += claimed.map {
                    .abandonAttempt($0.attempt, reason: "the worker left before its assignment was sent", spendsAttempt: false)
                }
                continue
            }
            Dispatcher.release(demand.limit, of: identity, in: &sessions)
            for assignment in claimed {
                directives += assign(assignment, to: identity, leasedAt: leasedAt, isBackup: false, now: now)
            }
        }
        return directives
    }

    /// Records the attempt as held by the worker and sends its ASSIGN.
    private mutating func assign(
        _ assignment: Assignment, to identity: WorkerIdentity, leasedAt: Instant?, isBackup: Bool, now: Instant
    ) -> [CoordinatorDirective] {
        sessions.hold(WorkerSession.HeldAttempt(
            attempt: assignment.attempt, leasedAt: leasedAt, cost: assignment.cost, isBackup: isBackup), by: identity)
        let assign = Assign(
            attempt: assignment.attempt, outputPath: assignment.outputPath,
            leaseMilliseconds: policy.leaseDuration.wholeMilliseconds,
            progressIntervalMilliseconds: policy.progressInterval.wholeMilliseconds, spec: assignment.spec)
        return send(.assign(assign), to: identity, now: now)
    }

    /// The claim failed (the store was unreachable): the slots are free again, and claiming stops
    /// until the next `onWorkAvailable()` (the poll timer), so an unreachable store is not hammered.
    mutating func onClaimFailed(_ demands: [ClaimDemand]) -> [CoordinatorDirective] {
        dispatcher.claimFailed()
        for demand in demands { Dispatcher.release(demand.limit, of: demand.worker, in: &sessions) }
        return []
    }

    // MARK: - Backup attempts

    /// Nothing is left to claim and a slot is idle: start a second attempt of the running attempt
    /// most overdue (``BackupAttempts/straggler(in:idle:now:)``) on another worker. One segment
    /// gets one backup; the store refuses it when the job has segments to claim again or the
    /// attempt has ended.
    private mutating func dispatchBackup(at now: Instant) -> [CoordinatorDirective] {
        guard let (straggler, holder) = backups.straggler(in: sessions, idle: dispatcher.idle, now: now),
              let identity = dispatcher.idle.filter({ $0 != holder }).min(by: { $0.description < $1.description }),
              let workerID = sessions[identity]?.workerID
        else { return [] }
        sessions.update(identity) { $0.reserved += 1 }
        dispatcher.claimIssued(at: now)
        return [.claimBackup(of: straggler, for: ClaimDemand(worker: identity, workerID: workerID, limit: 1,
                                                             encoders: sessions[identity]?.encoders ?? []))]
    }

    /// The store answered a backup claim: ASSIGN it, or remember that this segment gets none.
    mutating func onBackupClaimed(
        _ assignment: Assignment?, of primary: SegmentAttempt, demand: ClaimDemand, now: Instant
    ) -> [CoordinatorDirective] {
        let leasedAt = dispatcher.claimAnswered()
        backups.backedUp(primary)
        backups.lookAgain()
        let identity = demand.worker
        guard sessions[identity] != nil else {
            return assignment.map {
                [.abandonAttempt($0.attempt, reason: "the worker left before its assignment was sent", spendsAttempt: false)]
            } ?? []
        }
        Dispatcher.release(demand.limit, of: identity, in: &sessions)
        guard let assignment else { return [] }
        return [.notice(.backupStarted(identity, assignment.attempt, of: primary))]
            + assign(assignment, to: identity, leasedAt: leasedAt, isBackup: true, now: now)
    }

    mutating func onBackupClaimFailed(_ demand: ClaimDemand) -> [CoordinatorDirective] {
        dispatcher.claimAnswered()
        Dispatcher.release(demand.limit, of: demand.worker, in: &sessions)
        return []
    }
}
