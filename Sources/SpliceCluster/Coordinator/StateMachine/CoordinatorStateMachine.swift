import Foundation
import SpliceConcurrency
package import SpliceCore
import SpliceStore
import SpliceWire

/// The coordinator's side of the worker protocol as a plain state machine: every event goes in
/// as a ``CoordinatorEvent`` and comes out as `CoordinatorDirective`s for the shell to carry out.
/// It performs no I/O and reads no clock — time is an argument — so every rule of
/// docs/protocol.md is tested without a socket or a database.
///
/// What it keeps is only what a restarted coordinator can afford to lose: worker sessions (keyed
/// by `WorkerIdentity`, never by routing id), the attempts each worker runs (for slot accounting,
/// progress and CANCEL fan-out), results being committed (so a resend waits for the same commit)
/// and the recent answers (so a resend gets the same ACK). Postgres holds the truth.
///
/// Events go in through `handle(_:at:)`, one ``CoordinatorEvent`` at a time with the time it is
/// handled, as the worker's machine takes its events; the shell calls `dispatch(at:)` after every
/// event (or burst of events): it turns free slots into claims.
package struct CoordinatorStateMachine: Sendable {
    /// Timings and limits.
    package typealias Policy = CoordinatorPolicy

    typealias Instant = ContinuousClock.Instant

    /// One report of a result waiting for its commit (the first, or a resend that came meanwhile).
    private struct ResultWaiter: Sendable {
        var identity: WorkerIdentity
        var incarnation: UInt64
        var peer: WirePeer
        var acknowledged: Ack.Acknowledged
        /// Part of a HELLO: its WELCOME waits for this commit.
        var fromHello: Bool
    }

    package let policy: Policy
    /// Sent in WELCOME; identifies this coordinator process in the workers' logs.
    package let sessionName: String
    private(set) var sessions: [WorkerIdentity: WorkerSession] = [:]
    private var pendingResults: [LeaseToken: [ResultWaiter]] = [:]
    private var answered: AnsweredResults
    /// Whether a claim may find something. Cleared when a claim comes back short, set again by
    /// `onWorkAvailable()`; the generation keeps a wake-up that raced a short claim from being lost.
    package private(set) var workAvailable = true
    private var workGeneration: UInt64 = 0
    /// At most one claim at a time, for all workers.
    private var claimInFlight = false
    /// When the claim in flight was issued: its leases run until at least this + `leaseDuration`.
    private var claimIssuedAt: Instant?
    private var incarnations: UInt64 = 0
    package private(set) var shuttingDown = false
    private var farewellSent = false
    /// Workers that refused assignments for reasons of their own, by identity (they outlive a
    /// session: a worker that re-registers unchanged is still misconfigured).
    private var quarantines: [WorkerIdentity: Quarantine] = [:]
    /// When the timer last ran: a gap far longer than its period means this process was not
    /// running (stopped, starved), and that time is not the workers' silence.
    private var lastTick: Instant?
    /// Per job: how long the attempts this process assigned ran until their result was committed,
    /// with their costs — the pace a straggler is judged by (the most recent `paceSamples`).
    private var finishedRuns: [JobID: [FinishedRun]] = [:]
    /// Segments that have had a backup attempt (or whose backup the store refused): one each.
    private var backedUp: Set<SegmentKey> = []

    package init(policy: Policy = Policy(), sessionName: String = UUID().uuidString.lowercased()) {
        self.policy = policy
        self.sessionName = sessionName
        self.answered = AnsweredResults(capacity: policy.answeredCapacity)
    }

    // MARK: - Events

    /// Handles one event at `now` (the shell's monotonic clock) and returns what to do, in order.
    package mutating func handle(_ event: CoordinatorEvent, at now: ContinuousClock.Instant) -> [CoordinatorDirective] {
        switch event {
        case .received(let message, let peer): onMessage(message, from: peer, now: now)
        case .rejected(let rejection, let peer): onRejected(rejection, from: peer, now: now)
        case .workerRegistered(let identity, let workerID): onWorkerRegistered(identity, workerID: workerID, now: now)
        case .workerRefused(let identity, let reason): onWorkerRefused(identity, reason: reason, now: now)
        case .registrationFailed(let identity): onRegistrationFailed(identity)
        case .workerRevoked(let identity): onWorkerRevoked(identity)
        case .resultCommitted(let result, let outcome): onResultCommitted(result, outcome: outcome, now: now)
        case .resultCommitFailed(let result): onResultCommitFailed(result, now: now)
        case .leasesExtended(let attempts, let worker, let check, let current):
            onLeasesExtended(attempts, worker: worker, check: check, current: current, now: now)
        case .leaseExtensionFailed(let attempts, let worker, let check):
            onLeaseExtensionFailed(attempts, worker: worker, check: check, now: now)
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

    // MARK: - Messages

    /// A decoded message from a worker.
    private mutating func onMessage(_ message: WorkerMessage, from peer: WirePeer, now: ContinuousClock.Instant)
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
            sessions[identity]?.held[accept.attempt.leaseToken]?.accepted = true
            if leaseIsFresh(accept.attempt, of: identity, now: now) {
                let ack = Ack(attempt: accept.attempt, acknowledges: .accept, outcome: .accepted)
                directives += send(.ack(ack), to: identity, now: now)
            } else {
                directives.append(.extendLeases([accept.attempt], worker: identity, check: .accept))
            }
        case .progress(let progress):
            let fraction = progress.fraction.isFinite ? min(1, max(0, progress.fraction)) : 0
            sessions[identity]?.held[progress.attempt.leaseToken]?.fraction = fraction
            sessions[identity]?.held[progress.attempt.leaseToken]?.accepted = true
            directives.append(.extendLeases([progress.attempt], worker: identity, check: .progress))
        case .complete(let complete):
            directives += submit(.complete(complete), from: identity, fromHello: false, now: now).directives
        case .fail(let fail):
            if fail.blame == .worker { directives += quarantine(identity, because: fail, now: now) }
            directives += submit(.fail(fail), from: identity, fromHello: false, now: now).directives
        case .heartbeat, .hello, .disconnect:
            break
        }
        return directives
    }

    /// A message the endpoint dropped (garbled, wrong protocol, unknown type…). It is already
    /// counted in `WireCounters`; here it only becomes a log line.
    private mutating func onRejected(_ rejection: WireRejection, from peer: WirePeer, now: ContinuousClock.Instant)
        -> [CoordinatorDirective]
    {
        [.notice(.dropped(rejection, from: WorkerIdentity(peer: peer)))]
    }

    // MARK: - Sessions

    private mutating func onHello(_ hello: Hello, identity: WorkerIdentity, peer: WirePeer, now: Instant)
        -> [CoordinatorDirective]
    {
        guard hello.slots > 0 else {
            let detail = "HELLO must offer at least one slot, not \(hello.slots)"
            return [
                .notice(.invalidHello(identity, detail: detail)),
                .send(.disconnect(Disconnect(reason: .protocolError, detail: detail)), to: peer, worker: identity),
            ]
        }
        var directives: [CoordinatorDirective] = []
        if let existing = sessions[identity] {
            // A HELLO resent while the first is being registered changes nothing.
            if existing.phase == .registering { return heard(identity, peer: peer, now: now) }
            // The same HELLO again crossed our WELCOME (workers resend HELLO until WELCOME
            // arrives): welcome it again, and keep what was assigned since.
            if existing.registration == hello { return heard(identity, peer: peer, now: now) + welcome(identity, now: now) }
            // The worker registers again (it restarted, or lost us for a while). What it no longer
            // mentions it does not have: hand those attempts back now instead of at lease expiry.
            let mentioned = Set(hello.running.map(\.leaseToken) + hello.finished.map(\.attempt.leaseToken)
                + hello.failed.map(\.attempt.leaseToken))
            for held in existing.held.values.sorted(by: { $0.attempt.description < $1.attempt.description })
            where !mentioned.contains(held.attempt.leaseToken) {
                directives.append(.notice(.orphanedAttempt(identity, held.attempt)))
                directives.append(.abandonAttempt(
                    held.attempt, reason: "the worker registered again without it", spendsAttempt: true))
            }
        }
        incarnations += 1
        sessions[identity] = WorkerSession(identity: identity, incarnation: incarnations, peer: peer, hello: hello, now: now)
        directives.append(.notice(.workerRegistering(identity, name: hello.workerName, slots: hello.slots)))
        directives.append(.registerWorker(identity, name: hello.workerName, slots: hello.slots, encoders: hello.encoders))
        return directives
    }

    /// The store knows the worker (row `workerID`): commit what its HELLO holds, check what it
    /// runs, and WELCOME it once that is done.
    private mutating func onWorkerRegistered(_ identity: WorkerIdentity, workerID: UUID, now: ContinuousClock.Instant)
        -> [CoordinatorDirective]
    {
        guard var session = sessions[identity], session.phase == .registering, let hello = session.pendingHello else {
            return []
        }
        session.workerID = workerID
        session.pendingHello = nil
        sessions[identity] = session
        var directives: [CoordinatorDirective] = []
        var outstanding = 0
        for result in hello.finished.map(WorkerResult.complete) + hello.failed.map(WorkerResult.fail) {
            let submitted = submit(result, from: identity, fromHello: true, now: now)
            directives += submitted.directives
            if submitted.awaitingCommit { outstanding += 1 }
        }
        let running = hello.running.filter { session.held[$0.leaseToken] != nil }
        if !running.isEmpty {
            directives.append(.extendLeases(running, worker: identity, check: .helloRunning(incarnation: session.incarnation)))
            outstanding += 1
        }
        sessions[identity]?.pendingHelloWork += outstanding
        return directives + welcomeIfReady(identity, now: now)
    }

    /// The worker may not register (its key is unknown or revoked): tell it and forget it.
    private mutating func onWorkerRefused(_ identity: WorkerIdentity, reason: String, now: ContinuousClock.Instant)
        -> [CoordinatorDirective]
    {
        guard let session = sessions.removeValue(forKey: identity) else { return [] }
        return [
            .notice(.workerRefused(identity, reason: reason)),
            .send(.disconnect(Disconnect(reason: .revoked, detail: reason)), to: session.peer, worker: identity),
        ]
    }

    /// Registering failed (the store was unreachable): forget the session; the worker resends
    /// HELLO until it is welcomed.
    private mutating func onRegistrationFailed(_ identity: WorkerIdentity) -> [CoordinatorDirective] {
        if sessions[identity]?.phase == .registering { sessions[identity] = nil }
        return []
    }

    /// The key was revoked; the shell has already cut off its connections.
    private mutating func onWorkerRevoked(_ identity: WorkerIdentity) -> [CoordinatorDirective] {
        guard sessions.removeValue(forKey: identity) != nil else { return [] }
        return [.notice(.workerRefused(identity, reason: "key revoked"))]
    }

    private mutating func onDisconnect(_ disconnect: Disconnect, identity: WorkerIdentity) -> [CoordinatorDirective] {
        guard let session = sessions.removeValue(forKey: identity) else { return [] }
        var directives: [CoordinatorDirective] = [.notice(.workerLeft(identity, reason: disconnect.reason))]
        if let workerID = session.workerID {
            let reason = disconnect.detail.isEmpty
                ? "the worker disconnected (\(disconnect.reason.rawValue))"
                : "the worker disconnected (\(disconnect.reason.rawValue)): \(disconnect.detail)"
            directives.append(.releaseWorker(workerID: workerID, reason: reason))
            directives.append(.markWorkers([workerID], online: false))
        }
        return directives
    }

    /// Notes that `identity` spoke: refreshes liveness and its return address.
    private mutating func heard(_ identity: WorkerIdentity, peer: WirePeer, now: Instant) -> [CoordinatorDirective] {
        guard var session = sessions[identity] else { return [] }
        session.lastHeard = now
        session.peer = peer
        let wasSilent = session.silent
        session.silent = false
        sessions[identity] = session
        return wasSilent ? [.notice(.workerBack(identity))] : []
    }

    /// One of a HELLO's commits or checks is done; WELCOME when none is left.
    private mutating func helloWorkDone(_ identity: WorkerIdentity, incarnation: UInt64, now: Instant)
        -> [CoordinatorDirective]
    {
        guard let session = sessions[identity], session.incarnation == incarnation, session.phase == .registering else {
            return []
        }
        sessions[identity]?.pendingHelloWork -= 1
        return welcomeIfReady(identity, now: now)
    }

    private mutating func welcomeIfReady(_ identity: WorkerIdentity, now: Instant) -> [CoordinatorDirective] {
        guard let session = sessions[identity], session.phase == .registering, session.pendingHello == nil,
            session.pendingHelloWork <= 0, let workerID = session.workerID
        else { return [] }
        sessions[identity]?.phase = .active
        return [.notice(.workerWelcomed(identity, workerID: workerID, running: session.held.count))]
            + welcome(identity, now: now)
    }

    private mutating func welcome(_ identity: WorkerIdentity, now: Instant) -> [CoordinatorDirective] {
        let welcome = Welcome(
            session: sessionName, heartbeatIntervalMilliseconds: policy.heartbeatInterval.wholeMilliseconds,
            heartbeatLiveness: policy.heartbeatLiveness)
        return send(.welcome(welcome), to: identity, now: now)
    }

    // MARK: - Results

    /// Queues a COMPLETE/FAIL for its commit, or answers a resend at once.
    private mutating func submit(_ result: WorkerResult, from identity: WorkerIdentity, fromHello: Bool, now: Instant)
        -> (directives: [CoordinatorDirective], awaitingCommit: Bool)
    {
        let token = result.attempt.leaseToken
        guard let session = sessions[identity] else { return ([], false) }
        if let outcome = answered[token] {
            sessions[identity]?.held[token] = nil
            let ack = Ack(attempt: result.attempt, acknowledges: result.acknowledged, outcome: outcome.resendAckOutcome)
            return (send(.ack(ack), to: identity, now: now), false)
        }
        // The worker is no longer running the attempt; its slot frees when the result is committed.
        sessions[identity]?.held[token]?.reported = true
        let waiter = ResultWaiter(
            identity: identity, incarnation: session.incarnation, peer: session.peer,
            acknowledged: result.acknowledged, fromHello: fromHello)
        if pendingResults[token] != nil {
            pendingResults[token]?.append(waiter)
            return ([], true)
        }
        pendingResults[token] = [waiter]
        return ([.commitResult(result)], true)
    }

    /// The result is committed: ACK every report of it that waited, then act on the outcome.
    private mutating func onResultCommitted(_ result: WorkerResult, outcome: ResultOutcome, now: ContinuousClock.Instant)
        -> [CoordinatorDirective]
    {
        let token = result.attempt.leaseToken
        answered.record(outcome, for: token)
        var directives: [CoordinatorDirective] = []
        let waiters = pendingResults.removeValue(forKey: token) ?? []
        let run = waiters.compactMap { sessions[$0.identity]?.held[token] }.first
        for (position, waiter) in waiters.enumerated() {
            sessions[waiter.identity]?.held[token] = nil
            let ackOutcome = position == 0 ? outcome.ackOutcome : outcome.resendAckOutcome
            let ack = Ack(attempt: result.attempt, acknowledges: waiter.acknowledged, outcome: ackOutcome)
            directives += send(.ack(ack), to: waiter.identity, fallback: waiter.peer, now: now)
            if waiter.fromHello {
                directives += helloWorkDone(waiter.identity, incarnation: waiter.incarnation, now: now)
            }
        }
        if case .completed = outcome, let first = waiters.first { quarantines[first.identity] = nil }
        if case .completed = outcome {
            if let run, let leasedAt = run.leasedAt { recordRun(of: run, lasting: now - leasedAt) }
            directives += supersede(result.attempt, now: now)
        }
        switch outcome {
        case .completed(jobReadyToStitch: true):
            forgetPace(of: result.attempt.job)
            directives.append(.wakeStitcher)
        case .recorded(.jobFailed):
            directives += onJobEnded(result.attempt.job, reason: .jobFailed, now: now)
        default:
            break
        }
        return directives
    }

    /// The commit failed (the store stayed unreachable): no ACK, so the worker resends.
    private mutating func onResultCommitFailed(_ result: WorkerResult, now: ContinuousClock.Instant)
        -> [CoordinatorDirective]
    {
        var directives: [CoordinatorDirective] = []
        for waiter in pendingResults.removeValue(forKey: result.attempt.leaseToken) ?? [] {
            sessions[waiter.identity]?.held[result.attempt.leaseToken] = nil
            if waiter.fromHello {
                directives += helloWorkDone(waiter.identity, incarnation: waiter.incarnation, now: now)
            }
        }
        return directives
    }

    // MARK: - Leases

    /// Whether an ACCEPT can be answered from the commit of the claim that granted its lease: this
    /// process assigned the attempt to this worker within `acceptFromClaimWindow`, and nothing has
    /// taken it back since (a reaped, released or cancelled lease leaves `held`). That commit made
    /// the lease run until at least the claim's issue time + `leaseDuration`; the worker's
    /// deadline becomes the ACCEPT's send time + `leaseDuration`, later by less than the window,
    /// which its safety margin covers — the same overshoot the ASSIGN itself already grants.
    private func leaseIsFresh(_ attempt: SegmentAttempt, of identity: WorkerIdentity, now: Instant) -> Bool {
        guard let held = sessions[identity]?.held[attempt.leaseToken], held.attempt == attempt, !held.reported,
              let leasedAt = held.leasedAt
        else { return false }
        return now - leasedAt <= policy.acceptFromClaimWindow
    }

    /// Extensions committed: `current` holds the tokens the store extended; the others are gone.
    private mutating func onLeasesExtended(
        _ attempts: [SegmentAttempt], worker identity: WorkerIdentity, check: LeaseCheck, current: Set<LeaseToken>,
        now: ContinuousClock.Instant
    ) -> [CoordinatorDirective] {
        guard sessions[identity] != nil else { return [] }
        var directives: [CoordinatorDirective] = []
        for attempt in attempts {
            let token = attempt.leaseToken
            if current.contains(token) {
                // A worker running an attempt this process never assigned (it did so before a
                // restart) holds a slot too — unless its result has already come in.
                if sessions[identity]?.held[token] == nil, pendingResults[token] == nil, answered[token] == nil {
                    sessions[identity]?.held[token] = WorkerSession.HeldAttempt(attempt: attempt)
                }
                if let acknowledged = check.acknowledged {
                    let ack = Ack(attempt: attempt, acknowledges: acknowledged, outcome: .accepted)
                    directives += send(.ack(ack), to: identity, now: now)
                }
            } else if pendingResults[token] != nil || answered[token].map({ $0 != .staleLease }) == true {
                // The lease ended because this attempt's own COMPLETE/FAIL was committed (a
                // PROGRESS raced it): nothing was lost, and a worker told `stale` or CANCEL might
                // delete the very output whose COMPLETE is being acknowledged.
                if let acknowledged = check.acknowledged {
                    let ack = Ack(attempt: attempt, acknowledges: acknowledged, outcome: .duplicate)
                    directives += send(.ack(ack), to: identity, now: now)
                }
            } else {
                sessions[identity]?.held[token] = nil
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
    private mutating func onLeaseExtensionFailed(
        _ attempts: [SegmentAttempt], worker identity: WorkerIdentity, check: LeaseCheck, now: ContinuousClock.Instant
    ) -> [CoordinatorDirective] {
        guard case .helloRunning(let incarnation) = check else { return [] }
        return helloWorkDone(identity, incarnation: incarnation, now: now)
    }

    /// The store took leases back (expired, or released): the worker holding one, if any, is told
    /// to stop; a job that failed because of it cancels its other attempts.
    private mutating func onLeasesTakenBack(_ leases: [TakenBackLease], now: ContinuousClock.Instant)
        -> [CoordinatorDirective]
    {
        var directives: [CoordinatorDirective] = []
        var failedJobs: [JobID] = []
        for lease in leases {
            for (identity, session) in sessions {
                guard let held = session.held[lease.leaseToken], !held.reported else { continue }
                sessions[identity]?.held[lease.leaseToken] = nil
                directives.append(.notice(.leaseLost(identity, held.attempt)))
                directives += send(.cancel(Cancel(attempt: held.attempt, reason: .leaseLost)), to: identity, now: now)
            }
            if lease.jobFailed && !failedJobs.contains(lease.job) { failedJobs.append(lease.job) }
        }
        for job in failedJobs { directives += onJobEnded(job, reason: .jobFailed, now: now) }
        return directives
    }

    /// A job was cancelled or failed: every attempt of it still running anywhere gets CANCEL, and
    /// its segment files are removed.
    private mutating func onJobEnded(_ job: JobID, reason: Cancel.Reason, now: ContinuousClock.Instant)
        -> [CoordinatorDirective]
    {
        var directives: [CoordinatorDirective] = []
        forgetPace(of: job)
        for (identity, session) in sessions {
            for held in session.held.values where held.attempt.job == job {
                sessions[identity]?.held[held.attempt.leaseToken] = nil
                // An attempt whose result is being committed has stopped already: its ACK says the rest.
                guard !held.reported else { continue }
                directives += send(.cancel(Cancel(attempt: held.attempt, reason: reason)), to: identity, now: now)
            }
        }
        return directives + [.removeJobFiles(job)]
    }

    // MARK: - Dispatch

    /// Something may be claimable: a plan was recorded, a lease was taken back, a backoff ended,
    /// or the poll timer fired.
    private mutating func onWorkAvailable() -> [CoordinatorDirective] {
        workAvailable = true
        workGeneration &+= 1
        return []
    }

    /// One claim for every worker with free slots, when none is in flight: slots freed while one
    /// is in flight go into the next, which batches claims under load without delaying them when
    /// idle — one store round trip per round, whatever the number of workers.
    /// When the last claim came back short (nothing left to claim) and a slot is idle, it may
    /// start a backup attempt of a straggler instead (`dispatchBackup(at:)`).
    package mutating func dispatch(at now: ContinuousClock.Instant) -> [CoordinatorDirective] {
        guard !shuttingDown, !claimInFlight else { return [] }
        guard workAvailable else { return dispatchBackup(at: now) }
        var demands: [ClaimDemand] = []
        for (identity, session) in sessions {
            let free = session.freeSlots
            guard free > 0, let workerID = session.workerID, !isQuarantined(identity, now: now) else { continue }
            sessions[identity]?.reserved += free
            demands.append(ClaimDemand(worker: identity, workerID: workerID, limit: free))
        }
        guard !demands.isEmpty else { return [] }
        claimInFlight = true
        claimIssuedAt = now
        return [.claim(demands, generation: workGeneration)]
    }

    /// A claim came back with these segments per worker: ASSIGN each. Fewer than asked means
    /// nothing else is claimable right now.
    private mutating func onClaimed(
        _ assignments: [WorkerIdentity: [Assignment]], demands: [ClaimDemand], generation: UInt64,
        now: ContinuousClock.Instant
    ) -> [CoordinatorDirective] {
        claimInFlight = false
        let leasedAt = claimIssuedAt
        claimIssuedAt = nil
        let granted = assignments.values.reduce(0) { $0 + $1.count }
        if granted < demands.reduce(0, { $0 + $1.limit }) && generation == workGeneration { workAvailable = false }
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
            releaseReservation(identity, slots: demand.limit)
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
        sessions[identity]?.held[assignment.attempt.leaseToken] = WorkerSession.HeldAttempt(
            attempt: assignment.attempt, leasedAt: leasedAt, cost: assignment.cost, isBackup: isBackup)
        let assign = Assign(
            attempt: assignment.attempt, outputPath: assignment.outputPath,
            leaseMilliseconds: policy.leaseDuration.wholeMilliseconds,
            progressIntervalMilliseconds: policy.progressInterval.wholeMilliseconds, spec: assignment.spec)
        return send(.assign(assign), to: identity, now: now)
    }

    /// The claim failed (the store was unreachable): the slots are free again, and claiming stops
    /// until the next `onWorkAvailable()` (the poll timer), so an unreachable store is not hammered.
    private mutating func onClaimFailed(_ demands: [ClaimDemand]) -> [CoordinatorDirective] {
        claimInFlight = false
        claimIssuedAt = nil
        workAvailable = false
        for demand in demands { releaseReservation(demand.worker, slots: demand.limit) }
        return []
    }

    private mutating func releaseReservation(_ identity: WorkerIdentity, slots: Int) {
        guard var session = sessions[identity] else { return }
        session.reserved = max(0, session.reserved - slots)
        sessions[identity] = session
    }

    /// A send failed. An ASSIGN that did not go out is handed back at once without spending an
    /// attempt (ROUTER_MANDATORY is why we know). A worker whose current route is gone (its
    /// process died: the connection closed) is forgotten and its leases are released at once, so
    /// its segments run elsewhere within seconds, not at lease expiry. A failure to an older
    /// address of a worker that has since reconnected ends nothing.
    private mutating func onSendFailed(
        _ message: CoordinatorMessage, to peer: WirePeer, worker identity: WorkerIdentity, error: WireError,
        now: ContinuousClock.Instant
    ) -> [CoordinatorDirective] {
        guard error.code != .closed else { return [] }  // shutting down: the next coordinator takes over
        var directives: [CoordinatorDirective] = [
            .notice(.undeliverable(identity, messageType: type(of: message.body).messageType, error: error.description))
        ]
        if case .assign(let assign) = message {
            sessions[identity]?.held[assign.attempt.leaseToken] = nil
            directives.append(.abandonAttempt(
                assign.attempt, reason: "the assignment could not be delivered: \(error.message)", spendsAttempt: false))
        }
        let gone: Set<WireError.Code> = [.unroutable, .unknownPeer, .peerMismatch, .peerRevoked]
        if gone.contains(error.code), sessions[identity]?.peer == peer, let session = sessions.removeValue(forKey: identity) {
            directives.append(.notice(.workerForgotten(identity)))
            if let workerID = session.workerID {
                directives.append(.releaseWorker(
                    workerID: workerID, reason: "the worker's connection is gone (\(error.code.rawValue))"))
                directives.append(.markWorkers([workerID], online: false))
            }
        }
        return directives
    }

    // MARK: - Backup attempts

    /// A committed attempt: how long it ran (from its claim to its commit) for its cost.
    struct FinishedRun: Sendable, Hashable {
        var elapsed: Duration
        var cost: Int64
    }

    /// One segment of one job.
    struct SegmentKey: Sendable, Hashable {
        var job: JobID
        var segment: Int

        init(_ attempt: SegmentAttempt) {
            job = attempt.job
            segment = attempt.segment
        }
    }

    /// How many committed runs of a job its pace is taken from (the most recent).
    static let paceSamples = 64

    /// Nothing is left to claim and a slot is idle: start a second attempt of the running attempt
    /// most overdue — one that has run longer than `backupAfterPercent` of what its cost predicts
    /// at the job's median pace so far (and at least `backupMinimumRuntime`) — on another worker
    /// (MapReduce's backup tasks, Spark's speculation). One segment gets one backup; the store
    /// refuses it when the job has segments to claim again or the attempt has ended.
    private mutating func dispatchBackup(at now: Instant) -> [CoordinatorDirective] {
        guard policy.backupAfterPercent > 0 else { return [] }
        let idle = sessions.values.filter { session in
            session.freeSlots > 0 && session.workerID != nil && !isQuarantined(session.identity, now: now)
        }
        let candidates = Set(idle.map(\.identity))
        guard let (straggler, holder) = straggler(now: now, backedUpBy: candidates),
              let session = idle.filter({ $0.identity != holder })
                .min(by: { $0.identity.description < $1.identity.description }),
              let workerID = session.workerID
        else { return [] }
        sessions[session.identity]?.reserved += 1
        claimInFlight = true
        claimIssuedAt = now
        return [.claimBackup(of: straggler, for: ClaimDemand(worker: session.identity, workerID: workerID, limit: 1))]
    }

    /// The running attempt furthest past its backup threshold that one of `idle` other than its
    /// own worker can take, and the worker running it.
    private func straggler(now: Instant, backedUpBy idle: Set<WorkerIdentity>) -> (SegmentAttempt, WorkerIdentity)? {
        var best: (attempt: SegmentAttempt, holder: WorkerIdentity, overdue: Duration)?
        for (identity, session) in sessions where !idle.subtracting([identity]).isEmpty {
            for held in session.held.values {
                guard !held.reported, !held.isBackup, let leasedAt = held.leasedAt,
                      !backedUp.contains(SegmentKey(held.attempt)),
                      let expected = expectedRuntime(cost: held.cost, job: held.attempt.job)
                else { continue }
                let threshold = max(policy.backupMinimumRuntime, expected * policy.backupAfterPercent / 100)
                let overdue = now - leasedAt - threshold
                guard overdue > .zero else { continue }
                if let current = best, current.overdue > overdue
                    || (current.overdue == overdue && current.attempt.description < held.attempt.description) {
                    continue
                }
                best = (held.attempt, identity, overdue)
            }
        }
        return best.map { ($0.attempt, $0.holder) }
    }

    /// What an attempt of `cost` should take at the job's median pace (time per unit of cost);
    /// nil before any of the job's attempts has committed here.
    func expectedRuntime(cost: Int64, job: JobID) -> Duration? {
        guard let runs = finishedRuns[job], !runs.isEmpty else { return nil }
        let paces = runs.map { $0.elapsed / max(1, $0.cost) }.sorted()
        return paces[paces.count / 2] * max(1, cost)
    }

    private mutating func recordRun(of held: WorkerSession.HeldAttempt, lasting elapsed: Duration) {
        var runs = finishedRuns[held.attempt.job] ?? []
        runs.append(FinishedRun(elapsed: elapsed, cost: held.cost))
        finishedRuns[held.attempt.job] = Array(runs.suffix(Self.paceSamples))
    }

    private mutating func forgetPace(of job: JobID) {
        finishedRuns[job] = nil
        backedUp = backedUp.filter { $0.job != job }
    }

    /// The store answered a backup claim: ASSIGN it, or remember that this segment gets none.
    private mutating func onBackupClaimed(
        _ assignment: Assignment?, of primary: SegmentAttempt, demand: ClaimDemand, now: Instant
    ) -> [CoordinatorDirective] {
        claimInFlight = false
        let leasedAt = claimIssuedAt
        claimIssuedAt = nil
        backedUp.insert(SegmentKey(primary))
        let identity = demand.worker
        guard sessions[identity] != nil else {
            return assignment.map {
                [.abandonAttempt($0.attempt, reason: "the worker left before its assignment was sent", spendsAttempt: false)]
            } ?? []
        }
        releaseReservation(identity, slots: demand.limit)
        guard let assignment else { return [] }
        return [.notice(.backupStarted(identity, assignment.attempt, of: primary))]
            + assign(assignment, to: identity, leasedAt: leasedAt, isBackup: true, now: now)
    }

    private mutating func onBackupClaimFailed(_ demand: ClaimDemand) -> [CoordinatorDirective] {
        claimInFlight = false
        claimIssuedAt = nil
        releaseReservation(demand.worker, slots: demand.limit)
        return []
    }

    /// `winner`'s result is committed: any other attempt of its segment still running (the backup,
    /// or the straggler it backed up) is told to stop. It lost a race; nothing failed.
    private mutating func supersede(_ winner: SegmentAttempt, now: Instant) -> [CoordinatorDirective] {
        // Runs for every committed result, and almost always finds nothing: scan without copying
        // or ordering the sessions, and order only what was found (so directives are repeatable).
        var losers: [(identity: WorkerIdentity, attempt: SegmentAttempt)] = []
        for (identity, session) in sessions {
            for held in session.held.values
            where held.attempt.segment == winner.segment && held.attempt.job == winner.job
                && held.attempt.leaseToken != winner.leaseToken && !held.reported {
                losers.append((identity, held.attempt))
            }
        }
        guard !losers.isEmpty else { return [] }
        var directives: [CoordinatorDirective] = []
        for (identity, attempt) in losers.sorted(by: { $0.identity.description < $1.identity.description }) {
            sessions[identity]?.held[attempt.leaseToken] = nil
            directives.append(.notice(.attemptSuperseded(identity, attempt)))
            directives += send(.cancel(Cancel(attempt: attempt, reason: .leaseLost)), to: identity, now: now)
        }
        return directives
    }

    // MARK: - Quarantine

    /// A worker's refusal of an assignment for a reason of its own (not the segment's): no ASSIGN
    /// to it for a while, doubling with every refusal in a row. Its segment goes back without
    /// spending an attempt (the store's part).
    struct Quarantine: Sendable, Hashable {
        var until: Instant
        var refusals: Int
        var reason: String
    }

    private mutating func quarantine(_ identity: WorkerIdentity, because fail: Fail, now: Instant)
        -> [CoordinatorDirective]
    {
        let refusals = (quarantines[identity]?.refusals ?? 0) + 1
        let length = min(policy.quarantineLimit, policy.quarantineBase * (1 << min(refusals - 1, 20)))
        let reason = "\(fail.code): \(fail.reason)"
        quarantines[identity] = Quarantine(until: now + length, refusals: refusals, reason: reason)
        return [.notice(.workerQuarantined(identity, for: length, reason: reason))]
    }

    private func isQuarantined(_ identity: WorkerIdentity, now: Instant) -> Bool {
        quarantines[identity].map { now < $0.until } ?? false
    }

    // MARK: - Time and shutdown

    /// The timer: HEARTBEAT to workers we have not written to for an interval; a worker silent for
    /// `heartbeatLiveness` intervals gets no new assignments and loses its leases at once (its
    /// segments run elsewhere; a late COMPLETE is refused by the fence); one silent for
    /// `forgetAfter` is forgotten. Assignments not accepted within `acceptDeadline` are taken
    /// back. Live workers are recorded as seen now and then.
    private mutating func onTick(now: ContinuousClock.Instant) -> [CoordinatorDirective] {
        var directives: [CoordinatorDirective] = []
        // Time this process did not run (SIGSTOP, a starved machine) is nobody's silence: credit
        // it to every session before judging liveness, or one pause would release every lease.
        if let last = lastTick, now - last > policy.heartbeatInterval {
            let paused = now - last
            for identity in Array(sessions.keys) {
                guard let heard = sessions[identity]?.lastHeard else { continue }
                sessions[identity]?.lastHeard = min(now, heard + paused)
            }
        }
        lastTick = now
        var seen: [UUID] = []
        var gone: [UUID] = []
        for identity in Array(sessions.keys) {
            guard var session = sessions[identity] else { continue }
            let silence = now - session.lastHeard
            if silence > policy.forgetAfter {
                sessions[identity] = nil
                directives.append(.notice(.workerForgotten(identity)))
                if let workerID = session.workerID { gone.append(workerID) }
                continue
            }
            if !session.silent && silence > policy.silenceLimit {
                session.silent = true
                directives.append(.notice(.workerSilent(identity)))
                if let workerID = session.workerID, session.held.values.contains(where: { !$0.reported }) {
                    directives.append(.releaseWorker(
                        workerID: workerID, reason: "the worker fell silent (nothing heard for \(silence))"))
                }
            }
            if let workerID = session.workerID, !session.silent,
                session.lastSeenRecorded.map({ now - $0 >= policy.seenInterval }) ?? true
            {
                session.lastSeenRecorded = now
                seen.append(workerID)
            }
            sessions[identity] = session
            if session.phase == .active && now - session.lastSent >= policy.heartbeatInterval {
                directives += send(.heartbeat(Heartbeat()), to: identity, now: now)
            }
            directives += takeBackUnaccepted(identity, now: now)
        }
        if !seen.isEmpty { directives.append(.markWorkers(seen, online: true)) }
        if !gone.isEmpty { directives.append(.markWorkers(gone, online: false)) }
        return directives
    }

    /// Attempts ASSIGNed by this process and neither accepted nor answered within the accept
    /// deadline: the worker dropped the ASSIGN (or it never arrived). Hand them back and tell the
    /// worker to forget them, in case it is only late.
    private mutating func takeBackUnaccepted(_ identity: WorkerIdentity, now: Instant) -> [CoordinatorDirective] {
        guard let held = sessions[identity]?.held.values else { return [] }
        var directives: [CoordinatorDirective] = []
        for attempt in held.sorted(by: { $0.attempt.description < $1.attempt.description }) {
            guard !attempt.accepted, !attempt.reported, let leasedAt = attempt.leasedAt,
                  now - leasedAt > policy.acceptDeadline
            else { continue }
            sessions[identity]?.held[attempt.attempt.leaseToken] = nil
            directives.append(.notice(.notAccepted(identity, attempt.attempt)))
            directives.append(.abandonAttempt(
                attempt.attempt, reason: "the worker did not accept the assignment within \(policy.acceptDeadline)",
                spendsAttempt: true))
            directives += send(.cancel(Cancel(attempt: attempt.attempt, reason: .leaseLost)), to: identity, now: now)
        }
        return directives
    }

    /// The first step of a graceful shutdown: no more claims.
    private mutating func stopDispatching() -> [CoordinatorDirective] {
        shuttingDown = true
        return []
    }

    /// The last step of a graceful shutdown, once in-flight commits are answered: every worker is
    /// told the coordinator is leaving (it keeps its results and reports them to the next one).
    private mutating func onShutdown(now: ContinuousClock.Instant) -> [CoordinatorDirective] {
        guard !farewellSent else { return [] }
        shuttingDown = true
        farewellSent = true
        let farewell = CoordinatorMessage.disconnect(Disconnect(reason: .shutdown, detail: "the coordinator is stopping"))
        return Array(sessions.keys).flatMap { send(farewell, to: $0, now: now) }
    }

    // MARK: - Sending

    /// A send to a session's latest return address; nothing when there is no such session.
    private mutating func send(_ message: CoordinatorMessage, to identity: WorkerIdentity, now: Instant)
        -> [CoordinatorDirective]
    {
        guard let peer = sessions[identity]?.peer else { return [] }
        sessions[identity]?.lastSent = now
        return [.send(message, to: peer, worker: identity)]
    }

    /// A send to the session if it still exists, else to the address the message came from.
    private mutating func send(
        _ message: CoordinatorMessage, to identity: WorkerIdentity, fallback: WirePeer, now: Instant
    ) -> [CoordinatorDirective] {
        let sent = send(message, to: identity, now: now)
        return sent.isEmpty ? [.send(message, to: fallback, worker: identity)] : sent
    }

    // MARK: - Reading

    /// The sessions, for `splice workers`, with their quarantines as of `now`.
    package func sessionSnapshots(now: ContinuousClock.Instant) -> [WorkerSessionSnapshot] {
        sessions.values.map { session in
            let quarantine = quarantines[session.identity].flatMap { now < $0.until ? $0 : nil }
            return WorkerSessionSnapshot(
                identity: session.identity, workerID: session.workerID, name: session.name, slots: session.slots,
                running: session.held.count, active: session.phase == .active, silent: session.silent,
                quarantineRemaining: quarantine.map { $0.until - now }, quarantineReason: quarantine?.reason,
                usableCores: session.registration.usableCores, threadsPerSlot: session.registration.threadsPerSlot,
                metricsEndpoint: session.registration.metricsEndpoint)
        }
    }

    /// Every lease token a session of this process holds or whose result is being committed: the
    /// leases the orphan sweep must leave alone.
    package var heldLeaseTokens: Set<LeaseToken> {
        var tokens = Set(pendingResults.keys)
        for session in sessions.values { tokens.formUnion(session.held.keys) }
        return tokens
    }

    /// The PROGRESS of the job's running attempts, one per segment (the further of a segment's
    /// attempt and its backup): summed, and weighted by the segments' costs.
    package func runningProgress(ofJob job: JobID) -> RunningProgress {
        RunningProgress(sessions.values.flatMap { session in
            session.held.values.filter { $0.attempt.job == job }.map { ($0.attempt.segment, $0.fraction, $0.cost) }
        })
    }
}
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

    public init(
        heartbeatInterval: Duration = .seconds(2), heartbeatLiveness: Int = 3, leaseDuration: Duration = .seconds(60),
        progressInterval: Duration? = nil, forgetAfter: Duration? = nil, seenInterval: Duration = .seconds(15),
        answeredCapacity: Int = 16_384, acceptFromClaimWindow: Duration? = nil, acceptDeadline: Duration? = nil,
        orphanGrace: Duration? = nil, quarantineBase: Duration = .seconds(10), quarantineLimit: Duration = .seconds(300),
        backupAfterPercent: Int = 150, backupMinimumRuntime: Duration = .seconds(1)
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
    }

    /// Silence after which a worker is considered silent.
    var silenceLimit: Duration { heartbeatInterval * heartbeatLiveness }
}

/// How far a job's running attempts are (`CoordinatorStateMachine.runningProgress(ofJob:)`).
package struct RunningProgress: Sendable, Hashable {
    /// Summed PROGRESS fractions: segments' worth of work done.
    package var segments: Double
    /// Summed fractions × segment costs: cost's worth of work done.
    package var cost: Double

    package init(segments: Double = 0, cost: Double = 0) {
        self.segments = segments
        self.cost = cost
    }

    /// The progress of one job's attempts (segment, PROGRESS fraction, cost), counting each
    /// segment once: a segment with a backup running counts the further of its two attempts.
    init(_ attempts: [(segment: Int, fraction: Double, cost: Int64)]) {
        var furthest: [Int: (fraction: Double, cost: Int64)] = [:]
        for attempt in attempts where furthest[attempt.segment].map({ attempt.fraction > $0.fraction }) ?? true {
            furthest[attempt.segment] = (attempt.fraction, attempt.cost)
        }
        self.init(segments: furthest.values.reduce(0) { $0 + $1.fraction },
                  cost: furthest.values.reduce(0) { $0 + $1.fraction * Double($1.cost) })
    }
}
