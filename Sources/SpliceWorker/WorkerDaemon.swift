internal import Foundation
internal import SpliceHTTP
public import SpliceCore
public import SpliceLog
internal import SpliceMedia
internal import SpliceConcurrency
public import SpliceWire
public import SpliceDaemon

/// `splice worker`: the shell around ``WorkerStateMachine``. It owns a DEALER to the coordinator
/// (libzmq reconnects with backoff; `immediate` makes sends fail while cut off), feeds the machine
/// every received message, a tick every ``WorkerConfiguration/tickInterval`` and the progress and
/// outcome of each encode, and carries out what the machine decides: sends, encodes started and
/// aborted, outputs deleted.
///
///     let worker = try WorkerDaemon(configuration: WorkerConfiguration(
///         coordinatorEndpoint: "tcp://127.0.0.1:7450", slots: 2, spool: spoolURL))
///     try await worker.run()          // until drained (after shutdown()) or revoked
///     await worker.shutdown()         // from another task: drain (SIGTERM)
///
/// All state belongs to the machine, which one loop in `run()` drives, one event at a time.
/// Encodes run on their own threads (``SegmentExporter``); spool files are touched on the spool's
/// Dispatch queue; the socket lives on its endpoint's thread.
public actor WorkerDaemon: Service {
    public nonisolated let name = "worker"
    public nonisolated let configuration: WorkerConfiguration
    private let logger: Logger
    /// The shared spool; nil in transfer mode.
    private let spool: Spool?
    /// Transfer mode's scratch and data endpoint, while running.
    private var transfer: WorkerTransfer?
    private var machine: WorkerStateMachine
    private let events: AsyncStream<WorkerEvent>
    private let eventSink: AsyncStream<WorkerEvent>.Continuation
    private var encodes: [LeaseToken: Task<Void, Never>] = [:]
    /// One DEALER per coordinator, in the order of the configuration's list.
    private var endpoints: [WorkerEndpoint] = []
    private var started = false
    /// Set by `shutdown()`: a join still waiting for its answer gives up.
    private var stopRequested = false
    /// The operators' figures (`--metrics-endpoint`).
    private nonisolated let figures: WorkerMetrics
    /// How many threads each encode gets.
    private nonisolated let threads: EncoderThreads

    /// Checks the configuration and the spool (it must be a writable directory); connects nothing yet.
    public init(configuration: WorkerConfiguration, logger: Logger = Logger()) throws(WorkerError) {
        guard configuration.slots >= 1 else {
            throw WorkerError(.invalidConfiguration, "slots must be at least 1 (got \(configuration.slots))")
        }
        guard !configuration.name.isEmpty else { throw WorkerError(.invalidConfiguration, "the worker name is empty") }
        let coordinators = configuration.coordinatorEndpoints
        guard !coordinators.isEmpty else {
            throw WorkerError(.invalidConfiguration, "no coordinator endpoint given; expected tcp://HOST:7450 "
                              + "(or several, comma-separated)")
        }
        for endpoint in coordinators where !endpoint.contains("://") {
            throw WorkerError(.invalidConfiguration, "coordinator endpoint '\(endpoint)' "
                              + "is not a ZeroMQ endpoint like tcp://HOST:7450")
        }
        guard configuration.coordinatorKeys.isEmpty || configuration.coordinatorKeys.count == coordinators.count else {
            throw WorkerError(.invalidConfiguration, "\(configuration.coordinatorKeys.count) coordinator keys for "
                              + "\(coordinators.count) coordinators: give one key they share, or one per coordinator "
                              + "in the same order")
        }
        if configuration.spool == nil, configuration.effectiveDataEndpoints.count != coordinators.count {
            throw WorkerError(.invalidConfiguration, "\(configuration.effectiveDataEndpoints.count) data endpoints "
                              + "for \(coordinators.count) coordinators: give one per coordinator, in the same order")
        }
        guard configuration.drainTimeout >= .zero, configuration.tickInterval > .zero,
              configuration.helloInterval > .zero else {
            throw WorkerError(.invalidConfiguration, "drain timeout, tick and HELLO intervals must be positive")
        }
        self.configuration = configuration
        self.logger = logger.with(["worker": configuration.name])
        if let root = configuration.spool {
            self.spool = try Spool.open(root)
        } else {
            self.spool = nil
        }
        let threads = EncoderThreads(usableCores: configuration.usableCores.count, slots: configuration.slots,
                                     fixed: configuration.codecThreads)
        self.threads = threads
        self.figures = WorkerMetrics(slots: configuration.slots, usableCores: configuration.usableCores.count,
                                     threadsPerSlot: threads.perSlot)
        self.machine = WorkerStateMachine(configuration: Self.machineConfiguration(configuration, threads: threads,
                                                                                   metricsEndpoint: nil))
        (events, eventSink) = AsyncStream.makeStream(of: WorkerEvent.self)
    }

    /// What the state machine says about this worker in HELLO; `metricsEndpoint` as bound.
    private static func machineConfiguration(
        _ configuration: WorkerConfiguration, threads: EncoderThreads, metricsEndpoint: String?
    ) -> WorkerStateMachine.Configuration {
        WorkerStateMachine.Configuration(
            workerName: configuration.name, slots: configuration.slots, encoders: configuration.encoders,
            software: configuration.software, helloInterval: configuration.helloInterval,
            leaseSafetyMargin: configuration.leaseSafetyMargin, drainTimeout: configuration.drainTimeout,
            flushTimeout: configuration.flushTimeout, storage: configuration.spool == nil ? .transfer : nil,
            usableCores: configuration.usableCores.count, threadsPerSlot: threads.perSlot,
            metricsEndpoint: metricsEndpoint, coordinators: configuration.coordinatorEndpoints.count,
            reconnectGrace: configuration.reconnectGrace)
    }

    /// Connects and works until a drain completes (returns) or the coordinator revokes this
    /// worker's key (throws ``WorkerError/Code/revoked``). Cancelling the task stops at once:
    /// encodes are cancelled and leave no partial files; unacknowledged results are lost to
    /// this worker (the coordinator re-leases their segments).
    public func run() async throws {
        guard !started else { throw WorkerError(.alreadyRunning, "this worker daemon is already running") }
        started = true
        let operations = try startOperations()
        // HELLO names the operations endpoint as bound (port 0, or the default moved off a busy port).
        machine = WorkerStateMachine(configuration: Self.machineConfiguration(
            configuration, threads: threads, metricsEndpoint: operations?.address.description))
        let context: WireContext
        var endpoints: [WorkerEndpoint] = []
        do {
            context = try WireContext()
            do {
                for (index, address) in configuration.coordinatorEndpoints.enumerated() {
                    endpoints.append(WorkerEndpoint(try await WireEndpoint.connect(
                        address, type: .dealer, context: context, options: configuration.wireOptions(coordinator: index))))
                }
            } catch {
                for endpoint in endpoints { await endpoint.close() }
                await context.terminate()
                throw error
            }
        } catch {
            await operations?.close()
            throw error
        }
        self.endpoints = endpoints
        figures.connected(endpoints.map(\.counters))
        if spool == nil {
            do {
                transfer = try await WorkerTransfer.start(configuration, context: context, logger: logger)
            } catch {
                for endpoint in endpoints { await endpoint.close() }
                await context.terminate()
                await operations?.close()
                throw error
            }
        }
        logger.info("worker ready", [
            "coordinator": configuration.coordinatorEndpoint, "slots": configuration.slots,
            "storage": spool == nil ? "transfer" : "spool",
            "spool": spool?.root.path ?? "-", "scratch": transfer?.scratch.path ?? "-",
            "data_endpoint": spool == nil ? configuration.effectiveDataEndpoint : "-", "curve": configuration.curve != nil,
            "usable_cores": configuration.usableCores.count, "affinity_cores": configuration.usableCores.affinity,
            "cgroup_cpu_limit": configuration.usableCores.cgroupLimit?.description ?? "none",
            "threads_per_slot": threads.perSlot,
        ])
        var helpers: [Task<Void, Never>] = []
        for (index, endpoint) in endpoints.enumerated() {
            helpers.append(watchConnection(endpoint.wire, index: index,
                                           address: configuration.coordinatorEndpoints[index]))
        }
        if let token = configuration.joinToken {
            do {
                try await join(token, over: endpoints)
            } catch {
                for helper in helpers { helper.cancel() }
                for endpoint in endpoints { await endpoint.close() }
                await transfer?.close()
                await context.terminate()
                await operations?.close()
                throw error
            }
        }
        helpers.append(tick())
        for (index, endpoint) in endpoints.enumerated() {
            helpers.append(receive(from: endpoint, index: index))
        }

        await process(.start)
        for await event in events {
            await process(event)
            if machine.isStopped && machine.encodesInFlight == 0 { break }
        }

        for helper in helpers { helper.cancel() }
        for task in encodes.values { task.cancel() }
        for task in encodes.values { await task.value }
        for endpoint in endpoints { await endpoint.close() }  // lingers briefly so a last DISCONNECT still leaves
        await transfer?.close()
        await context.terminate()
        figures.registered.set(0)
        await operations?.close()
        if case .stopped(.revoked) = machine.session {
            throw WorkerError(.revoked, "the coordinator revoked this worker's key, and a revoked key cannot be "
                              + "enrolled again: generate a new key pair here (`splice keys generate`), enroll its "
                              + ".pub on the coordinator (`splice workers enroll`) and start the worker with it")
        }
        logger.info("worker stopped", ["reason": machine.isStopped ? "drained" : "cancelled"])
    }

    /// Drains (SIGTERM): no new segments; running ones finish, or are handed back with FAIL
    /// `drained` after the drain timeout; `run()` returns once every result is acknowledged.
    public func shutdown() async {
        stopRequested = true
        eventSink.yield(.drain)
    }

    // MARK: - Joining

    /// Presents the join token to every coordinator (the active one answers) until one answers
    /// JOINED: enrolled (or already enrolled) goes on to HELLO; refused throws
    /// ``WorkerErrorCode/joinRefused`` with the coordinator's reason. No answer is asked again,
    /// after 100 ms at first and twice as long each time up to
    /// ``WorkerConfiguration/joinRetryInterval``: the worker's socket queues only to a connection
    /// that is up (`ZMQ_IMMEDIATE`), so the JOIN sent as the daemon starts, before its connection
    /// has completed, went nowhere and the worker waited the whole interval (2 s) to ask again.
    /// Logged now and then; `shutdown()` ends it. A JOIN answered twice spends one token use: the
    /// second answer is "already enrolled".
    private func join(_ token: String, over endpoints: [WorkerEndpoint]) async throws(WorkerError) {
        let message = WorkerMessage.join(Join(token: token, workerName: configuration.name))
        logger.info("joining the cluster with a join token", [
            "coordinator": configuration.coordinatorEndpoint, "key": configuration.curve?.keys.publicKey.z85 ?? "-",
        ])
        var asked = 0
        let longest = configuration.joinRetryInterval
        var wait = min(longest, .milliseconds(100))
        var waited = Duration.zero, warnedAt = Duration.zero
        while !stopRequested && !Task.isCancelled {
            for endpoint in endpoints { try? await endpoint.send(message) }
            asked += 1
            let answer = await Self.joined(from: endpoints, within: wait)
            waited += wait
            wait = min(longest, wait * 2)
            if let answer {
                switch answer.outcome {
                case .joined:
                    logger.info("joined the cluster: the coordinator enrolled this worker's key",
                                ["key": configuration.curve?.keys.publicKey.z85 ?? "-"])
                    return
                case .alreadyEnrolled:
                    logger.info("this worker's key is enrolled already; no join token use spent",
                                ["key": configuration.curve?.keys.publicKey.z85 ?? "-"])
                    return
                case .refused:
                    let reason = answer.reason ?? "refused"
                    throw WorkerError(.joinRefused, "the coordinator refused this worker's join token (\(reason)): "
                                      + (answer.detail ?? "create a new one with `splice workers join-token create`"))
                }
            }
            // Once a whole interval has gone unanswered, then every 15 intervals.
            if waited >= longest && (warnedAt == .zero || waited - warnedAt >= longest * 15) {
                warnedAt = waited
                logger.warning("no answer to the join token yet; still asking", [
                    "coordinator": configuration.coordinatorEndpoint, "attempts": asked,
                    "hint": "is the coordinator reachable, --server-key its public key, and is one coordinator active?",
                ])
            }
        }
        throw WorkerError(.joinRefused, "stopped before the coordinator answered the join token")
    }

    /// The first JOINED any coordinator sends within `timeout`; anything else read meanwhile is
    /// dropped (nothing but JOINED comes before HELLO).
    private static func joined(from endpoints: [WorkerEndpoint], within timeout: Duration) async -> Joined? {
        await withDeadline(timeout) {
            await withTaskGroup(of: Joined?.self) { group in
                for endpoint in endpoints {
                    group.addTask {
                        while let received = await endpoint.receive() {
                            if case .message(let envelope, _) = received, case .joined(let joined) = envelope.message {
                                return joined
                            }
                        }
                        return nil
                    }
                }
                for await answer in group {
                    if let answer {
                        group.cancelAll()
                        return answer
                    }
                }
                return nil
            }
        } ?? nil
    }

    /// A trivial call for `/healthz`: the actor is not stuck.
    func ping() -> Bool { true }

    /// How many ports a busy default operations endpoint may move through (9451, 9452 … 9514).
    static let metricsPortsTried = 64

    /// Starts the operators' endpoint when one is configured. A busy default port moves to the
    /// next free one (a second worker on the host), logged; a busy address the operator chose is
    /// an error.
    private func startOperations() throws(WorkerError) -> HTTPServer? {
        guard let wanted = configuration.metricsEndpoint else { return nil }
        let site = WorkerSite(daemon: self, figures: figures, version: configuration.version)
        let movable = configuration.metricsEndpointIsDefault && wanted.port != 0
        let last = movable ? UInt16(clamping: Int(wanted.port) + Self.metricsPortsTried - 1) : wanted.port
        var address = wanted
        while true {
            do throws(HTTPServerError) {
                let server = try OperationsServer.start(on: address, site: site, logger: logger)
                if address != wanted {
                    logger.info("the default operations endpoint is in use; serving on the next free port", [
                        "wanted": wanted.description, "address": server.address.description,
                        "hint": "another process (a second worker?) holds the default; give each worker its own "
                            + "--metrics-endpoint to choose its port",
                    ])
                }
                return server
            } catch where error.code == .addressInUse && address.port < last {
                address.port += 1
            } catch where error.code == .addressInUse && movable {
                throw WorkerError(.invalidConfiguration, "the operations endpoint cannot start: \(wanted) and the "
                                  + "\(last - wanted.port) ports after it are in use; give a free one with "
                                  + "--metrics-endpoint, or `off`")
            } catch {
                throw WorkerError(.invalidConfiguration,
                                  "the operations endpoint (--metrics-endpoint) cannot start: \(error)")
            }
        }
    }

    // MARK: - Event sources

    private nonisolated func receive(from endpoint: WorkerEndpoint, index: Int) -> Task<Void, Never> {
        Task.detached { [eventSink, logger, threads] in
            let dropLog = LogThrottle()
            while let received = await endpoint.receive() {
                switch received {
                case .message(let envelope, _):
                    if case .assign = envelope.message { threads.assignQueued() }
                    eventSink.yield(.received(envelope.message, from: index))
                case .rejected(let rejection, _):
                    // Already counted by the endpoint; the session goes on. A line a second per reason.
                    if let suppressed = dropLog.admit(rejection.reason.rawValue) {
                        logger.warning("dropped a message from the coordinator", [
                            "reason": rejection.reason.rawValue, "detail": rejection.detail, "suppressed": suppressed,
                        ])
                    }
                }
            }
        }
    }

    private nonisolated func tick() -> Task<Void, Never> {
        Task.detached { [eventSink, interval = configuration.tickInterval] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                eventSink.yield(.tick)
            }
        }
    }

    private nonisolated func watchConnection(_ wire: WireEndpoint, index: Int, address coordinator: String)
        -> Task<Void, Never>
    {
        Task.detached { [logger, eventSink] in
            for await event in wire.events {
                switch event.kind {
                case .handshakeSucceeded:
                    logger.info("connected to the coordinator", ["coordinator": coordinator])
                    eventSink.yield(.connected(index))
                case .disconnected:
                    logger.warning("lost the connection to the coordinator; reconnecting", ["coordinator": coordinator])
                    eventSink.yield(.disconnected(index))
                case .authenticationFailed(let status):
                    logger.error("the coordinator refused this worker's key", [
                        "coordinator": coordinator, "zap_status": status,
                        "hint": "if it is not enrolled, enroll its .pub with `splice workers enroll`; a revoked key "
                            + "stays refused: generate a new one with `splice keys generate` and enroll that",
                    ])
                case .handshakeFailedProtocol:
                    logger.error("CURVE handshake with the coordinator failed; check --server-key",
                                 ["coordinator": coordinator])
                default:
                    break
                }
            }
        }
    }

    // MARK: - Carrying out directives

    private func process(_ event: WorkerEvent) async {
        if case .encodeFinished(let token, _) = event { encodes[token] = nil }
        if case .received(.assign, _) = event { threads.assignHandled() }
        for directive in machine.handle(event, at: .now) {
            await execute(directive)
        }
        if case .registered = machine.session { figures.registered.set(1) } else { figures.registered.set(0) }
    }

    private func execute(_ directive: WorkerDirective) async {
        switch directive {
        case .send(let message, .coordinator(let index)):
            guard endpoints.indices.contains(index) else { return }
            do {
                try await endpoints[index].send(message)
            } catch {
                logger.debug("send to the coordinator failed", [
                    "type": type(of: message.body).messageType, "error": error.code.rawValue,
                    "coordinator": configuration.coordinatorEndpoints[index],
                ])
                await process(.sendFailed(message))
            }
        case .send(let message, .everyCoordinator):
            // HELLO while looking for the active coordinator: resent on its timer, failures or not.
            for endpoint in endpoints { try? await endpoint.send(message) }
        case .startEncode(let assign):
            start(assign, from: machine.coordinator ?? 0)
        case .abortEncode(let attempt, let reason):
            log(attempt).warning("segment aborted", ["reason": reason.rawValue])
            encodes[attempt.leaseToken]?.cancel()
        case .deleteOutput(let path, let attempt):
            if let transfer {
                // Transfer mode: the result is in scratch, offered under its lease token.
                await transfer.discard(attempt.leaseToken)
                return
            }
            // The coordinator chose the path: never delete anything outside the spool on its word.
            guard let spool, spool.contains(path) else { return }
            if await spool.remove(path) {
                log(attempt).info("segment output deleted", ["path": path])
            }
        case .notice(let notice):
            log(notice)
        case .stop(let reason):
            logger.info("worker stopping", ["reason": reason.rawValue, "encodes_in_flight": machine.encodesInFlight])
        }
    }

    private func start(_ assign: Assign, from coordinator: Int) {
        let token = assign.attempt.leaseToken
        let storage: SegmentEncode.Storage
        if let spool {
            storage = .spool(spool)
        } else if let transfer {
            storage = .transfer(transfer)
        } else {
            return
        }
        let transfer = self.transfer
        let logger = log(assign.attempt)
        let threads = self.threads
        var encode = SegmentEncode(assign: assign, storage: storage, encoders: configuration.encoders) {
            let count = threads.forOpeningEncoder()
            logger.debug("segment encoder opening", ["codec_threads": count])
            return count
        }
        encode.coordinator = coordinator
        logger.info("segment started", ["output": assign.outputPath])
        figures.started()
        threads.encodeStarted()
        encodes[token] = Task.detached { [eventSink, figures] in
            let outcome = await encode.run { fraction in
                eventSink.yield(.encodeProgress(token, fraction: fraction, frames: 0))
            }
            threads.encodeEnded()
            figures.ended(outcome)
            if case .completed = outcome {} else { await transfer?.discard(token) }
            switch outcome {
            case .completed(let checksum, let size, let milliseconds, let frames, _):
                logger.info("segment encoded", ["checksum": checksum.description, "bytes": size, "encode_ms": milliseconds,
                                                "frames": frames])
            case .failed(let code, let reason, let retryable):
                logger.warning("segment failed", ["code": code.rawValue, "reason": reason, "retryable": retryable])
            case .cancelled:
                break
            }
            eventSink.yield(.encodeFinished(token, outcome))
        }
    }

    // MARK: - Logging

    private func log(_ notice: WorkerNotice) {
        switch notice {
        case .registered(let session, let index, let epoch):
            logger.info("registered with the coordinator", [
                "session": session, "slots": configuration.slots,
                "coordinator": configuration.coordinatorEndpoints[index], "epoch": epoch.map(String.init) ?? "-",
            ])
        case .coordinatorLost(let after):
            logger.info("the coordinator's connection stayed lost; looking for the active coordinator", ["after": after])
        case .coordinatorStoodDown(let active):
            logger.info("the coordinator is no longer the active one; looking for the active coordinator",
                        ["active": active ?? "unknown"])
        case .coordinatorSilent(let silence):
            logger.warning("coordinator silent; saying HELLO again", ["silent": silence])
        case .disconnected(let reason, let detail):
            logger.warning("coordinator ended the session", ["reason": reason.rawValue, "detail": detail])
        case .versionRefused(let versions, let detail, let retryIn):
            let mine = WorkerProtocol.version
            logger.warning("waiting: the coordinator does not speak this worker's protocol version", [
                "worker_version": mine, "coordinator_versions": versions.description, "retry_in": retryIn,
                "hint": versions.newest < mine
                    ? "upgrade the coordinator first (docs/deploy.md, Upgrading); this worker waits for it"
                    : "upgrade this worker to the coordinator's release (docs/deploy.md, Upgrading)",
                "detail": detail,
            ])
        case .helloUnanswered(let after):
            logger.warning("no coordinator answers HELLO; still trying", [
                "after": after, "worker_version": WorkerProtocol.version,
                "coordinators": configuration.coordinatorEndpoints.joined(separator: ","),
                "hint": "check that the coordinator runs and --coordinator reaches it; a coordinator of an older "
                    + "release (splice-worker \(WorkerProtocol.oldestVersion)) does not answer this worker's version "
                    + "\(WorkerProtocol.version): upgrade the coordinator first (docs/deploy.md, Upgrading)",
            ])
        case .refused(let attempt, let code):
            log(attempt).warning("segment refused", ["code": code.rawValue])
        case .resultAcknowledged(let attempt, let acknowledges, let outcome):
            log(attempt).info("result acknowledged", ["acknowledges": acknowledges.rawValue, "outcome": outcome.rawValue])
        case .draining(let running, let timeout):
            logger.info("draining: no new segments", ["running": running, "drain_timeout": timeout])
        case .unacknowledgedAtStop(let count):
            logger.warning("stopping with results the coordinator never acknowledged", ["results": count])
        }
    }

    /// The logger with the attempt's fields (`job=… segment=… attempt=…`).
    private nonisolated func log(_ attempt: SegmentAttempt) -> Logger {
        logger.with(["job": attempt.job.description, "segment": attempt.segment, "attempt": attempt.attempt])
    }
}
