/// The timings and limits of the coordinator's side of the worker protocol: heartbeats and
/// liveness, leases, the accept window and deadline, orphans, quarantines
/// (`CoordinatorConfiguration.sessions`).
public struct CoordinatorPolicy: Sendable, Hashable {
    /// How often each side sends HEARTBEAT when it has sent nothing else.
    public var heartbeatInterval: Duration
    /// Silent intervals after which a worker gets no new assignments.
    public var heartbeatLiveness: Int
    /// The lease an ASSIGN grants (and each ACCEPT/PROGRESS renews).
    public var leaseDuration: Duration
    /// How often a worker should send PROGRESS.
    public var progressInterval: Duration
    /// Silence after which a session is forgotten altogether (the worker must HELLO again).
    public var forgetAfter: Duration
    /// How often a live worker's `last_seen_at` is written.
    public var seenInterval: Duration
    /// How many committed result outcomes are remembered for resends.
    public var answeredCapacity: Int
    /// An ACCEPT received within this long of issuing the claim that granted its lease is
    /// acknowledged from that claim's commit instead of a new extension (docs/protocol.md,
    /// Leases). Zero sends every ACCEPT to the store.
    public var acceptFromClaimWindow: Duration
    /// An ASSIGN not answered by ACCEPT (or FAIL) within this long is taken back: the worker
    /// dropped it, or it never arrived.
    public var acceptDeadline: Duration
    /// A lease that no session of this coordinator holds and nobody has extended for this long
    /// is released (claimed by a coordinator that died before its ASSIGN went out, or held by
    /// a worker that never came back after a restart). Also how long after starting the
    /// coordinator waits before it judges any lease an orphan: the workers re-register first.
    public var orphanGrace: Duration
    /// The first quarantine of a worker that refused an assignment for a reason of its own
    /// (its spool, its encoders): no ASSIGN for this long. Each refusal in a row doubles it,
    /// up to `quarantineLimit`.
    public var quarantineBase: Duration
    public var quarantineLimit: Duration
    /// A running attempt may get a backup attempt on an idle worker, once nothing is left to
    /// claim, when it has run this many percent of what its cost predicts at its job's median
    /// pace (Spark's speculation multiplier, 1.5). 0 starts no backups.
    public var backupAfterPercent: Int
    /// …and at least this long.
    public var backupMinimumRuntime: Duration
    /// With nothing left to claim, how often the running attempts are looked over for a
    /// straggler as time passes (at once when a run commits or a worker falls idle).
    public var backupCheckInterval: Duration

    public init(
        heartbeatInterval: Duration = .seconds(2), heartbeatLiveness: Int = 3, leaseDuration: Duration = .seconds(60),
        progressInterval: Duration? = nil, forgetAfter: Duration? = nil, seenInterval: Duration = .seconds(15),
        answeredCapacity: Int = 16_384, acceptFromClaimWindow: Duration? = nil, acceptDeadline: Duration? = nil,
        orphanGrace: Duration? = nil, quarantineBase: Duration = .seconds(10), quarantineLimit: Duration = .seconds(300),
        backupAfterPercent: Int = 150, backupMinimumRuntime: Duration = .seconds(1),
        backupCheckInterval: Duration = .milliseconds(250)
    ) {
        self.heartbeatInterval = heartbeatInterval
        self.heartbeatLiveness = max(1, heartbeatLiveness)
        self.leaseDuration = leaseDuration
        self.progressInterval = progressInterval ?? min(.seconds(5), leaseDuration / 4)
        self.forgetAfter = forgetAfter ?? leaseDuration + heartbeatInterval * self.heartbeatLiveness
        self.seenInterval = seenInterval
        self.answeredCapacity = max(1, answeredCapacity)
        // Never more than the worker's smallest safety margin (a quarter of the lease, and
        // 5 s by default), which is what absorbs the overshoot (docs/protocol.md).
        self.acceptFromClaimWindow = max(.zero, min(acceptFromClaimWindow ?? .seconds(1), leaseDuration / 16))
        let silence = heartbeatInterval * self.heartbeatLiveness
        self.acceptDeadline = acceptDeadline ?? max(.seconds(5), silence)
        self.orphanGrace = orphanGrace ?? silence + heartbeatInterval * 2
        self.quarantineBase = max(.milliseconds(1), quarantineBase)
        self.quarantineLimit = max(self.quarantineBase, quarantineLimit)
        self.backupAfterPercent = max(0, backupAfterPercent)
        self.backupMinimumRuntime = max(.zero, backupMinimumRuntime)
        self.backupCheckInterval = max(.milliseconds(1), backupCheckInterval)
    }

    /// Silence after which a worker is considered silent.
    var silenceLimit: Duration { heartbeatInterval * heartbeatLiveness }
}
