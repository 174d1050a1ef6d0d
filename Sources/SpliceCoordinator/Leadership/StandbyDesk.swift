import SpliceLog
import SpliceStore
import SpliceWire

/// The worker endpoint of a coordinator that stands by (docs/coordinator.md, Standby coordinators):
/// it gives no work and writes nothing. A worker that says it is `standbyAware` gets STANDBY — the
/// active coordinator's epoch and worker endpoint, as last read — in answer to its HELLO (and, at
/// most once a second, to anything else it sends here); an older worker is left unanswered and
/// says HELLO again until this coordinator is the active one. A worker that sends anything else
/// without having said HELLO here (it had a session with the process this endpoint had before)
/// is told DISCONNECT `reregister`. Every worker heard from is
/// remembered (and those of this coordinator's own last term), so that on taking over the desk
/// tells them ACTIVE and they come at once instead of noticing the old coordinator is gone.
actor StandbyDesk {
    /// The most workers remembered; beyond it the oldest half is forgotten.
    static let capacity = 100_000

    private let endpoint: CoordinatorWorkerEndpoint
    private let logger: Logger
    private let dropLog = LogThrottle()
    private var known: [WorkerIdentity: (peer: StandbyPeer, heard: ContinuousClock.Instant)] = [:]
    private var lastAnswered: [WorkerIdentity: ContinuousClock.Instant] = [:]
    private var versionRefusals = VersionRefusals()
    private var answer = Standby()

    init(endpoint: CoordinatorWorkerEndpoint, logger: Logger) {
        self.endpoint = endpoint
        self.logger = logger
    }

    /// A trivial call for `/healthz`: the desk is not stuck.
    func ping() -> Bool { true }

    /// What the leadership loop read: STANDBY answers name this active coordinator.
    func update(_ leader: LeaderLease.Record?) {
        let active = leader?.active
        answer = Standby(epoch: active?.epoch, active: active?.workersEndpoint)
    }

    /// Messages from the worker endpoint while standing by.
    func received(_ batch: [Received<WorkerMessage>]) async {
        let now = ContinuousClock.now
        // Every answer goes in the version the worker spoke (docs/protocol.md, Versions).
        var replies: [(message: CoordinatorMessage, peer: WirePeer, version: Int?)] = []
        versionRefusals.prune(now: now)
        for received in batch {
            switch received {
            case .message(let envelope, let peer):
                guard let identity = WorkerIdentity(peer: peer) else { continue }
                let aware: Bool
                if case .hello(let hello) = envelope.message {
                    aware = hello.standbyAware == true
                    remember(StandbyPeer(identity: identity, peer: peer, standbyAware: aware,
                                         protocolVersion: hello.speaking(envelopeVersion: envelope.version).sessionVersion),
                             now: now)
                    if !aware, let suppressed = dropLog.admit("older-worker") {
                        logger.info("HELLO from a worker that does not follow standbys: it waits for this one", [
                            "worker": identity.description, "name": hello.workerName, "suppressed": suppressed,
                        ])
                    }
                } else if let entry = known[identity] {
                    aware = entry.peer.standbyAware
                    known[identity] = (StandbyPeer(identity: identity, peer: peer, standbyAware: aware,
                                                   protocolVersion: entry.peer.protocolVersion), now)
                    // Something other than HELLO: answered at most once a second.
                    if let last = lastAnswered[identity], now - last < .seconds(1) { continue }
                } else {
                    // A worker that believes it has a session here: with the process this endpoint
                    // had before (killed, and this one started in its place) or with this one's
                    // own last term. Told to say HELLO, as an active coordinator tells an unknown
                    // session, so it looks for the active one and this desk learns of it (and
                    // tells it ACTIVE on taking over) instead of the worker waiting out its
                    // coordinator's silence. At most once a second.
                    if case .disconnect = envelope.message { continue }
                    if let last = lastAnswered[identity], now - last < .seconds(1) { continue }
                    lastAnswered[identity] = now
                    replies.append((.disconnect(Disconnect(reason: .reregister,
                                                           detail: "this coordinator stands by: send HELLO")),
                                    peer, envelope.version))
                    continue
                }
                guard aware else { continue }
                lastAnswered[identity] = now
                replies.append((.standby(answer), peer, envelope.version))
            case .rejected(let rejection, let peer):
                if let identity = WorkerIdentity(peer: peer),
                   let refusal = versionRefusals.answer(rejection, from: identity, now: now) {
                    // As the active coordinator answers it: the worker learns which side to upgrade.
                    replies.append((.disconnect(refusal), peer, rejection.version))
                    continue
                }
                if let suppressed = dropLog.admit(rejection.reason.rawValue) {
                    logger.warning("message dropped", ["reason": rejection.reason.rawValue, "detail": rejection.detail,
                                                       "worker": WorkerIdentity(peer: peer)?.description ?? "unknown",
                                                       "suppressed": suppressed])
                }
            }
        }
        if !replies.isEmpty { _ = await endpoint.send(all: replies) }
    }

    /// Workers this coordinator's ended term had: told STANDBY already, remembered for ACTIVE.
    func remember(_ peers: [StandbyPeer]) {
        let now = ContinuousClock.now
        for peer in peers { remember(peer, now: now) }
    }

    /// Tells every remembered worker that understands it that this coordinator is now active at
    /// `epoch`; returns how many were told.
    @discardableResult
    func announce(epoch: Int64) async -> Int {
        let told = known.values.filter(\.peer.standbyAware).map {
            (message: CoordinatorMessage.active(Active(epoch: epoch)), peer: $0.peer.peer,
             version: Optional($0.peer.protocolVersion))
        }
        guard !told.isEmpty else { return 0 }
        _ = await endpoint.send(all: told)
        return told.count
    }

    private func remember(_ peer: StandbyPeer, now: ContinuousClock.Instant) {
        known[peer.identity] = (peer, now)
        guard known.count > Self.capacity else { return }
        let oldest = known.sorted { $0.value.heard < $1.value.heard }.prefix(known.count / 2).map(\.key)
        for identity in oldest {
            known[identity] = nil
            lastAnswered[identity] = nil
        }
    }
}
