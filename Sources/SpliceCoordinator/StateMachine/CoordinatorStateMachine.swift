import Foundation
import SpliceConcurrency
package import SpliceCore
package import SpliceWire

/// The coordinator's side of the worker protocol as a plain state machine: every event goes in
/// as a ``CoordinatorEvent`` and comes out as `CoordinatorDirective`s for the shell to carry out.
/// It performs no I/O and reads no clock — time is an argument — so every rule of
/// docs/protocol.md is tested without a socket or a database.
///
/// What it keeps is only what a restarted coordinator can afford to lose, in parts of their own
/// (as postgres-nio builds its connection machine out of smaller machines):
/// - ``SessionTable``: worker sessions (keyed by `WorkerIdentity`, never by routing id) and the
///   attempts each runs, indexed by token, segment and job;
/// - ``Dispatcher``: the claim in flight and the sessions with free slots;
/// - ``BackupAttempts``: each job's pace and the stragglers' backups;
/// - ``Quarantines``: workers that refused assignments for reasons of their own;
/// - ``ResultCommits``: results being committed (a resend waits for the same commit) and the
///   recent answers (a resend gets the same ACK).
/// Postgres holds the truth. The handlers live in extensions by concern (`+Sessions`,
/// `+Results`, `+Leases`, `+Dispatch`, `+Time`); none of them costs more with more workers
/// connected, except the timer's pass over the sessions.
///
/// Events go in through `handle(_:at:)`, one ``CoordinatorEvent`` at a time with the time it is
/// handled, as the worker's machine takes its events; the shell calls `dispatch(at:)` after every
/// event (or burst of events): it turns free slots into claims.
package struct CoordinatorStateMachine: Sendable {
    /// Timings and limits.
    package typealias Policy = CoordinatorPolicy

    typealias Instant = ContinuousClock.Instant

    package let policy: Policy
    /// Sent in WELCOME; identifies this coordinator process in the workers' logs.
    package let sessionName: String
    /// The leadership epoch this machine serves under, sent in WELCOME (nil: none, as in tests).
    package let epoch: Int64?
    var sessions = SessionTable()
    var dispatcher = Dispatcher()
    var backups: BackupAttempts
    var quarantines: Quarantines
    var results: ResultCommits
    /// Workers answered lately that they speak a version this build does not.
    var versionRefusals = VersionRefusals()
    var incarnations: UInt64 = 0
    package internal(set) var shuttingDown = false
    var farewellSent = false
    /// When the timer last ran: a gap far longer than its period means this process was not
    /// running (stopped, starved), and that time is not the workers' silence.
    var lastTick: Instant?

    package init(policy: Policy = Policy(), sessionName: String = UUID().uuidString.lowercased(), epoch: Int64? = nil) {
        self.policy = policy
        self.sessionName = sessionName
        self.epoch = epoch
        self.backups = BackupAttempts(
            afterPercent: policy.backupAfterPercent, minimumRuntime: policy.backupMinimumRuntime,
            checkInterval: policy.backupCheckInterval)
        self.quarantines = Quarantines(base: policy.quarantineBase, limit: policy.quarantineLimit)
        self.results = ResultCommits(answeredCapacity: policy.answeredCapacity)
    }

    /// Whether a claim may find something (cleared when a claim comes back short).
    package var workAvailable: Bool { dispatcher.workAvailable }

    // MARK: - Events

    /// Handles one event at `now` (the shell's monotonic clock) and returns what to do, in order.
    package mutating func handle(_ event: CoordinatorEvent, at now: ContinuousClock.Instant) -> [CoordinatorDirective] {
        switch event {
        case .received(let message, let peer): onMessage(message, from: peer, now: now)
        case .rejected(let rejection, let peer): onRejected(rejection, from: peer, now: now)
        case .workerRegistered(let identity, let workerID): onWorkerRegistered(identity, workerID: workerID, now: now)
        case .workerRefused(let identity, let reason): onWorkerRefused(identity, reason: reason)
        case .registrationFailed(let identity): onRegistrationFailed(identity)
        case .workerRevoked(let identity): onWorkerRevoked(identity)
        case .resultCommitted(let result, let outcome): onResultCommitted(result, outcome: outcome, now: now)
        case .resultCommitFailed(let result): onResultCommitFailed(result, now: now)
        case .leasesExtended(let attempts, let worker, let check, let current):
            onLeasesExtended(attempts, worker: worker, check: check, current: current, now: now)
        case .leaseExtensionFailed(_, let worker, let check):
            onLeaseExtensionFailed(worker: worker, check: check, now: now)
        case .leasesTakenBack(let leases): onLeasesTakenBack(leases, now: now)
        case .jobEnded(let job, let reason): onJobEnded(job, reason: reason, now: now)
        case .workAvailable: onWorkAvailable()
        case .claimed(let assignments, let demands, let generation):
            onClaimed(assignments, demands: demands, generation: generation, now: now)
        case .claimFailed(let demands): onClaimFailed(demands)
        case .backupClaimed(let assignment, let primary, let demand):
            onBackupClaimed(assignment, of: primary, demand: demand, now: now)
        case .backupClaimFailed(_, let demand): onBackupClaimFailed(demand)
        case .sendFailed(let message, let peer, let worker, let error):
            onSendFailed(message, to: peer, worker: worker, error: error, now: now)
        case .tick: onTick(now: now)
        case .drainStarted: stopDispatching()
        case .drained: onShutdown(now: now)
        }
    }

    /// A decoded message from a worker.
    private mutating func onMessage(_ message: WorkerMessage, from peer: WirePeer, now: Instant)
        -> [CoordinatorDirective]
    {
        guard let identity = WorkerIdentity(peer: peer) else { return [] }
        switch message {
        case .hello(let hello):
            return onHello(hello, identity: identity, peer: peer, now: now)
        case .disconnect(let disconnect):
            return onDisconnect(disconnect, identity: identity)
        default:
            break
        }
        guard sessions[identity] != nil else {
            let farewell = CoordinatorMessage.disconnect(Disconnect(reason: .reregister, detail: "unknown session: send HELLO"))
            return [
                .notice(.unknownSession(identity, messageType: type(of: message.body).messageType)),
                .send(farewell, to: peer, worker: identity),
            ]
        }
        var directives = heard(identity, peer: peer, now: now)
        switch message {
        case .accept(let accept):
            sessions.updateHeld(accept.attempt.leaseToken, of: identity) { $0.accepted = true }
            if leaseIsFresh(accept.attempt, of: identity, now: now) {
                let ack = Ack(attempt: accept.attempt, acknowledges: .accept, outcome: .accepted)
                directives += send(.ack(ack), to: identity, now: now)
            } else {
                directives.append(.extendLeases([accept.attempt], worker: identity, check: .accept))
            }
        case .progress(let progress):
            let fraction = progress.fraction.isFinite ? min(1, max(0, progress.fraction)) : 0
            sessions.updateHeld(progress.attempt.leaseToken, of: identity) {
                $0.fraction = fraction
                $0.accepted = true
            }
            directives.append(.extendLeases([progress.attempt], worker: identity, check: .progress))
        case .complete(let complete):
            directives += submit(.complete(complete), from: identity, fromHello: false, now: now).directives
        case .fail(let fail):
            if fail.blame == .worker { directives += quarantine(identity, because: fail, now: now) }
            if fail.code == .drained { sessions.update(identity) { $0.draining = true } }
            directives += submit(.fail(fail), from: identity, fromHello: false, now: now).directives
        case .heartbeat, .hello, .disconnect, .join:
            break  // JOIN is answered before the machine (JoinDesk)
        }
        return directives
    }

    /// A message the wire layer refused: logged, and a HELLO of a version this build does not speak
    /// answered with the versions it does (at most once per `VersionRefusals.interval`).
    private mutating func onRejected(_ rejection: WireRejection, from peer: WirePeer, now: Instant)
        -> [CoordinatorDirective]
    {
        let identity = WorkerIdentity(peer: peer)
        guard let identity, let refusal = versionRefusals.answer(rejection, from: identity, now: now),
              let version = rejection.version else {
            return [.notice(.dropped(rejection, from: identity))]
        }
        return [
            .notice(.versionRefused(identity, version: version)),
            .send(.disconnect(refusal), to: peer, worker: identity),
        ]
    }

    // MARK: - Quarantine

    /// A worker's refusal of an assignment for a reason of its own (not the segment's): no ASSIGN
    /// to it for a while. Its segment goes back without spending an attempt (the store's part).
    private mutating func quarantine(_ identity: WorkerIdentity, because fail: Fail, now: Instant)
        -> [CoordinatorDirective]
    {
        let reason = "\(fail.code): \(fail.reason)"
        let length = quarantines.refused(identity, reason: reason, now: now)
        sessions.revisit(identity)
        return [.notice(.workerQuarantined(identity, for: length, reason: reason))]
    }

    // MARK: - Sending

    /// A send to a session's latest return address; nothing when there is no such session.
    mutating func send(_ message: CoordinatorMessage, to identity: WorkerIdentity, now: Instant)
        -> [CoordinatorDirective]
    {
        guard let peer = sessions[identity]?.peer else { return [] }
        sessions.update(identity) { $0.lastSent = now }
        return [.send(message, to: peer, worker: identity)]
    }

    /// A send to the session if it still exists, else to the address the message came from.
    mutating func send(
        _ message: CoordinatorMessage, to identity: WorkerIdentity, fallback: WirePeer, now: Instant
    ) -> [CoordinatorDirective] {
        let sent = send(message, to: identity, now: now)
        return sent.isEmpty ? [.send(message, to: fallback, worker: identity)] : sent
    }

    // MARK: - Reading

    /// The sessions, for `splice workers`, with their quarantines as of `now`.
    package func sessionSnapshots(now: ContinuousClock.Instant) -> [WorkerSessionSnapshot] {
        sessions.all.map { snapshot(of: $0, now: now) }
    }

    func snapshot(of session: WorkerSession, now: Instant) -> WorkerSessionSnapshot {
        let quarantine = quarantines.current(session.identity, now: now)
        return WorkerSessionSnapshot(
            identity: session.identity, workerID: session.workerID, name: session.name, slots: session.slots,
            running: session.held.count, active: session.phase == .active, silent: session.silent,
            quarantineRemaining: quarantine.map { $0.until - now }, quarantineReason: quarantine?.reason,
            usableCores: session.registration.usableCores, threadsPerSlot: session.registration.threadsPerSlot,
            metricsEndpoint: session.registration.metricsEndpoint, protocolVersion: session.protocolVersion)
    }

    /// The worker-protocol version `identity`'s session speaks; nil when it has none.
    package func protocolVersion(of identity: WorkerIdentity) -> Int? {
        sessions[identity]?.protocolVersion
    }

    /// This coordinator is no longer the active one (its lease ran out, or another took over):
    /// every session is told — STANDBY (with what is known of the active one) to the workers that
    /// understand it, DISCONNECT `shutdown` to older ones, which then say HELLO again — and
    /// forgotten. Returns the sends and who was told, for the standby to remember.
    package mutating func standDown(epoch: Int64?, active: String?) -> (directives: [CoordinatorDirective],
                                                                      peers: [StandbyPeer]) {
        var directives: [CoordinatorDirective] = []
        var peers: [StandbyPeer] = []
        for session in sessions.all {
            let aware = session.registration.standbyAware == true
            peers.append(StandbyPeer(identity: session.identity, peer: session.peer, standbyAware: aware,
                                     protocolVersion: session.protocolVersion))
            let message: CoordinatorMessage = aware
                ? .standby(Standby(epoch: epoch, active: active))
                : .disconnect(Disconnect(reason: .shutdown, detail: "this coordinator is no longer the active one"))
            directives.append(.send(message, to: session.peer, worker: session.identity))
        }
        for peer in peers { sessions.close(peer.identity) }
        shuttingDown = true
        farewellSent = true
        return (directives, peers)
    }

    /// Whether `identity` has a welcomed session.
    package func isActive(_ identity: WorkerIdentity) -> Bool {
        sessions[identity]?.phase == .active
    }

    /// Every lease token a session of this process holds or whose result is being committed: the
    /// leases the orphan sweep must leave alone.
    package var heldLeaseTokens: Set<LeaseToken> {
        Set(results.pendingTokens).union(sessions.heldTokens)
    }

    /// The PROGRESS of the job's running attempts, one per segment (the further of a segment's
    /// attempt and its backup): summed, and weighted by the segments' costs.
    package func runningProgress(ofJob job: JobID) -> RunningProgress {
        RunningProgress(sessions.holdings(ofJob: job).map { ($0.held.attempt.segment, $0.held.fraction, $0.held.cost) })
    }
}
