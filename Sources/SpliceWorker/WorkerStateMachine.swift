package import SpliceCore
package import SpliceWire

/// The worker's side of the `splice-worker` protocol as a plain state machine: events in
/// (``WorkerEvent``), directives out (``WorkerDirective``), no sockets, no clocks of its own — the
/// caller passes the time of every event on its monotonic clock. ``WorkerDaemon`` is the shell that
/// carries the directives out. See docs/protocol.md and docs/worker.md.
///
/// Session: `idle` → (start) `connecting`, HELLO sent to every coordinator it knows and resent
/// every HELLO interval → (WELCOME) `registered` with the coordinator that welcomed it → back to
/// `connecting` when that coordinator is silent for `heartbeatLiveness` intervals, its connection
/// stays lost for `reconnectGrace`, or it sends DISCONNECT (other than `revoked`, which stops the
/// worker) or STANDBY. With several coordinators (docs/coordinator.md, Standby coordinators) only
/// the active one welcomes; the worker follows the highest epoch it hears of: a WELCOME of a
/// higher epoch from another coordinator moves the session there, an ACTIVE of a higher epoch (or
/// a coordinator whose connection just came up) gets a HELLO, and a STANDBY of a higher epoch says
/// its coordinator was deposed. ASSIGN, CANCEL, HEARTBEAT and DISCONNECT count only from the
/// coordinator the session is with; an ACK counts from any (it is sent only after a commit).
/// Results (COMPLETE/FAIL) are held until an ACK for their attempt arrives, whatever the session
/// does: resent every progress interval while registered and listed in every HELLO.
///
/// Leases: each ACCEPT/PROGRESS send time is queued per attempt; ACK `accepted` pops the oldest
/// and moves the deadline to `popped send time + lease`. Once `now > deadline − margin` the encode
/// is aborted and its output deleted, so nothing is still being written when the coordinator may
/// re-lease the segment.
package struct WorkerStateMachine: Sendable {
    package typealias Instant = ContinuousClock.Instant

    /// What the machine needs to know about the worker.
    package struct Configuration: Sendable, Hashable {
        package var workerName: String
        package var slots: Int
        /// HELLO's `encoders`.
        package var encoders: [String]
        /// HELLO's `software`.
        package var software: String
        /// How often HELLO is resent before the first WELCOME says what the interval is.
        package var helloInterval: Duration
        /// How long before its lease deadline an attempt is aborted (at most a quarter of the lease).
        package var leaseSafetyMargin: Duration
        /// After a drain starts, how long running attempts may take before they are handed back.
        package var drainTimeout: Duration
        /// After the drain timeout, how long to keep trying to get results acknowledged.
        package var flushTimeout: Duration
        /// HELLO's `storage`: nil (a shared-spool worker, as before the field existed) or `.transfer`.
        package var storage: WorkerStorage?
        /// HELLO's `usableCores`, `threadsPerSlot` and `metricsEndpoint` (for `splice workers`).
        package var usableCores: Int?
        package var threadsPerSlot: Int?
        package var metricsEndpoint: String?
        /// How many coordinators the worker knows (`--coordinator A,B,…`).
        package var coordinators: Int
        /// After a coordinator refused this worker's protocol version (DISCONNECT
        /// `unsupported-version`), how long before the next HELLO: one side is being upgraded.
        package var versionRetryInterval: Duration
        /// How long HELLO may go unanswered before the worker says so (and again as often).
        package var unansweredNotice: Duration
        /// How long the connection to the coordinator of the session may stay lost before the
        /// worker looks for the active coordinator again (a restart or a take-over; libzmq
        /// reconnects on its own after a blip).
        package var reconnectGrace: Duration

        package init(workerName: String, slots: Int, encoders: [String] = [], software: String = "",
                     helloInterval: Duration = .seconds(1), leaseSafetyMargin: Duration = .seconds(5),
                     drainTimeout: Duration = .seconds(300), flushTimeout: Duration = .seconds(10),
                     storage: WorkerStorage? = nil, usableCores: Int? = nil, threadsPerSlot: Int? = nil,
                     metricsEndpoint: String? = nil, coordinators: Int = 1, reconnectGrace: Duration = .milliseconds(500),
                     versionRetryInterval: Duration = .seconds(15), unansweredNotice: Duration = .seconds(30)) {
            self.versionRetryInterval = versionRetryInterval
            self.unansweredNotice = unansweredNotice
            self.coordinators = max(1, coordinators)
            self.reconnectGrace = reconnectGrace
            self.workerName = workerName
            self.slots = slots
            self.encoders = encoders
            self.software = software
            self.helloInterval = helloInterval
            self.leaseSafetyMargin = leaseSafetyMargin
            self.drainTimeout = drainTimeout
            self.flushTimeout = flushTimeout
            self.storage = storage
            self.usableCores = usableCores
            self.threadsPerSlot = threadsPerSlot
            self.metricsEndpoint = metricsEndpoint
        }
    }

    /// The session with the coordinator.
    package enum Session: Sendable, Hashable {
        /// Not started.
        case idle
        /// HELLO sent (and resent) without a WELCOME yet.
        case connecting
        /// WELCOME received for this coordinator session.
        case registered(session: String)
        /// Done; only the endings of encodes still in flight are handled.
        case stopped(WorkerStopReason)
    }

    /// One attempt whose encode is in flight.
    struct Attempt: Sendable, Hashable {
        var assign: Assign
        var lease: Duration
        var margin: Duration
        var progressInterval: Duration
        /// When the lease ends at the latest, on this worker's clock.
        var deadline: Instant
        /// Send times of ACCEPT/PROGRESS not yet acknowledged, oldest first.
        var unacknowledgedExtensions: [Instant] = []
        var lastExtensionSent: Instant
        var fraction: Double = 0
        var frames = 0
        /// Set once the encode is being stopped; it no longer counts as running.
        var abort: AbortReason?

        var isLive: Bool { abort == nil }
    }

    /// A COMPLETE or FAIL waiting for its ACK.
    struct HeldResult: Sendable, Hashable {
        var message: WorkerMessage
        var attempt: SegmentAttempt
        var resendInterval: Duration
        var lastSent: Instant?
    }

    struct Drain: Sendable, Hashable {
        var deadline: Instant
        var handedBack = false
    }

    package let configuration: Configuration
    package private(set) var session: Session = .idle
    /// The coordinator the session is with (its index in the list), while registered.
    package private(set) var coordinator: Int?
    /// The leadership epoch that coordinator welcomed under (0 for one that says none).
    package private(set) var epoch: Int64 = 0
    /// When the connection to the session's coordinator was lost, while it is.
    private var connectionLostAt: Instant?
    /// The coordinator's heartbeat interval (from WELCOME; before that, the HELLO interval).
    package private(set) var heartbeatInterval: Duration
    package private(set) var heartbeatLiveness = 3
    private var lastHeard: Instant?
    private var lastSent: Instant?
    private var lastHello: Instant?
    /// No HELLO before this: a coordinator refused this worker's protocol version.
    private var helloHeldUntil: Instant?
    /// Since when no coordinator has answered anything while connecting, and when that was last said.
    private var unansweredSince: Instant?
    private var unansweredNoticed: Instant?
    private var attempts: [LeaseToken: Attempt] = [:]
    private var results: [LeaseToken: HeldResult] = [:]
    private var drain: Drain?

    package init(configuration: Configuration) {
        self.configuration = configuration
        self.heartbeatInterval = configuration.helloInterval
    }

    // MARK: - Inspection

    /// Attempts being encoded (not those being aborted), sorted.
    package var running: [SegmentAttempt] {
        attempts.values.filter(\.isLive).map(\.assign.attempt).sorted(by: Self.order)
    }

    /// Encodes not yet reported finished, including aborted ones still stopping.
    package var encodesInFlight: Int { attempts.count }

    /// Results waiting for an ACK, sorted by attempt.
    package var heldResults: [WorkerMessage] {
        results.values.sorted { Self.order($0.attempt, $1.attempt) }.map(\.message)
    }

    /// The lease deadline of a running attempt on this worker's clock.
    package func deadline(of token: LeaseToken) -> Instant? { attempts[token]?.deadline }

    /// The safety margin applied to a running attempt.
    package func margin(of token: LeaseToken) -> Duration? { attempts[token]?.margin }

    package var isDraining: Bool { drain != nil }

    package var isStopped: Bool {
        if case .stopped = session { return true }
        return false
    }

    /// The HELLO the worker would send now.
    package var hello: Hello {
        let held = results.values.sorted { Self.order($0.attempt, $1.attempt) }
        return Hello(
            workerName: configuration.workerName, slots: configuration.slots, encoders: configuration.encoders,
            running: running,
            finished: held.compactMap { if case .complete(let body) = $0.message { body } else { nil } },
            failed: held.compactMap { if case .fail(let body) = $0.message { body } else { nil } },
            software: configuration.software, storage: configuration.storage, usableCores: configuration.usableCores,
            threadsPerSlot: configuration.threadsPerSlot, metricsEndpoint: configuration.metricsEndpoint,
            standbyAware: true, protocolVersions: WorkerProtocol.workerVersions
        )
    }

    // MARK: - Events

    /// Handles one event at `now` and returns what to do, in order.
    package mutating func handle(_ event: WorkerEvent, at now: Instant) -> [WorkerDirective] {
        var out: [WorkerDirective] = []
        if isStopped {
            // Only an aborted encode's ending still matters: its output must go.
            if case .encodeFinished(let token, _) = event { finishEncode(token, outcome: .cancelled, now: now, &out) }
            return out
        }
        switch event {
        case .start:
            guard session == .idle else { break }
            reconnect(now: now, &out)
        case .tick:
            tick(now: now, &out)
        case .received(let message, let from):
            receive(message, from: from, now: now, &out)
        case .connected(let index):
            connected(index, now: now, &out)
        case .disconnected(let index):
            if index == coordinator, isRegistered { connectionLostAt = connectionLostAt ?? now }
        case .sendFailed(let message):
            sendFailed(message)
        case .encodeProgress(let token, let fraction, let frames):
            guard attempts[token]?.isLive == true else { break }
            attempts[token]?.fraction = min(1, max(0, fraction))
            attempts[token]?.frames = frames
        case .encodeFinished(let token, let outcome):
            finishEncode(token, outcome: outcome, now: now, &out)
        case .drain:
            startDrain(now: now, &out)
        }
        stopIfDrained(now: now, &out)
        return out
    }

    // MARK: - Session

    private var isRegistered: Bool {
        if case .registered = session { return true }
        return false
    }

    /// Sends to the coordinator of the session (to every one while there is none: only HELLO).
    private mutating func send(_ message: WorkerMessage, now: Instant, _ out: inout [WorkerDirective]) {
        lastSent = now
        out.append(.send(message, to: coordinator.map(WorkerDirective.Recipient.coordinator) ?? .everyCoordinator))
    }

    /// Back to `connecting`: HELLO now to every coordinator, with everything held.
    private mutating func reconnect(now: Instant, _ out: inout [WorkerDirective]) {
        session = .connecting
        coordinator = nil
        connectionLostAt = nil
        unansweredSince = unansweredSince ?? now
        sendHello(now: now, &out)
    }

    private mutating func sendHello(now: Instant, _ out: inout [WorkerDirective]) {
        lastHello = now
        for token in results.keys { results[token]?.lastSent = now }
        send(.hello(hello), now: now, &out)
    }

    /// HELLO to one coordinator only (it just came up, or says it is active now).
    private mutating func sendHello(to index: Int, now: Instant, _ out: inout [WorkerDirective]) {
        out.append(.send(.hello(hello), to: .coordinator(index)))
    }

    /// The connection to coordinator `index` is up (again).
    private mutating func connected(_ index: Int, now: Instant, _ out: inout [WorkerDirective]) {
        if index == coordinator {
            connectionLostAt = nil
            return
        }
        // A coordinator appeared: say HELLO to it. A standby answers STANDBY and remembers this
        // worker (to tell it ACTIVE when it takes over); an active one of a higher epoch welcomes it.
        guard session == .connecting || isRegistered else { return }
        sendHello(to: index, now: now, &out)
    }

    private mutating func tick(now: Instant, _ out: inout [WorkerDirective]) {
        expireLeases(now: now, &out)
        handBackIfDrainTimedOut(now: now, &out)
        switch session {
        case .connecting:
            noticeUnanswered(now: now, &out)
            if let held = helloHeldUntil, now < held { break }
            helloHeldUntil = nil
            let interval = min(configuration.helloInterval, heartbeatInterval)
            if lastHello.map({ now - $0 >= interval }) ?? true { sendHello(now: now, &out) }
        case .registered:
            let silence = heartbeatInterval * heartbeatLiveness
            if let heard = lastHeard, now - heard >= silence {
                out.append(.notice(.coordinatorSilent(after: now - heard)))
                reconnect(now: now, &out)
                return
            }
            if let lost = connectionLostAt, now - lost >= configuration.reconnectGrace {
                out.append(.notice(.coordinatorLost(after: now - lost)))
                reconnect(now: now, &out)
                return
            }
            sendDueProgress(now: now, &out)
            resendDueResults(now: now, &out)
            if lastSent.map({ now - $0 >= heartbeatInterval }) ?? true {
                send(.heartbeat(Heartbeat()), now: now, &out)
            }
        case .idle, .stopped:
            break
        }
    }

    /// HELLO unanswered by every coordinator for `unansweredNotice`: said, and again as often.
    private mutating func noticeUnanswered(now: Instant, _ out: inout [WorkerDirective]) {
        guard let since = unansweredSince, now - since >= configuration.unansweredNotice,
              unansweredNoticed.map({ now - $0 >= configuration.unansweredNotice }) ?? true else { return }
        unansweredNoticed = now
        out.append(.notice(.helloUnanswered(after: now - since)))
    }

    private mutating func receive(_ message: CoordinatorMessage, from index: Int, now: Instant,
                                  _ out: inout [WorkerDirective]) {
        guard session != .idle else { return }
        unansweredSince = nil
        unansweredNoticed = nil
        guard index == coordinator else {
            receive(message, fromOther: index, now: now, &out)
            return
        }
        lastHeard = now
        switch message {
        case .welcome(let welcome):
            welcomed(welcome, by: index, now: now, &out)
        case .standby(let standby):
            // The coordinator of the session is no longer the active one.
            out.append(.notice(.coordinatorStoodDown(active: standby.active)))
            reconnect(now: now, &out)
        case .assign(let assign):
            onAssign(assign, now: now, &out)
        case .cancel(let cancel):
            // Only a running encode is stopped: a held COMPLETE may already be committed, so its
            // file stays until an ACK says otherwise.
            abort(cancel.attempt.leaseToken, because: .cancelled, &out)
        case .ack(let ack):
            onAck(ack, &out)
        case .heartbeat, .active, .joined:
            break  // JOINED: answered before the machine starts (WorkerDaemon's join)
        case .disconnect(let disconnect):
            onDisconnect(disconnect, now: now, &out)
        }
    }

    /// DISCONNECT: `revoked` stops the worker; a refusal of its protocol version has it wait
    /// `versionRetryInterval` before the next HELLO (nothing fails meanwhile: it is not registered,
    /// so nothing is assigned to it); anything else sends it looking again.
    private mutating func onDisconnect(_ disconnect: Disconnect, now: Instant, _ out: inout [WorkerDirective]) {
        if let versions = disconnect.versions, disconnect.reason == .unsupportedVersion
            || (disconnect.reason == .protocolError && !versions.contains(WorkerProtocol.version)) {
            out.append(.notice(.versionRefused(coordinator: versions, detail: disconnect.detail,
                                               retryIn: configuration.versionRetryInterval)))
            session = .connecting
            coordinator = nil
            connectionLostAt = nil
            lastHello = now
            helloHeldUntil = now + configuration.versionRetryInterval
            return
        }
        out.append(.notice(.disconnected(disconnect.reason, detail: disconnect.detail)))
        if disconnect.reason == .revoked {
            for token in attempts.keys { abort(token, because: .revoked, &out) }
            session = .stopped(.revoked)
            coordinator = nil
            out.append(.stop(.revoked))
        } else {
            reconnect(now: now, &out)
        }
    }

    /// A message from a coordinator the session is not with (while connecting: from any).
    private mutating func receive(_ message: CoordinatorMessage, fromOther index: Int, now: Instant,
                                  _ out: inout [WorkerDirective]) {
        switch message {
        case .welcome(let welcome):
            // The first WELCOME while connecting; else a coordinator of a higher epoch took over.
            guard session == .connecting || (welcome.epoch ?? 0) > epoch else { return }
            lastHeard = now
            welcomed(welcome, by: index, now: now, &out)
        case .active(let active):
            guard session == .connecting || active.epoch > epoch else { return }
            sendHello(to: index, now: now, &out)
        case .standby(let standby):
            // A standby's answer to a HELLO; when it knows of a higher epoch than the session's,
            // the coordinator of the session was deposed.
            guard isRegistered, let known = standby.epoch, known > epoch else { return }
            out.append(.notice(.coordinatorStoodDown(active: standby.active)))
            reconnect(now: now, &out)
        case .ack(let ack):
            // Sent only after a commit, whoever sends it: true of the result or the lease.
            onAck(ack, &out)
        case .disconnect(let disconnect) where session == .connecting:
            // The answer to a HELLO (a refused key: `revoked`), from whichever coordinator is active.
            onDisconnect(disconnect, now: now, &out)
        case .assign(let assign) where session == .connecting:
            onAssign(assign, now: now, &out)  // refused: not registered
        case .assign(let assign):
            // From a coordinator of a lower epoch (a deposed one that sent what it had claimed):
            // refused, and the refusal goes to the active one, which hands the segment back at once.
            refuseForeign(assign, now: now, &out)
        case .cancel, .heartbeat, .disconnect, .joined:
            break  // only from the coordinator of the session; JOINED before the machine starts
        }
    }

    /// Registered with coordinator `index` (welcomed again, or anew).
    private mutating func welcomed(_ welcome: Welcome, by index: Int, now: Instant, _ out: inout [WorkerDirective]) {
        heartbeatInterval = .milliseconds(max(1, welcome.heartbeatIntervalMilliseconds))
        heartbeatLiveness = max(1, welcome.heartbeatLiveness)
        let moved = coordinator != index
        coordinator = index
        epoch = welcome.epoch ?? 0
        connectionLostAt = nil
        if session != .registered(session: welcome.session) || moved {
            session = .registered(session: welcome.session)
            out.append(.notice(.registered(session: welcome.session, coordinator: index, epoch: welcome.epoch)))
            // Results held are listed in the HELLO this WELCOME answers; resend them at the next tick.
        }
    }

    // MARK: - Assignments and leases

    private mutating func onAssign(_ assign: Assign, now: Instant, _ out: inout [WorkerDirective]) {
        let token = assign.attempt.leaseToken
        if let existing = attempts[token] {
            // A resent ASSIGN: answer ACCEPT again (it extends the lease like the first).
            if existing.isLive && isRegistered { sendExtension(token, .accept(Accept(attempt: assign.attempt)), now: now, &out) }
            return
        }
        if let held = results[token] {
            // Already done: the result answers it.
            results[token]?.lastSent = now
            send(held.message, now: now, &out)
            return
        }
        if let (code, reason, retryable) = refusal(of: assign) {
            out.append(.notice(.refused(assign.attempt, code: code)))
            let fail = Fail(attempt: assign.attempt, code: code, reason: reason, retryable: retryable)
            hold(.fail(fail), attempt: assign.attempt,
                 resendInterval: .milliseconds(max(1, assign.progressIntervalMilliseconds)), now: now, &out)
            return
        }
        let lease = Duration.milliseconds(assign.leaseMilliseconds)
        let margin = min(configuration.leaseSafetyMargin, lease / 4)
        // At least two extensions fit before the abort point, whatever the coordinator asked for.
        let progressInterval = min(.milliseconds(assign.progressIntervalMilliseconds), (lease - margin) / 2)
        attempts[token] = Attempt(assign: assign, lease: lease, margin: margin, progressInterval: progressInterval,
                                  deadline: now + lease, lastExtensionSent: now)
        out.append(.startEncode(assign))
        sendExtension(token, .accept(Accept(attempt: assign.attempt)), now: now, &out)
    }

    /// An ASSIGN from a coordinator the session is not with: FAIL `not-registered`, held and sent
    /// to the coordinator of the session (any active coordinator commits it, fenced by its token).
    private mutating func refuseForeign(_ assign: Assign, now: Instant, _ out: inout [WorkerDirective]) {
        let token = assign.attempt.leaseToken
        guard attempts[token] == nil, results[token] == nil else { return }
        out.append(.notice(.refused(assign.attempt, code: .notRegistered)))
        let fail = Fail(attempt: assign.attempt, code: .notRegistered,
                        reason: "worker \(configuration.workerName) is not registered with the coordinator that sent "
                            + "this ASSIGN (it follows a coordinator of a higher epoch)", retryable: true)
        hold(.fail(fail), attempt: assign.attempt,
             resendInterval: .milliseconds(max(1, assign.progressIntervalMilliseconds)), now: now, &out)
    }

    /// Why an ASSIGN cannot be taken, as a FAIL's code, reason and retryability; nil to take it.
    private func refusal(of assign: Assign) -> (Fail.Code, String, Bool)? {
        if drain != nil {
            return (.drained, "worker \(configuration.workerName) is shutting down and takes no new segments", true)
        }
        if !isRegistered {
            return (.notRegistered, "worker \(configuration.workerName) has no session (no WELCOME yet)", true)
        }
        if assign.leaseMilliseconds <= 0 || assign.progressIntervalMilliseconds <= 0 {
            return (.invalidAssign, "ASSIGN needs a positive leaseMilliseconds and progressIntervalMilliseconds "
                    + "(got \(assign.leaseMilliseconds) and \(assign.progressIntervalMilliseconds))", false)
        }
        if attempts.values.filter(\.isLive).count >= configuration.slots {
            return (.noFreeSlot, "worker \(configuration.workerName) is already encoding "
                    + "\(configuration.slots) segment(s)", true)
        }
        return nil
    }

    /// Sends an ACCEPT or PROGRESS and remembers when, for the ACK that extends the lease.
    private mutating func sendExtension(_ token: LeaseToken, _ message: WorkerMessage, now: Instant,
                                        _ out: inout [WorkerDirective]) {
        attempts[token]?.unacknowledgedExtensions.append(now)
        attempts[token]?.lastExtensionSent = now
        send(message, now: now, &out)
    }

    private mutating func sendDueProgress(now: Instant, _ out: inout [WorkerDirective]) {
        for (token, attempt) in attempts where attempt.isLive && now - attempt.lastExtensionSent >= attempt.progressInterval {
            let progress = Progress(attempt: attempt.assign.attempt, fraction: attempt.fraction, frames: attempt.frames)
            sendExtension(token, .progress(progress), now: now, &out)
        }
    }

    private mutating func expireLeases(now: Instant, _ out: inout [WorkerDirective]) {
        for (token, attempt) in attempts where attempt.isLive && now > attempt.deadline - attempt.margin {
            abort(token, because: .leaseExpiring, &out)
        }
    }

    private mutating func abort(_ token: LeaseToken, because reason: AbortReason, _ out: inout [WorkerDirective]) {
        guard let attempt = attempts[token], attempt.isLive else { return }
        attempts[token]?.abort = reason
        out.append(.abortEncode(attempt.assign.attempt, because: reason))
    }

    private mutating func onAck(_ ack: Ack, _ out: inout [WorkerDirective]) {
        let token = ack.attempt.leaseToken
        switch ack.acknowledges {
        case .accept, .progress:
            guard var attempt = attempts[token], attempt.isLive else { return }
            if ack.outcome == .stale {
                abort(token, because: .stale, &out)
                return
            }
            // Matching the ACK to the oldest unacknowledged extension can only make the deadline
            // earlier than the coordinator's, never later.
            guard !attempt.unacknowledgedExtensions.isEmpty else { return }
            let sent = attempt.unacknowledgedExtensions.removeFirst()
            if ack.outcome == .accepted { attempt.deadline = max(attempt.deadline, sent + attempt.lease) }
            attempts[token] = attempt
        case .complete, .fail:
            guard let held = results.removeValue(forKey: token) else { return }
            out.append(.notice(.resultAcknowledged(held.attempt, ack.acknowledges, ack.outcome)))
            if ack.outcome == .stale, case .complete(let complete) = held.message {
                out.append(.deleteOutput(path: complete.outputPath, attempt: held.attempt))
            }
        }
    }

    private mutating func sendFailed(_ message: WorkerMessage) {
        // An extension that never left cannot be acknowledged: forget its send time, or every later
        // ACK would be matched to an older send than it answers (safe, but the deadline would lag).
        // The shell reports a failure right after the send, so it is the newest one of its attempt.
        switch message {
        case .accept(let body):
            _ = attempts[body.attempt.leaseToken]?.unacknowledgedExtensions.popLast()
        case .progress(let body):
            _ = attempts[body.attempt.leaseToken]?.unacknowledgedExtensions.popLast()
        default:
            break  // HELLO and results are resent on their timers.
        }
    }

    // MARK: - Results

    private mutating func finishEncode(_ token: LeaseToken, outcome: EncodeOutcome, now: Instant,
                                       _ out: inout [WorkerDirective]) {
        guard let attempt = attempts.removeValue(forKey: token) else { return }
        let assign = attempt.assign
        guard attempt.isLive else {
            // Nobody was told about this output (COMPLETE is only sent for live attempts): remove it,
            // whether the encode stopped or finished just as it was aborted.
            out.append(.deleteOutput(path: assign.outputPath, attempt: assign.attempt))
            return
        }
        let message: WorkerMessage = switch outcome {
        case .completed(let checksum, let sizeBytes, let milliseconds, let frames, let figures):
            .complete(Complete(attempt: assign.attempt, outputPath: assign.outputPath, checksum: checksum,
                               sizeBytes: sizeBytes, encodeMilliseconds: milliseconds, videoFrames: frames,
                               figures: figures))
        case .failed(let code, let reason, let retryable):
            .fail(Fail(attempt: assign.attempt, code: code, reason: reason, retryable: retryable))
        case .cancelled:
            .fail(Fail(attempt: assign.attempt, code: .cancelled, reason: "the encode stopped unexpectedly",
                       retryable: true))
        }
        hold(message, attempt: assign.attempt, resendInterval: attempt.progressInterval, now: now, &out)
    }

    /// Keeps a result until it is acknowledged; sends it now when the session allows.
    private mutating func hold(_ message: WorkerMessage, attempt: SegmentAttempt, resendInterval: Duration,
                               now: Instant, _ out: inout [WorkerDirective]) {
        results[attempt.leaseToken] = HeldResult(message: message, attempt: attempt, resendInterval: resendInterval)
        guard isRegistered else { return }  // the next HELLO carries it
        results[attempt.leaseToken]?.lastSent = now
        send(message, now: now, &out)
    }

    private mutating func resendDueResults(now: Instant, _ out: inout [WorkerDirective]) {
        for (token, held) in results.sorted(by: { Self.order($0.value.attempt, $1.value.attempt) })
        where held.lastSent.map({ now - $0 >= held.resendInterval }) ?? true {
            results[token]?.lastSent = now
            send(held.message, now: now, &out)
        }
    }

    // MARK: - Drain

    private mutating func startDrain(now: Instant, _ out: inout [WorkerDirective]) {
        guard drain == nil else { return }
        drain = Drain(deadline: now + configuration.drainTimeout)
        out.append(.notice(.draining(running: running.count, timeout: configuration.drainTimeout)))
    }

    /// At the drain timeout, the attempts still running are aborted and handed back (FAIL `drained`).
    private mutating func handBackIfDrainTimedOut(now: Instant, _ out: inout [WorkerDirective]) {
        guard let current = drain, !current.handedBack, now >= current.deadline else { return }
        drain?.handedBack = true
        for (token, attempt) in attempts.sorted(by: { Self.order($0.value.assign.attempt, $1.value.assign.attempt) })
        where attempt.isLive {
            abort(token, because: .drained, &out)
            let fail = Fail(attempt: attempt.assign.attempt, code: .drained,
                            reason: "worker \(configuration.workerName) shut down before the segment finished "
                                + "(drain timeout \(configuration.drainTimeout))", retryable: true)
            hold(.fail(fail), attempt: attempt.assign.attempt, resendInterval: attempt.progressInterval, now: now, &out)
        }
    }

    /// A drain is over when no encode is in flight and every result is acknowledged — or, when the
    /// coordinator cannot be reached, once the flush timeout after the drain timeout has passed.
    private mutating func stopIfDrained(now: Instant, _ out: inout [WorkerDirective]) {
        guard let current = drain, !isStopped, attempts.isEmpty else { return }
        guard results.isEmpty || now >= current.deadline + configuration.flushTimeout else { return }
        if !results.isEmpty { out.append(.notice(.unacknowledgedAtStop(results.count))) }
        if isRegistered { send(.disconnect(Disconnect(reason: .shutdown, detail: "drained")), now: now, &out) }
        session = .stopped(.drained)
        out.append(.stop(.drained))
    }

    // MARK: - Helpers

    private static func order(_ a: SegmentAttempt, _ b: SegmentAttempt) -> Bool {
        (a.job.description, a.segment, a.attempt, a.leaseToken.description)
            < (b.job.description, b.segment, b.attempt, b.leaseToken.description)
    }
}
