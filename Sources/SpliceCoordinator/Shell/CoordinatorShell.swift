import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceLog
import SpliceStore
import SpliceWire
import SpliceDaemon

/// The thin shell around `CoordinatorStateMachine`: it feeds the machine every event (a worker's
/// message, a commit's answer, the timer) and carries out the directives that come back — sends
/// go to the `Outbox`, store work runs in tasks of its own whose answers come back as events.
/// Nothing here decides protocol questions; that is the machine's job.
actor CoordinatorShell {
    private var machine: CoordinatorStateMachine
    let store: CoordinatorStore
    let outbox: Outbox
    let spool: SpoolCleaner
    private let stitcherWake: WakeSignal
    nonisolated let logger: Logger
    nonisolated let dropLog = LogThrottle()
    /// Store tasks started and not yet answered (a graceful shutdown waits for them).
    private let inFlight = InFlightWork()
    /// The operators' figures, counted where the events happen (docs/deploy.md, Operating); the
    /// process's, shared by its terms.
    nonisolated let metrics: CoordinatorMetrics
    /// Whether this coordinator may still claim: its leadership lease is valid on its own clock
    /// (docs/coordinator.md, Standby coordinators). Claims stop before the lease can run out.
    private let mayDispatch: @Sendable () -> Bool
    /// Set when the term this shell serves has ended: nothing more is sent or written.
    private(set) var retired = false
    /// Transfer mode: the data endpoint's port (nil without one), the media tasks that cut
    /// excerpts, and what is offered and fetched (CoordinatorShell+Transfer.swift).
    let transferPort: TransferPort?
    let media: MediaTaskRunner
    var transfers = CoordinatorTransfers()

    init(
        policy: CoordinatorPolicy, store: CoordinatorStore, outbox: Outbox, spool: SpoolCleaner,
        stitcherWake: WakeSignal, logger: Logger, transferPort: TransferPort? = nil,
        media: MediaTaskRunner = MediaTaskRunner(isolation: .inProcess), epoch: Int64? = nil,
        metrics: CoordinatorMetrics = CoordinatorMetrics(), mayDispatch: @escaping @Sendable () -> Bool = { true }
    ) {
        self.transferPort = transferPort
        self.media = media
        self.metrics = metrics
        self.mayDispatch = mayDispatch
        self.machine = CoordinatorStateMachine(policy: policy, epoch: epoch)
        self.store = store
        self.outbox = outbox
        self.spool = spool
        self.stitcherWake = stitcherWake
        self.logger = logger
    }

    // MARK: - Events

    /// Messages (and rejections) from the worker endpoint, in arrival order; one dispatch after
    /// the whole burst.
    func received(_ batch: [Received<WorkerMessage>]) {
        guard !retired else { return }
        let now = ContinuousClock.now
        for received in batch {
            // Answers to the sender go back in the version its message came in (docs/protocol.md,
            // Versions); what the message causes for other workers goes in theirs.
            switch received {
            case .message(let envelope, let peer):
                guard var message = screenTransfer(envelope.message, from: peer) else { continue }
                if case .hello(let hello) = message { message = .hello(hello.speaking(envelopeVersion: envelope.version)) }
                execute(machine.handle(.received(message, from: peer), at: now),
                        reply: WorkerIdentity(peer: peer).map { ($0, envelope.version) })
            case .rejected(let rejection, let peer):
                execute(machine.handle(.rejected(rejection, from: peer), at: now),
                        reply: WorkerIdentity(peer: peer).flatMap { identity in rejection.version.map { (identity, $0) } })
            }
        }
        execute(machine.dispatch(at: now))
    }

    /// `message` as if `peer` had just sent it again (a transfer worker's COMPLETE once its result
    /// is verified, rather than waiting up to a progress interval for the worker's resend); nothing
    /// when that worker has no active session any more (its own resend, after a HELLO, will do).
    func redeliver(_ message: WorkerMessage, from peer: WirePeer) {
        let now = ContinuousClock.now
        guard !retired, let worker = WorkerIdentity(peer: peer), machine.isActive(worker) else { return }
        execute(machine.handle(.received(message, from: peer), at: now))
        execute(machine.dispatch(at: now))
    }

    /// The timer: heartbeats and liveness.
    func tick() {
        apply(.tick)
    }

    /// Segments may be claimable (poll timer, NOTIFY, a lease taken back, a backoff ended).
    func workAvailable() {
        apply(.workAvailable)
    }

    /// The store took leases back (reaper, or a worker's release).
    func takenBack(_ taken: CoordinatorStore.TakenBack) {
        for lease in taken.leases {
            forgetTransfer(lease.leaseToken)
            logger.info("lease taken back", ["job": lease.job.description, "lease": lease.leaseToken.description,
                                             "job_failed": lease.jobFailed])
        }
        if let retry = taken.firstRetry { wake(at: retry) }
        for job in Set(taken.leases.filter(\.jobFailed).map(\.job)) { logJobFailed(job) }
        let now = ContinuousClock.now
        execute(machine.handle(.workAvailable, at: now))
        apply(.leasesTakenBack(taken.leases))
    }

    /// A job was cancelled or failed outside the worker protocol (the API, the planner).
    func jobEnded(_ job: JobID, reason: Cancel.Reason) {
        apply(.jobEnded(job, reason))
    }

    /// A worker key was revoked: its connections are already cut off.
    func workerRevoked(_ identity: WorkerIdentity) {
        apply(.workerRevoked(identity))
    }

    /// A send from the outbox failed.
    func sendFailed(_ outgoing: Outbox.Outgoing, error: WireError) {
        apply(.sendFailed(outgoing.message, to: outgoing.peer, worker: outgoing.worker, error: error))
    }

    // MARK: - Shutdown

    /// Graceful shutdown, step 1: no more claims.
    func stopDispatching() {
        execute(machine.handle(.drainStarted, at: .now))
    }

    /// Step 2: returns once every store task started so far (and those they started) is
    /// answered; false when some still were after `timeout`.
    nonisolated func drained(within timeout: Duration) async -> Bool {
        await inFlight.drained(within: timeout)
    }

    /// Step 3: DISCONNECT `shutdown` to every worker.
    func farewell() {
        execute(machine.handle(.drained, at: .now))
    }

    // MARK: - The end of a term

    /// This coordinator is no longer the active one: every session is told (STANDBY, or
    /// DISCONNECT to older workers) through the outbox, nothing more is sent or written from now
    /// on, and the store work in flight is cancelled. Returns who was told.
    func standDown(epoch: Int64?, active: String?) -> [StandbyPeer] {
        guard !retired else { return [] }
        let (directives, peers) = machine.standDown(epoch: epoch, active: active)
        // The sessions are closed by now: each farewell goes in the version its worker spoke.
        let versions = Dictionary(peers.map { ($0.identity, $0.protocolVersion) }, uniquingKeysWith: { first, _ in first })
        for directive in directives {
            guard case .send(_, _, let worker) = directive else { continue }
            execute(directive, reply: versions[worker].map { (worker, $0) })
        }
        retired = true
        inFlight.cancelAll()
        return peers
    }

    // MARK: - Reading

    var sessions: [WorkerSessionSnapshot] { machine.sessionSnapshots(now: .now) }

    /// The lease tokens the sessions hold, for the orphan sweep.
    var heldLeaseTokens: Set<LeaseToken> { machine.heldLeaseTokens }

    func runningProgress(ofJob job: JobID) -> RunningProgress {
        machine.runningProgress(ofJob: job)
    }

    /// The sessions with the attempts they hold, for the status page and the metrics.
    var liveWorkers: [LiveWorker] { machine.liveWorkers(now: .now) }

    // MARK: - Carrying out directives

    /// Runs one event through the machine, carries out what it says, then lets it dispatch.
    private func apply(_ event: CoordinatorEvent) {
        guard !retired else { return }
        let now = ContinuousClock.now
        execute(machine.handle(event, at: now))
        execute(machine.dispatch(at: now))
    }

    /// Carries out `directives`; a send to `reply.worker` goes in `reply.version` (it answers a
    /// message of that version), any other in the version of its worker's session.
    private func execute(_ directives: [CoordinatorDirective], reply: (worker: WorkerIdentity, version: Int)? = nil) {
        for directive in directives { execute(directive, reply: reply) }
    }

    func execute(_ directive: CoordinatorDirective, reply: (worker: WorkerIdentity, version: Int)? = nil) {
        guard !retired else { return }
        switch directive {
        case .send(.assign(let assign), let peer, let worker) where transfers.needsExcerpt(assign.attempt.job, worker: worker):
            sendWithExcerpt(assign, to: peer, worker: worker)
        case .send(let message, let peer, let worker):
            let version = reply.flatMap { $0.worker == worker ? $0.version : nil } ?? protocolVersion(of: worker)
            outbox.enqueue(message, to: peer, worker: worker, version: version)
        case .registerWorker(let identity, let name, let slots, let encoders):
            spawn { await self.register(identity, name: name, slots: slots, encoders: encoders) }
        case .commitResult(let result):
            spawn { await self.commit(result) }
        case .extendLeases(let attempts, let worker, let check):
            spawn { await self.extend(attempts, worker: worker, check: check) }
        case .claim(let demands, _) where !mayDispatch():
            // The leadership lease may be running out: no claims (as if the claim failed).
            spawn { await self.apply(.claimFailed(demands)) }
        case .claim(let demands, let generation):
            spawn { await self.claim(demands, generation: generation) }
        case .claimBackup(let primary, let demand) where !mayDispatch():
            spawn { await self.apply(.backupClaimFailed(of: primary, demand: demand)) }
        case .claimBackup(let primary, let demand):
            spawn { await self.claimBackup(of: primary, for: demand) }
        case .abandonAttempt(let attempt, let reason, let spendsAttempt):
            spawn { await self.abandon(attempt, reason: reason, spendsAttempt: spendsAttempt) }
        case .releaseWorker(let workerID, let reason):
            spawn { await self.release(workerID, reason: reason) }
        case .markWorkers(let ids, let online):
            spawn { await self.mark(ids, online: online) }
        case .wakeStitcher:
            stitcherWake.signal()
        case .removeJobFiles(let job):
            transfers.jobEnded(job)
            spawn { await self.removeFiles(of: job) }
        case .notice(let notice):
            log(notice)
        }
    }

    /// The version to talk to `worker` in when no message is being answered: its session's (the
    /// newest when it has none).
    func protocolVersion(of worker: WorkerIdentity) -> Int {
        machine.protocolVersion(of: worker) ?? WorkerProtocol.version
    }

    /// Runs store work off the actor; counted so a graceful shutdown can wait for it.
    func spawn(_ work: @escaping @Sendable () async -> Void) {
        inFlight.start(work)
    }

    /// Makes segments claimable again at `date` (the end of a retry backoff).
    private func wake(at date: Date) {
        let delay = max(0, date.timeIntervalSinceNow)
        Task {
            try? await Task.sleep(for: .milliseconds(Int64(delay * 1000) + 5))
            self.workAvailable()
        }
    }

    // MARK: - Store work (off the actor)

    private nonisolated func register(_ identity: WorkerIdentity, name: String, slots: Int, encoders: [String]) async {
        do {
            switch try await store.register(identity, name: name, slots: slots, encoders: encoders) {
            case .registered(let workerID):
                await apply(.workerRegistered(identity, workerID: workerID))
            case .refused(let reason):
                await apply(.workerRefused(identity, reason: reason))
            }
        } catch {
            logger.warning("worker registration failed", ["worker": identity.description, "error": "\(error)"])
            await apply(.registrationFailed(identity))
        }
    }

    private nonisolated func commit(_ result: WorkerResult) async {
        let attempt = result.attempt
        do {
            let outcome = try await store.commit(result)
            metrics.committed(result, outcome: outcome)
            logCommitted(result, outcome: outcome)
            if let retryAt = outcome.retryAt { await wake(at: retryAt) }
            await committed(result, outcome)
        } catch {
            logger.warning("result not committed; the worker will resend it", [
                "job": attempt.job.description, "segment": attempt.segment, "attempt": attempt.attempt,
                "error": "\(error)",
            ])
            await apply(.resultCommitFailed(result))
        }
    }

    private nonisolated func extend(_ attempts: [SegmentAttempt], worker: WorkerIdentity, check: LeaseCheck) async {
        do {
            let current = try await store.extend(attempts)
            await apply(.leasesExtended(attempts, worker: worker, check: check, current: current))
        } catch {
            logger.warning("lease extension failed", ["worker": worker.description, "error": "\(error)"])
            await apply(.leaseExtensionFailed(attempts, worker: worker, check: check))
        }
    }

    private nonisolated func claim(_ demands: [ClaimDemand], generation: UInt64) async {
        do {
            let issued = ContinuousClock.now
            let assignments = try await store.claim(demands)
            await noteExcerptJobs(assignments.values.flatMap { $0 })
            metrics.claimed(assignments, issued: issued)
            if logger.isEnabled(.debug) {
                for (worker, claimed) in assignments {
                    for attempt in claimed.map(\.attempt) {
                        logger.debug("segment assigned", [
                            "job": attempt.job.description, "segment": attempt.segment, "attempt": attempt.attempt,
                            "worker": worker.description,
                        ])
                    }
                }
            }
            await apply(.claimed(assignments, demands: demands, generation: generation))
        } catch {
            logger.warning("claim failed", ["workers": demands.count, "error": "\(error)"])
            await apply(.claimFailed(demands))
        }
    }

    private nonisolated func claimBackup(of primary: SegmentAttempt, for demand: ClaimDemand) async {
        do {
            let assignment = try await store.claimBackup(of: primary, for: demand)
            if let assignment { await noteExcerptJobs([assignment]) }
            if assignment != nil { metrics.backupStarted() }
            await apply(.backupClaimed(assignment, of: primary, demand: demand))
        } catch {
            logger.warning("backup claim failed", ["job": primary.job.description, "segment": primary.segment,
                                                   "error": "\(error)"])
            await apply(.backupClaimFailed(of: primary, demand: demand))
        }
    }

    /// A result is in the store: its transfer files go and the machine hears of it, in one hop onto
    /// the actor (commits are the hot path: one per segment).
    private func committed(_ result: WorkerResult, _ outcome: ResultOutcome) {
        forgetTransfer(result.attempt.leaseToken)
        apply(.resultCommitted(result, outcome))
    }

    nonisolated func abandon(_ attempt: SegmentAttempt, reason: String, spendsAttempt: Bool, retryable: Bool = true) async {
        do {
            let outcome = try await store.abandon(attempt, reason: reason, spendsAttempt: spendsAttempt,
                                                  retryable: retryable)
            await forgetTransfer(attempt.leaseToken)
            metrics.abandoned(reason: reason, recorded: outcome.failedJob || outcome.retryAt != nil)
            logger.info("attempt handed back", [
                "job": attempt.job.description, "segment": attempt.segment, "attempt": attempt.attempt, "reason": reason,
            ])
            if let retryAt = outcome.retryAt { await wake(at: retryAt) }
            if outcome.failedJob {
                logJobFailed(attempt.job)
                await apply(.jobEnded(attempt.job, .jobFailed))
            }
        } catch {
            logger.warning("attempt not handed back; its lease will expire", [
                "job": attempt.job.description, "segment": attempt.segment, "attempt": attempt.attempt,
                "error": "\(error)",
            ])
        }
    }

    private nonisolated func release(_ workerID: UUID, reason: String) async {
        do {
            let taken = try await store.releaseLeases(ofWorker: workerID, reason: reason)
            metrics.takenBack(taken.leases.count, reason: AttemptFailure.workerLost)
            await takenBack(taken)
        } catch {
            logger.warning("leases not released; they will expire", ["worker_id": workerID.uuidString.lowercased(), "error": "\(error)"])
        }
    }

    private nonisolated func mark(_ ids: [UUID], online: Bool) async {
        do {
            try await store.markWorkers(ids, online: online)
        } catch {
            logger.debug("worker presence not recorded", ["error": "\(error)"])
        }
    }

    private nonisolated func removeFiles(of job: JobID) async {
        store.forget(job: job)
        await spool.removeJob(job)
    }

    // MARK: - Logging

    private nonisolated func logCommitted(_ result: WorkerResult, outcome: ResultOutcome) {
        let attempt = result.attempt
        let fields: KeyValuePairs<String, any LogValue> = [
            "job": attempt.job.description, "segment": attempt.segment, "attempt": attempt.attempt,
        ]
        switch (result, outcome) {
        case (.complete, .completed(let ready)):
            logger.debug("segment done", fields)
            if ready { logger.info("job ready to stitch", ["job": attempt.job.description]) }
        case (.fail(let fail), .recorded) where fail.blame != .segment:
            logger.warning("segment refused by the worker; returned without spending an attempt", [
                "job": attempt.job.description, "segment": attempt.segment, "attempt": attempt.attempt,
                "code": fail.code.rawValue, "reason": fail.reason,
            ])
        case (.fail(let fail), .recorded):
            logger.warning("segment attempt failed", [
                "job": attempt.job.description, "segment": attempt.segment, "attempt": attempt.attempt,
                "code": fail.code.rawValue, "retryable": fail.retryable, "job_failed": outcome.failedJob, "reason": fail.reason,
            ])
            if outcome.failedJob { logJobFailed(attempt.job) }
        case (_, .staleLease):
            logger.info("stale result refused", fields)
        default:
            logger.debug("duplicate result", fields)
        }
    }

    /// "job failed" with the reason the store recorded (read back: the store composed it).
    private nonisolated func logJobFailed(_ job: JobID) {
        Task {
            let reason = await store.jobError(job) ?? "unknown"
            logger.error("job failed", ["job": job.description, "error": reason])
        }
    }

    private nonisolated func log(_ notice: CoordinatorNotice) {
        switch notice {
        case .workerRegistering(let worker, let name, let slots):
            logger.info("worker registering", ["worker": worker.description, "name": name, "slots": slots])
        case .workerWelcomed(let worker, let workerID, let running):
            logger.info("worker welcomed", ["worker": worker.description, "worker_id": workerID.uuidString.lowercased(),
                                            "running": running])
        case .workerRefused(let worker, let reason):
            logger.warning("worker refused", ["worker": worker.description, "reason": reason])
        case .workerSilent(let worker):
            logger.warning("worker silent: no new assignments", ["worker": worker.description])
        case .workerBack(let worker):
            logger.info("worker heard again", ["worker": worker.description])
        case .workerForgotten(let worker):
            logger.warning("worker session forgotten", ["worker": worker.description])
        case .workerLeft(let worker, let reason):
            logger.info("worker left", ["worker": worker.description, "reason": reason.rawValue])
        case .unknownSession(let worker, let type):
            logger.info("message from unknown session: asked to register", ["worker": worker.description,
                                                                              "type": type])
        case .dropped(let rejection, let worker):
            // A peer can send garbage at will: a line a second per reason, the counters count all.
            if let suppressed = dropLog.admit(rejection.reason.rawValue) {
                logger.warning("message dropped", ["reason": rejection.reason.rawValue, "detail": rejection.detail,
                                                   "worker": worker?.description ?? "unknown", "suppressed": suppressed])
            }
        case .invalidHello(let worker, let detail):
            logger.warning("invalid HELLO", ["worker": worker.description, "detail": detail])
        case .versionRefused(let worker, let version):
            let newer = version > WorkerProtocol.version
            logger.warning("worker refused: it speaks a protocol version this coordinator does not", [
                "worker": worker.description, "worker_version": version,
                "coordinator_versions": WorkerProtocol.versions.description,
                "hint": newer ? "upgrade this coordinator first (docs/deploy.md, Upgrading)"
                    : "upgrade the worker to this coordinator's release",
            ])
        case .leaseLost(let worker, let attempt):
            logger.info("lease lost: attempt cancelled", [
                "job": attempt.job.description, "segment": attempt.segment, "attempt": attempt.attempt,
                "worker": worker.description,
            ])
        case .orphanedAttempt(let worker, let attempt):
            logger.info("worker registered again without an attempt", [
                "job": attempt.job.description, "segment": attempt.segment, "attempt": attempt.attempt,
                "worker": worker.description,
            ])
        case .undeliverable(let worker, let type, let error):
            logger.warning("message undeliverable", ["worker": worker.description, "type": type, "error": error])
        case .workerQuarantined(let worker, let length, let reason):
            logger.warning("worker quarantined: no assignments", ["worker": worker.description, "for": length,
                                                                   "reason": reason])
        case .backupStarted(let worker, let attempt, let primary):
            logger.info("backup attempt started for a straggler", [
                "job": attempt.job.description, "segment": attempt.segment, "attempt": attempt.attempt,
                "worker": worker.description, "lease": attempt.leaseToken.description,
                "primary_lease": primary.leaseToken.description,
            ])
        case .attemptSuperseded(let worker, let attempt):
            logger.info("the segment's other attempt finished first: attempt cancelled", [
                "job": attempt.job.description, "segment": attempt.segment, "attempt": attempt.attempt,
                "worker": worker.description, "lease": attempt.leaseToken.description,
            ])
        case .notAccepted(let worker, let attempt):
            logger.warning("assignment not accepted in time: taken back", [
                "job": attempt.job.description, "segment": attempt.segment, "attempt": attempt.attempt,
                "worker": worker.description,
            ])
        }
    }
}
