import SpliceWire

/// What the dispatcher keeps between claims: whether a claim may find anything, the claim in
/// flight (at most one, for every worker at once), and the sessions with free slots. The idle set
/// is folded in from the session table's changes, so a dispatch costs what changed since the last
/// one, not the number of connected workers.
struct Dispatcher: Sendable {
    typealias Instant = ContinuousClock.Instant

    /// Whether a claim may find something. Cleared when a claim comes back short, set again by
    /// `workAppeared()`; the generation keeps a wake-up that raced a short claim from being lost.
    private(set) var workAvailable = true
    private(set) var generation: UInt64 = 0
    /// A claim (or a backup claim) is in flight, issued at this time: its leases run until at
    /// least then + the lease duration.
    private(set) var claimIssuedAt: Instant?
    private(set) var claimInFlight = false
    /// Sessions that had free slots when last looked at, and quarantined ones that will once
    /// their quarantine ends.
    private(set) var idle: Set<WorkerIdentity> = []
    private var quarantined: Set<WorkerIdentity> = []

    /// Something may be claimable.
    mutating func workAppeared() {
        workAvailable = true
        generation &+= 1
    }

    /// A claim issued at `generation` came back with fewer segments than asked.
    mutating func claimCameBackShort(generation issued: UInt64) {
        if issued == generation { workAvailable = false }
    }

    /// The store is unreachable: no claims until work appears again (the poll timer).
    mutating func claimFailed() {
        workAvailable = false
        claimAnswered()
    }

    mutating func claimIssued(at now: Instant) {
        claimInFlight = true
        claimIssuedAt = now
    }

    /// The claim in flight was answered; when it was issued.
    @discardableResult
    mutating func claimAnswered() -> Instant? {
        defer {
            claimInFlight = false
            claimIssuedAt = nil
        }
        return claimIssuedAt
    }

    /// Folds the sessions changed since the last look into the idle set; true when a session
    /// became idle that was not before (a backup may now have somewhere to run).
    mutating func refresh(_ sessions: inout SessionTable, isQuarantined: (WorkerIdentity) -> Bool) -> Bool {
        var gained = false
        for identity in sessions.takeChanged().union(quarantined) {
            quarantined.remove(identity)
            guard let session = sessions[identity], session.freeSlots > 0, session.workerID != nil else {
                idle.remove(identity)
                continue
            }
            if isQuarantined(identity) {
                idle.remove(identity)
                quarantined.insert(identity)
            } else if idle.insert(identity).inserted {
                gained = true
            }
        }
        return gained
    }

    /// One demand per idle session for all its free slots, which are reserved for the claim.
    mutating func takeDemands(_ sessions: inout SessionTable) -> [ClaimDemand] {
        var demands: [ClaimDemand] = []
        demands.reserveCapacity(idle.count)
        for identity in idle {
            guard let session = sessions[identity], let workerID = session.workerID else { continue }
            let free = session.freeSlots
            guard free > 0 else { continue }
            sessions.update(identity) { $0.reserved += free }
            demands.append(ClaimDemand(worker: identity, workerID: workerID, limit: free, encoders: session.encoders))
        }
        idle.removeAll(keepingCapacity: true)
        return demands
    }

    /// The slots reserved for a claim are free again (its assignments now hold them).
    static func release(_ slots: Int, of identity: WorkerIdentity, in sessions: inout SessionTable) {
        sessions.update(identity) { $0.reserved = max(0, $0.reserved - slots) }
    }
}
