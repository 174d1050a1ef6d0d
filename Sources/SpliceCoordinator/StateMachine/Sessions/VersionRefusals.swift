import SpliceWire

/// The answer to a worker whose worker-protocol version this coordinator does not speak
/// (docs/protocol.md, Versions): DISCONNECT naming both versions and which side to upgrade, at most
/// once per `interval` per worker — an older worker says HELLO again at once on a DISCONNECT, so
/// answering every HELLO would be a hot loop, and every answer is a line in its log.
///
/// A worker newer than this coordinator hears `unsupported-version` (every version from 3 on knows
/// it, and waits); an older one, which knows no such reason, hears `protocol-error` with the same
/// words in `detail`, which it logs. Either goes in the version the worker spoke (DISCONNECT's
/// shape is the same in every version), so it can read it.
struct VersionRefusals: Sendable {
    typealias Instant = ContinuousClock.Instant

    /// The least time between two answers to one worker.
    let interval: Duration
    private var answered: [WorkerIdentity: Instant] = [:]

    init(interval: Duration = .seconds(10)) {
        self.interval = interval
    }

    /// The DISCONNECT for `rejection` from `identity` — a HELLO of a version this build does not
    /// speak — unless that worker was answered less than `interval` ago, or it is not such a HELLO.
    mutating func answer(_ rejection: WireRejection, from identity: WorkerIdentity, now: Instant) -> Disconnect? {
        guard rejection.reason == .unsupportedVersion, rejection.messageType == Hello.messageType,
              let version = rejection.version, version >= 1 else { return nil }
        if let last = answered[identity], now - last < interval { return nil }
        answered[identity] = now
        return Self.refusal(ofVersion: version)
    }

    /// Forgets answers older than `interval` (the timer calls it: the table stays as small as the
    /// set of workers refused lately).
    mutating func prune(now: Instant) {
        answered = answered.filter { now - $0.value < interval }
    }

    /// What this build says to a worker speaking `version`.
    static func refusal(ofVersion version: Int) -> Disconnect {
        let speaks = WorkerProtocol.versions
        if version > speaks.newest {
            return Disconnect(
                reason: .unsupportedVersion,
                detail: "the worker speaks splice-worker \(version), newer than this coordinator's \(speaks): upgrade "
                    + "the coordinator first, then the workers (docs/deploy.md, Upgrading)",
                versions: speaks)
        }
        return Disconnect(
            reason: .protocolError,
            detail: "the worker speaks splice-worker \(version), older than this coordinator accepts (\(speaks)): "
                + "upgrade the worker to this coordinator's release (docs/deploy.md, Upgrading)",
            versions: speaks)
    }
}
