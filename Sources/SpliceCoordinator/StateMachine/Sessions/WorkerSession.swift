public import Foundation
import SpliceCore
public import SpliceWire

/// One registered worker as the state machine sees it: where to reach it, what it holds, and
/// when it was last heard from. Everything here can be lost (a coordinator restart): the store
/// has the leases, and the worker re-registers with what it holds.
///
/// Sessions live in a ``SessionTable``, which is the only place that changes `held` (through the
/// `table…` methods below): it keeps its indexes of who holds what in step with them.
struct WorkerSession: Sendable {
    enum Phase: Hashable, Sendable {
        /// HELLO received; the store lookup, the result commits and the lease checks are under
        /// way. No ASSIGN yet; WELCOME when they are all done.
        case registering
        /// WELCOME sent: assignable.
        case active
    }

    /// An attempt the worker is running (as far as the coordinator knows), or whose result is
    /// being committed (see `freeSlots`).
    struct HeldAttempt: Hashable, Sendable {
        var attempt: SegmentAttempt
        /// The worker's last PROGRESS, 0…1.
        var fraction: Double = 0
        /// Its COMPLETE or FAIL has arrived and is being committed: nothing left to cancel.
        var reported = false
        /// An ACCEPT or PROGRESS has arrived for it.
        var accepted = false
        /// When the claim that leased it to this worker was issued (nil when this process did
        /// not lease it, e.g. a HELLO's running attempt after a restart).
        var leasedAt: ContinuousClock.Instant?
        /// The segment's planned cost (0: unknown).
        var cost: Int64 = 0
        /// A backup attempt: another attempt of the same segment runs elsewhere.
        var isBackup = false
    }

    let identity: WorkerIdentity
    /// Distinguishes this registration from an earlier one of the same identity, so answers to
    /// an old HELLO's commits do not count towards a new one's WELCOME.
    let incarnation: UInt64
    /// The return address of the latest message.
    var peer: WirePeer
    var name: String
    var slots: Int
    var encoders: [String]
    /// The `workers.id` row, once registered.
    var workerID: UUID?
    var phase: Phase = .registering
    /// The HELLO that opened this session: the same HELLO again is a resend, not a new session.
    let registration: Hello
    /// The HELLO whose results and running attempts are handled once the worker is registered.
    var pendingHello: Hello?
    /// Commits and lease checks of the HELLO still outstanding; WELCOME goes out at zero.
    var pendingHelloWork = 0
    /// What it runs or has reported, by lease token (changed only by its ``SessionTable``).
    private(set) var held: [LeaseToken: HeldAttempt] = [:]
    /// How many of `held` are reported (their result is being committed).
    private(set) var reportedCount = 0
    /// Slots promised to the claim in flight.
    var reserved = 0
    var lastHeard: ContinuousClock.Instant
    var lastSent: ContinuousClock.Instant
    var lastSeenRecorded: ContinuousClock.Instant?
    /// Silent for `heartbeatLiveness` intervals: no new assignments until it speaks again.
    var silent = false
    /// It handed an attempt back because it is shutting down (FAIL `drained`): no new assignments
    /// for the rest of this session. It refuses every one, and each refusal puts the segment
    /// back at once, so a draining worker with a free slot was offered it again and again.
    var draining = false

    init(identity: WorkerIdentity, incarnation: UInt64, peer: WirePeer, hello: Hello, now: ContinuousClock.Instant) {
        self.identity = identity
        self.incarnation = incarnation
        self.peer = peer
        self.name = hello.workerName
        self.slots = hello.slots
        self.encoders = hello.encoders
        self.registration = hello
        self.pendingHello = hello
        self.lastHeard = now
        self.lastSent = now
        for attempt in hello.running {
            held[attempt.leaseToken] = HeldAttempt(attempt: attempt)
        }
    }

    /// Slots the dispatcher may fill now. A worker that has reported a result is free to start
    /// the next segment while the result is committed — up to `slots` results awaiting their
    /// commit; beyond that they count against its slots, so a fast worker cannot pile up results
    /// faster than the store takes them (backpressure, and a bound on ACK latency).
    var freeSlots: Int {
        guard phase == .active, !silent, !draining, workerID != nil else { return 0 }
        let busy = held.count - reportedCount + max(0, reportedCount - slots)
        return max(0, slots - busy - reserved)
    }

    /// Whether it runs an attempt that has not reported yet.
    var isRunningSomething: Bool { held.count > reportedCount }

    /// The worker-protocol version the coordinator speaks to it: the newest its HELLO names
    /// (the shell fills a version-2 HELLO's, which names none, from its envelope) that this build
    /// speaks too.
    var protocolVersion: Int { registration.sessionVersion }

    // MARK: - Changed by the session table only

    /// Holds `attempt` (replacing what it held under that token); what it replaced.
    mutating func tableHold(_ attempt: HeldAttempt) -> HeldAttempt? {
        let previous = held.updateValue(attempt, forKey: attempt.attempt.leaseToken)
        reportedCount += (attempt.reported ? 1 : 0) - (previous?.reported == true ? 1 : 0)
        return previous
    }

    /// Lets go of `token`; what it held under it.
    mutating func tableDrop(_ token: LeaseToken) -> HeldAttempt? {
        guard let previous = held.removeValue(forKey: token) else { return nil }
        if previous.reported { reportedCount -= 1 }
        return previous
    }

    /// Changes what it holds under `token` (its attempt stays the same).
    mutating func tableUpdate(_ token: LeaseToken, _ body: (inout HeldAttempt) -> Void) {
        guard var attempt = held[token] else { return }
        let wasReported = attempt.reported
        body(&attempt)
        reportedCount += (attempt.reported ? 1 : 0) - (wasReported ? 1 : 0)
        held[token] = attempt
    }
}

/// A worker session as `splice workers` and the tests see it.
public struct WorkerSessionSnapshot: Hashable, Sendable {
    public var identity: WorkerIdentity
    public var workerID: UUID?
    public var name: String
    public var slots: Int
    /// Attempts it is running.
    public var running: Int
    /// WELCOME sent.
    public var active: Bool
    /// Not heard from for `heartbeatLiveness` intervals.
    public var silent: Bool
    /// How much longer the worker gets no assignments, after refusing one for a reason of its own.
    public var quarantineRemaining: Duration?
    /// The refusal that put it in quarantine (`code: reason`).
    public var quarantineReason: String?
    /// What its HELLO said about its machine (nil from older workers): the cores it may use, the
    /// encoder threads per slot, and where its operations endpoint listens.
    public var usableCores: Int?
    public var threadsPerSlot: Int?
    public var metricsEndpoint: String?
    /// The worker-protocol version the session speaks (2: a worker one release older).
    public var protocolVersion: Int = WorkerProtocol.version
}

extension Hello {
    /// This HELLO as a coordinator registers it: a HELLO without `protocolVersions` (a version-2
    /// worker's) speaks only the version of the envelope it came in.
    func speaking(envelopeVersion version: Int) -> Hello {
        guard protocolVersions == nil else { return self }
        var hello = self
        hello.protocolVersions = ProtocolVersions(oldest: version, newest: version)
        return hello
    }

    /// The version a coordinator of this build talks in to the worker that sent this HELLO: the
    /// newest both speak.
    var sessionVersion: Int { min(protocolVersions?.newest ?? WorkerProtocol.version, WorkerProtocol.version) }
}
