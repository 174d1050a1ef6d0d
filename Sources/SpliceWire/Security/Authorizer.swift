internal import Synchronization

/// What the ZAP handler asks about a client during its CURVE handshake.
public struct AuthorizationRequest: Sendable, Hashable {
    /// The ZAP domain of the server socket (`CurveRole.server(domain:)`).
    public let domain: String
    /// The client's IP address, as libzmq reports it.
    public let address: String
    /// The client's public key, proven by the CURVE handshake.
    public let publicKey: CurvePublicKey

    public init(domain: String, address: String, publicKey: CurvePublicKey) {
        self.domain = domain
        self.address = address
        self.publicKey = publicKey
    }
}

/// The answer to an `AuthorizationRequest`.
public enum AuthorizationDecision: Sendable, Hashable {
    case allow
    /// Admit the handshake of a key that is not authorized yet, on probation: until the
    /// authorizer admits the key (`isStillAuthorized`), the endpoint passes on only the message
    /// types of its `WireOptions.probationTypes` (a worker presenting its join token).
    case probation
    /// Refuse the client; `reason` goes into the ZAP reply (the client sees status 400).
    case deny(reason: String)
}

/// Decides which client keys a CURVE server admits.
///
/// `authorize` runs once per handshake, from the ZAP handler, and may be slow (a database
/// lookup): it has a deadline, after which the client is refused (fail closed).
/// `isStillAuthorized` runs for every received message and for every send to an authenticated
/// peer, so it must answer from memory; returning false cuts off live sessions of a revoked key.
public protocol Authorizer: Sendable {
    func authorize(_ request: AuthorizationRequest) async -> AuthorizationDecision
    func isStillAuthorized(_ key: CurvePublicKey, domain: String) -> Bool
}

extension Authorizer {
    /// Without an in-memory view, live sessions are not re-checked: revocation takes effect at
    /// the next handshake only. Prefer `EnrolledKeys`, which re-checks.
    public func isStillAuthorized(_ key: CurvePublicKey, domain: String) -> Bool { true }
}

/// The in-memory set of enrolled, unrevoked keys, shared by the ZAP handler (handshakes) and the
/// endpoints (every message). The coordinator loads it from the `workers` table at start and
/// updates it after each enroll/revoke commit; removing a key immediately refuses new handshakes
/// and drops the live sessions' messages (`WireRejection.Reason.revoked`).
public final class EnrolledKeys: Authorizer {
    private let keys: Mutex<Set<CurvePublicKey>>

    public init(_ keys: some Sequence<CurvePublicKey> = []) {
        self.keys = Mutex(Set(keys))
    }

    /// Admits `key`. Returns false if it was already enrolled.
    @discardableResult
    public func enroll(_ key: CurvePublicKey) -> Bool {
        keys.withLock { $0.insert(key).inserted }
    }

    /// Revokes `key`. Returns false if it was not enrolled.
    @discardableResult
    public func revoke(_ key: CurvePublicKey) -> Bool {
        keys.withLock { $0.remove(key) != nil }
    }

    public func contains(_ key: CurvePublicKey) -> Bool {
        keys.withLock { $0.contains(key) }
    }

    public func authorize(_ request: AuthorizationRequest) async -> AuthorizationDecision {
        contains(request.publicKey) ? .allow : .deny(reason: "key not enrolled")
    }

    public func isStillAuthorized(_ key: CurvePublicKey, domain: String) -> Bool {
        contains(key)
    }
}
