import SpliceWire

/// Workers that refused an assignment for a reason of their own (their spool, their encoders),
/// by identity: no ASSIGN to them for a while, doubling with every refusal in a row. They
/// outlive a session: a worker that re-registers unchanged is still misconfigured.
struct Quarantines: Sendable {
    typealias Instant = ContinuousClock.Instant

    /// One worker's quarantine.
    struct Quarantine: Sendable, Hashable {
        var until: Instant
        var refusals: Int
        var reason: String
    }

    private var entries: [WorkerIdentity: Quarantine] = [:]
    let base: Duration
    let limit: Duration

    init(base: Duration, limit: Duration) {
        self.base = base
        self.limit = limit
    }

    /// Quarantines `identity` after another refusal in a row; how long for.
    mutating func refused(_ identity: WorkerIdentity, reason: String, now: Instant) -> Duration {
        let refusals = (entries[identity]?.refusals ?? 0) + 1
        let length = min(limit, base * (1 << min(refusals - 1, 20)))
        entries[identity] = Quarantine(until: now + length, refusals: refusals, reason: reason)
        return length
    }

    /// The worker completed a segment: its next refusal starts the count again.
    mutating func cleared(_ identity: WorkerIdentity) {
        entries[identity] = nil
    }

    /// Whether `identity` gets no ASSIGN at `now`.
    func isQuarantined(_ identity: WorkerIdentity, now: Instant) -> Bool {
        entries[identity].map { now < $0.until } ?? false
    }

    /// The quarantine in force at `now`, if any.
    func current(_ identity: WorkerIdentity, now: Instant) -> Quarantine? {
        entries[identity].flatMap { now < $0.until ? $0 : nil }
    }
}
