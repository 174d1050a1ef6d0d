public import Foundation
public import SpliceCore

/// A bearer token of the HTTP API as stored: never the token, only its SHA-256.
public struct APITokenRecord: Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var tokenHash: SHA256Digest
    public var scopes: Set<APIScope>
    /// Folders its jobs may read from and write into; empty: the coordinator's roots alone.
    public var inputRoots: [String]
    public var outputRoots: [String]
    /// Requests a second (bursts of twice as many); nil: the coordinator's default.
    public var rateLimit: Int?
    public var createdAt: Date
    public var expiresAt: Date?
    public var revokedAt: Date?

    /// Whether it admits requests at `now`: not revoked, not expired.
    public func isLive(at now: Date) -> Bool {
        revokedAt == nil && (expiresAt.map { $0 > now } ?? true)
    }
}

/// What `splice tokens create` asks for.
public struct APITokenRequest: Sendable, Equatable {
    public var name: String
    public var tokenHash: SHA256Digest
    public var scopes: Set<APIScope>
    public var inputRoots: [String]
    public var outputRoots: [String]
    public var rateLimit: Int?
    public var expiresAt: Date?

    public init(name: String, tokenHash: SHA256Digest, scopes: Set<APIScope>, inputRoots: [String] = [],
                outputRoots: [String] = [], rateLimit: Int? = nil, expiresAt: Date? = nil) {
        self.name = name
        self.tokenHash = tokenHash
        self.scopes = scopes
        self.inputRoots = inputRoots
        self.outputRoots = outputRoots
        self.rateLimit = rateLimit
        self.expiresAt = expiresAt
    }
}

extension APITokenRecord {
    static let columns: PostgresQuery = """
        id, name, token_hash, scopes, input_roots, output_roots, rate_limit, created_at, expires_at, revoked_at
        """

    init(row: PostgresRow) throws(StoreError) {
        let names: [String] = try row.decode(column: "scopes")
        self.init(
            id: try row.decode(column: "id"), name: try row.decode(column: "name"),
            tokenHash: try row.decode(column: "token_hash"), scopes: Set(names.compactMap(APIScope.init(rawValue:))),
            inputRoots: try row.decode(column: "input_roots"), outputRoots: try row.decode(column: "output_roots"),
            rateLimit: try row.decode(Int32?.self, column: "rate_limit").map(Int.init),
            createdAt: try row.decode(column: "created_at"), expiresAt: try row.decode(column: "expires_at"),
            revokedAt: try row.decode(column: "revoked_at"))
    }
}

extension JobRepository {
    /// Records a new token; throws `.conflict` when a live token already has the name.
    public func createToken(_ request: APITokenRequest) async throws -> APITokenRecord {
        let scopes = request.scopes.sorted().map(\.rawValue)
        let rate = request.rateLimit.map { Int32(clamping: $0) }
        let rows = try await client.query("""
            INSERT INTO api_tokens (name, token_hash, scopes, input_roots, output_roots, rate_limit, expires_at)
            VALUES (\(request.name), \(request.tokenHash), \(scopes), \(request.inputRoots), \(request.outputRoots),
                    \(rate), \(request.expiresAt))
            ON CONFLICT DO NOTHING
            RETURNING \(APITokenRecord.columns)
            """)
        guard let row = rows.first else {
            throw StoreError(.conflict, "a token named \(request.name) exists; revoke it first or choose another name",
                             isRetryable: false)
        }
        return try APITokenRecord(row: row)
    }

    /// Every token that is not revoked (expired ones included), by name.
    public func tokens() async throws -> [APITokenRecord] {
        try await client.query("""
            SELECT \(APITokenRecord.columns) FROM api_tokens WHERE revoked_at IS NULL ORDER BY name
            """).map(APITokenRecord.init(row:))
    }

    /// Revokes the live token named `name`; nil when there is none.
    public func revokeToken(named name: String) async throws -> APITokenRecord? {
        try await client.query("""
            UPDATE api_tokens SET revoked_at = now() WHERE name = \(name) AND revoked_at IS NULL
            RETURNING \(APITokenRecord.columns)
            """).first.map(APITokenRecord.init(row:))
    }

    /// The token whose SHA-256 is `hash`, revoked or not; nil when there is none.
    public func token(hash: SHA256Digest) async throws -> APITokenRecord? {
        try await client.query("SELECT \(APITokenRecord.columns) FROM api_tokens WHERE token_hash = \(hash)")
            .first.map(APITokenRecord.init(row:))
    }
}
