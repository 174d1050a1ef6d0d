public import Foundation
public import SpliceCore

/// A worker join token as stored: never the token, only its SHA-256.
public struct JoinTokenRecord: Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var tokenHash: SHA256Digest
    /// How many workers it may enroll in all, and how many more it still may.
    public var uses: Int
    public var usesLeft: Int
    public var createdAt: Date
    public var expiresAt: Date
    public var revokedAt: Date?
}

/// What presenting a join token came to.
public enum JoinOutcome: Sendable, Equatable {
    /// The key is enrolled now, by this token (one use spent).
    case joined(Worker, token: String)
    /// The key was enrolled already: nothing spent.
    case alreadyEnrolled(Worker)
    /// Refused; `reason` says why in words an operator acts on.
    case refused(JoinRefusal)
}

/// Why a join was refused; the raw value is the stable word logs and the JOINED message carry.
public enum JoinRefusal: String, Sendable, Equatable, CaseIterable {
    case unknownToken = "unknown-token"
    case expired
    case usedUp = "used-up"
    case revoked
    case keyRevoked = "key-revoked"

    /// What happened and what to do, for the worker's log and the coordinator's.
    public var explanation: String {
        switch self {
        case .unknownToken:
            "the coordinator knows no such join token; check SPLICE_JOIN_TOKEN, or create one with "
                + "`splice workers join-token create`"
        case .expired:
            "the join token has expired; create a new one with `splice workers join-token create`"
        case .usedUp:
            "the join token has no uses left; create a new one with `splice workers join-token create --uses N`"
        case .revoked:
            "the join token was revoked; create a new one with `splice workers join-token create`"
        case .keyRevoked:
            "this worker's key was revoked and cannot join again; start it with a new key (or none: a joining "
                + "worker without --secret-key makes its own)"
        }
    }
}

extension JoinTokenRecord {
    static let columns: PostgresQuery = "id, name, token_hash, uses, uses_left, created_at, expires_at, revoked_at"

    init(row: PostgresRow) throws(StoreError) {
        self.init(
            id: try row.decode(column: "id"), name: try row.decode(column: "name"),
            tokenHash: try row.decode(column: "token_hash"), uses: Int(try row.decode(Int32.self, column: "uses")),
            usesLeft: Int(try row.decode(Int32.self, column: "uses_left")),
            createdAt: try row.decode(column: "created_at"), expiresAt: try row.decode(column: "expires_at"),
            revokedAt: try row.decode(column: "revoked_at"))
    }
}

extension JobRepository {
    /// Records a new join token for `uses` workers, valid for `lifetime`; throws `.conflict` when a
    /// live token already has the name.
    public func createJoinToken(name: String, tokenHash: SHA256Digest, uses: Int, lifetime: Duration) async throws
        -> JoinTokenRecord
    {
        let seconds = lifetime.components.seconds
        let rows = try await client.query("""
            INSERT INTO join_tokens (name, token_hash, uses, uses_left, expires_at)
            VALUES (\(name), \(tokenHash), \(Int32(clamping: uses)), \(Int32(clamping: uses)),
                    now() + make_interval(secs => \(Double(seconds))))
            ON CONFLICT DO NOTHING
            RETURNING \(JoinTokenRecord.columns)
            """)
        guard let row = rows.first else {
            throw StoreError(.conflict, "a join token named \(name) exists; revoke it first or choose another name",
                             isRetryable: false)
        }
        return try JoinTokenRecord(row: row)
    }

    /// Every join token that is not revoked (used-up and expired ones included), by name.
    public func joinTokens() async throws -> [JoinTokenRecord] {
        try await client.query("""
            SELECT \(JoinTokenRecord.columns) FROM join_tokens WHERE revoked_at IS NULL ORDER BY name
            """).map(JoinTokenRecord.init(row:))
    }

    /// Revokes the live join token named `name`; nil when there is none.
    public func revokeJoinToken(named name: String) async throws -> JoinTokenRecord? {
        try await client.query("""
            UPDATE join_tokens SET revoked_at = now() WHERE name = \(name) AND revoked_at IS NULL
            RETURNING \(JoinTokenRecord.columns)
            """).first.map(JoinTokenRecord.init(row:))
    }

    /// Whether this cluster uses join tokens (one was ever created): only then does the worker
    /// endpoint let unknown keys in on probation, to present one — and hear why a used-up,
    /// expired or revoked one is refused. A cluster that never made one refuses them at the handshake.
    public func joinTokensInUse() async throws -> Bool {
        try await client.query("SELECT EXISTS (SELECT 1 FROM join_tokens) AS used").first?
            .decode(Bool.self, column: "used") ?? false
    }

