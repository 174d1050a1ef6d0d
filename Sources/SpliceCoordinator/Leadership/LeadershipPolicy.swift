/// The timings of the coordinators' leadership (docs/coordinator.md, Standby coordinators): the
/// active coordinator holds a lease in the database that it renews; a standby takes over once the
/// lease has run out. `splice coordinator --leader-lease-seconds --leader-renew-seconds`.
public struct LeadershipPolicy: Sendable, Hashable {
    /// How long the lease lasts without a renewal: a standby takes over at most this long after
    /// the active coordinator's last renewal (plus a poll). The longest stall of the database or
    /// of the active coordinator that does not cost a take-over.
    public var lease: Duration
    /// How often the active coordinator renews its lease.
    public var renewInterval: Duration
    /// How often a standby looks whether it may take over.
    public var standbyPoll: Duration
    /// The active coordinator stops claiming segments, and steps down, once it is this close to
    /// the end of its lease as its own clock measures it (from when it sent its last renewal that
    /// succeeded) — before any standby can take over.
    public var stepDownMargin: Duration
    /// How long a take-over waits for the previous epoch's writes in flight before it terminates
    /// their database sessions (a coordinator stopped in the middle of a transaction).
    public var fenceLockWait: Duration

    public init(lease: Duration = .seconds(3), renewInterval: Duration? = nil, standbyPoll: Duration? = nil,
                stepDownMargin: Duration? = nil, fenceLockWait: Duration = .milliseconds(500)) {
        self.lease = lease
        self.renewInterval = renewInterval ?? lease / 3
        self.standbyPoll = standbyPoll ?? min(.milliseconds(250), lease / 8)
        self.stepDownMargin = stepDownMargin ?? lease / 4
        self.fenceLockWait = fenceLockWait
    }

    /// What cannot work, in the words of the flags; nil when all is well.
    public var problem: String? {
        if lease < .milliseconds(500) { return "--leader-lease-seconds must be at least 0.5" }
        if renewInterval <= .zero || renewInterval * 2 > lease - stepDownMargin {
            return "--leader-renew-seconds must be positive and leave two renewals before the active coordinator "
                + "steps down (a quarter of the lease before it ends): at most 3/8 of --leader-lease-seconds"
        }
        return nil
    }
}
