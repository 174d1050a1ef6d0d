import SpliceCore
import SpliceWire

/// The worker sessions of a coordinator, with the indexes that keep every per-event question
/// independent of how many workers are connected: who holds a lease token, which attempts run a
/// segment (a straggler and its backup), which run a job, and which sessions may have free slots
/// since the dispatcher last looked. A farm of a thousand workers costs the same per segment as
/// one of sixteen (docs/coordinator.md, Dispatch at farm scale).
///
/// Every change goes through this type: ``update(_:_:)`` for a session's own fields,
/// ``hold(_:by:)``, ``drop(_:from:)`` and ``updateHeld(_:of:_:)`` for what it holds.
struct SessionTable: Sendable {
    /// One segment of one job.
    struct SegmentKey: Sendable, Hashable {
        var job: JobID
        var segment: Int

        init(_ attempt: SegmentAttempt) {
            job = attempt.job
            segment = attempt.segment
        }
    }

    /// An attempt and the session holding it.
    struct Holding: Sendable {
        var identity: WorkerIdentity
        var held: WorkerSession.HeldAttempt
    }

    private var sessions: [WorkerIdentity: WorkerSession] = [:]
    /// Lease token → the sessions holding it: one, or two for the moment a restarted worker
    /// re-registers under a new identity while its old session lingers.
    private var holders: [LeaseToken: [WorkerIdentity]] = [:]
    /// The tokens held per segment and per job.
    private var bySegment: [SegmentKey: [LeaseToken]] = [:]
    private var byJob: [JobID: Set<LeaseToken>] = [:]
    /// Sessions changed since the dispatcher last took them: only these can have gained free slots.
    private var changed: Set<WorkerIdentity> = []

    // MARK: - Reading

    /// The session of `identity` (read in place: a lookup copies nothing).
    subscript(identity: WorkerIdentity) -> WorkerSession? {
        _read { yield sessions[identity] }
    }

    var count: Int { sessions.count }
    var identities: Dictionary<WorkerIdentity, WorkerSession>.Keys { sessions.keys }
    var all: Dictionary<WorkerIdentity, WorkerSession>.Values { sessions.values }

    /// Every session holding `token`, with what it holds under it.
    func holdings(of token: LeaseToken) -> [Holding] {
        (holders[token] ?? []).compactMap { identity in
            sessions[identity]?.held[token].map { Holding(identity: identity, held: $0) }
        }
    }

    /// Every attempt of `segment` held anywhere.
    func holdings(ofSegment segment: SegmentKey) -> [Holding] {
        (bySegment[segment] ?? []).flatMap(holdings(of:))
    }

    /// Every attempt of `job` held anywhere.
    func holdings(ofJob job: JobID) -> [Holding] {
        (byJob[job] ?? []).flatMap(holdings(of:))
    }

    /// Every token held by any session.
    var heldTokens: Dictionary<LeaseToken, [WorkerIdentity]>.Keys { holders.keys }

    // MARK: - Sessions

    /// Opens `session`, replacing any session of the same identity (and what it held).
    mutating func open(_ session: WorkerSession) {
        close(session.identity)
        sessions[session.identity] = session
        for held in session.held.values { index(held.attempt, by: session.identity) }
        changed.insert(session.identity)
    }

    /// Closes the session of `identity`; the session as it was.
    @discardableResult
    mutating func close(_ identity: WorkerIdentity) -> WorkerSession? {
        guard let session = sessions.removeValue(forKey: identity) else { return nil }
        for held in session.held.values { unindex(held.attempt, by: identity) }
        changed.remove(identity)
        return session
    }

    /// Changes the session's own fields (not what it holds); nil when there is no such session.
    @discardableResult
    mutating func update<Result>(_ identity: WorkerIdentity, _ body: (inout WorkerSession) -> Result) -> Result? {
        guard sessions[identity] != nil else { return nil }
        changed.insert(identity)
        return body(&sessions[identity]!)
    }

    // MARK: - Attempts

    /// `identity` holds `held` (nothing when there is no such session).
    mutating func hold(_ held: WorkerSession.HeldAttempt, by identity: WorkerIdentity) {
        guard sessions[identity] != nil else { return }
        changed.insert(identity)
        if sessions[identity]!.tableHold(held) == nil { index(held.attempt, by: identity) }
    }

    /// `identity` lets go of `token`; what it held under it.
    @discardableResult
    mutating func drop(_ token: LeaseToken, from identity: WorkerIdentity) -> WorkerSession.HeldAttempt? {
        guard sessions[identity] != nil, let held = sessions[identity]!.tableDrop(token) else { return nil }
        changed.insert(identity)
        unindex(held.attempt, by: identity)
        return held
    }

    /// Changes what `identity` holds under `token`, if it holds it.
    mutating func updateHeld(
        _ token: LeaseToken, of identity: WorkerIdentity, _ body: (inout WorkerSession.HeldAttempt) -> Void
    ) {
        guard sessions[identity]?.held[token] != nil else { return }
        changed.insert(identity)
        sessions[identity]!.tableUpdate(token) { held in
            body(&held)
            precondition(held.attempt.leaseToken == token, "a held attempt keeps its lease token")
        }
    }

    // MARK: - Dispatch

    /// The sessions changed since the last call: the only ones whose free slots can have grown.
    mutating func takeChanged() -> Set<WorkerIdentity> {
        defer { changed.removeAll(keepingCapacity: true) }
        return changed
    }

    /// Looks at `identity` again at the next ``takeChanged()`` (it was skipped for a reason that
    /// passes with time: a quarantine).
    mutating func revisit(_ identity: WorkerIdentity) {
        if sessions[identity] != nil { changed.insert(identity) }
    }

    // MARK: - Indexes

    private mutating func index(_ attempt: SegmentAttempt, by identity: WorkerIdentity) {
        let token = attempt.leaseToken
        if holders[token, default: []].isEmpty {
            bySegment[SegmentKey(attempt), default: []].append(token)
            byJob[attempt.job, default: []].insert(token)
        }
        holders[token, default: []].append(identity)
    }

    private mutating func unindex(_ attempt: SegmentAttempt, by identity: WorkerIdentity) {
        let token = attempt.leaseToken
        guard var holding = holders[token], let position = holding.firstIndex(of: identity) else { return }
        holding.remove(at: position)
        guard holding.isEmpty else {
            holders[token] = holding
            return
        }
        holders[token] = nil
        let segment = SegmentKey(attempt)
        bySegment[segment]?.removeAll { $0 == token }
        if bySegment[segment]?.isEmpty == true { bySegment[segment] = nil }
        byJob[attempt.job]?.remove(token)
        if byJob[attempt.job]?.isEmpty == true { byJob[attempt.job] = nil }
    }

    /// Whether the indexes say exactly what the sessions hold (for the tests).
    var indexesAreConsistent: Bool {
        var expected: [LeaseToken: Set<WorkerIdentity>] = [:]
        for session in sessions.values {
            for token in session.held.keys { expected[token, default: []].insert(session.identity) }
        }
        let indexed = holders.mapValues(Set.init)
        let segments = Set(bySegment.values.joined())
        let jobs = Set(byJob.values.joined())
        return indexed == expected && segments == Set(expected.keys) && jobs == Set(expected.keys)
            && sessions.values.allSatisfy { session in
                session.reportedCount == session.held.values.filter(\.reported).count
            }
    }
}
