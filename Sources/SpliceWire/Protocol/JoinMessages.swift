// The join exchange of the worker protocol (new in version 3; docs/protocol.md, Joining with a
// token): a worker whose key is not enrolled yet presents a join token once, and the coordinator
// enrolls the key the CURVE handshake proved. Until then the worker endpoint admits that session
// on probation: JOIN is the only message it passes on (`WireOptions.probationTypes`).

/// JOIN (worker → coordinator): enroll my key with this token.
public struct Join: MessageBody, Hashable {
    public static let messageType = "JOIN"
    /// The token `splice workers join-token create` printed (`splj_…`).
    public var token: String
    /// The name to list the worker under (its host name by default), as in HELLO.
    public var workerName: String

    public init(token: String, workerName: String) {
        self.token = token
        self.workerName = workerName
    }

    public func rangeViolation() -> String? {
        if token.utf8.count > 128 { return "`token` is longer than 128 bytes" }
        if workerName.utf8.count > 256 { return "`workerName` is longer than 256 bytes" }
        return nil
    }
}

/// JOINED (coordinator → worker): the answer to JOIN. A refused worker stops (it exits with the
/// reason); a joined one says HELLO on the same connection.
public struct Joined: MessageBody, Hashable {
    public static let messageType = "JOINED"

    public enum Outcome: String, Sendable, Hashable, Codable {
        /// The key is enrolled now; the token has one use fewer.
        case joined
        /// The key was enrolled already; nothing was spent.
        case alreadyEnrolled = "already-enrolled"
        /// Not enrolled: `reason` says why.
        case refused
    }

    public var outcome: Outcome
    /// Why it was refused: `unknown-token`, `expired`, `used-up`, `revoked`, `key-revoked`.
    public var reason: String?
    /// What to do about it, for the worker's log.
    public var detail: String?

    public init(outcome: Outcome, reason: String? = nil, detail: String? = nil) {
        self.outcome = outcome
        self.reason = reason
        self.detail = detail
    }
}