    /// A worker presents the token whose SHA-256 is `tokenHash` with its authenticated `publicKey`.
    /// One transaction: a key already enrolled spends nothing; otherwise one use is taken by the
    /// statement that checks the token (so the last use goes to one worker only), the key is
    /// enrolled, and the join — or the refusal, with its reason — is appended to job_events.
    /// Asks from one key are taken one at a time (a transaction-level advisory lock on the key):
    /// a worker that asks again while its first JOIN is on the way hears that it is enrolled, not
    /// that its token is used up by the use its first ask took.
    public func join(tokenHash: SHA256Digest, publicKey: String, name: String) async throws -> JoinOutcome {
        try await client.transaction { connection in
            try await connection.query(
                "SELECT pg_advisory_xact_lock(\(Self.joinLockClass), hashtext(\(publicKey)))")
            if let existing = try await connection.query("""
                SELECT \(Worker.columns) FROM workers WHERE public_key = \(publicKey)
                """).first.map(Worker.init(row:)) {
                if existing.state != .revoked { return .alreadyEnrolled(existing) }
                try await Self.recordJoin(refused: .keyRevoked, publicKey: publicKey, token: nil, on: connection)
                return .refused(.keyRevoked)
            }
            let spent = try await connection.query("""
                UPDATE join_tokens SET uses_left = uses_left - 1
                WHERE token_hash = \(tokenHash) AND revoked_at IS NULL AND expires_at > now() AND uses_left > 0
                RETURNING \(JoinTokenRecord.columns)
                """).first.map(JoinTokenRecord.init(row:))
            guard let token = spent, ConstantTime.equals(token.tokenHash.bytes, tokenHash.bytes) else {
                let found = try await connection.query("""
                    SELECT \(JoinTokenRecord.columns), expires_at <= now() AS expired FROM join_tokens
                    WHERE token_hash = \(tokenHash)
                    """).first
                let refusal: JoinRefusal
                if let found {
                    let record = try JoinTokenRecord(row: found)
                    refusal = record.revokedAt != nil ? .revoked
                        : try found.decode(Bool.self, column: "expired") ? .expired : .usedUp
                    try await Self.recordJoin(refused: refusal, publicKey: publicKey, token: record.name,
                                              on: connection)
                } else {
                    refusal = .unknownToken
                    try await Self.recordJoin(refused: refusal, publicKey: publicKey, token: nil, on: connection)
                }
                return .refused(refusal)
            }
            let worker = try await connection.query("""
                INSERT INTO workers (public_key, name, slots) VALUES (\(publicKey), \(name), 1)
                RETURNING \(Worker.columns)
                """).first.map(Worker.init(row:))
            guard let worker else { throw StoreError(.notFound, "the joined worker's row did not come back") }
            let detail = "key=\(publicKey) token=\(token.name) uses_left=\(token.usesLeft)"
            try await connection.execute("""
                INSERT INTO job_events (kind, worker_id, detail) VALUES ('worker_joined', \(worker.id), \(detail))
                """)
            return .joined(worker, token: token.name)
        }
    }

    /// The first key of the two-key advisory lock one key's joins take ("SJOI" in ASCII); the
    /// second is the key's `hashtext` (a collision only makes two keys wait for each other).
    static let joinLockClass: Int32 = 0x534A_4F49

    /// A refusal of the same key, token and reason within this many seconds of the last one
    /// recorded is the same attempt asked again (or a worker restarted in a loop): it is answered
    /// but not appended to job_events again (Migrations/0012_join_refusals_by_key.sql).
    static let refusalRepeatWindowSeconds = 10

    private static func recordJoin(refused: JoinRefusal, publicKey: String, token: String?,
                                   on connection: PostgresConnection) async throws {
        let detail = "key=\(publicKey) token=\(token ?? "-") reason=\(refused.rawValue)"
        try await connection.execute("""
            INSERT INTO job_events (kind, detail) SELECT 'worker_join_refused', \(detail)
            WHERE NOT EXISTS (
                SELECT 1 FROM job_events WHERE kind = 'worker_join_refused' AND detail = \(detail)
                AND at > now() - make_interval(secs => \(Self.refusalRepeatWindowSeconds)))
            """)
    }

    /// Revokes every enrolled worker not heard from since `notSeenFor` ago (one that never said
    /// HELLO counts from its enrollment; a connected worker is marked seen every few seconds),
    /// taking back any leases it still holds; with `dryRun`,
    /// only lists them. The workers revoked (or that would be).
    public func pruneWorkers(notSeenFor: Duration, dryRun: Bool) async throws -> [Worker] {
        let seconds = Double(notSeenFor.components.seconds)
        let stale = try await client.query("""
            SELECT \(Worker.columns) FROM workers
            WHERE state <> 'revoked' AND coalesce(last_seen_at, enrolled_at) < now() - make_interval(secs => \(seconds))
            ORDER BY name, id
            """).map(Worker.init(row:))
        if dryRun { return stale }
        var revoked: [Worker] = []
        for worker in stale { revoked.append(try await revokeWorker(id: worker.id)) }
        return revoked
    }
}
