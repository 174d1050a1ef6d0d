public import SpliceCore

// The client API's requests about the HTTP API's bearer tokens (`splice tokens`), admin scope.

/// TOKEN_CREATE: make a bearer token for the HTTP API. The coordinator draws it, keeps only its
/// SHA-256, and answers it once (TOKEN with `token`).
public struct CreateToken: MessageBody, Hashable {
    public static let messageType = "TOKEN_CREATE"
    /// 1…64 characters of `A–Z a–z 0–9 . _ -`, starting with a letter or digit; unique among live tokens.
    public var name: String
    public var scopes: [APIScope]
    /// Folders the token's jobs may read from and write into (absolute; they must exist on the
    /// coordinator); empty: the coordinator's roots alone.
    public var inputRoots: [String]?
    public var outputRoots: [String]?
    /// Requests a second (bursts of twice that); absent: the coordinator's `--http-rate-limit`.
    public var rateLimit: Int?
    /// How long it lasts; absent: until revoked.
    public var expiresInSeconds: Int64?

    public init(name: String, scopes: [APIScope], inputRoots: [String]? = nil, outputRoots: [String]? = nil,
                rateLimit: Int? = nil, expiresInSeconds: Int64? = nil) {
        self.name = name
        self.scopes = scopes
        self.inputRoots = inputRoots
        self.outputRoots = outputRoots
        self.rateLimit = rateLimit
        self.expiresInSeconds = expiresInSeconds
    }
}

/// TOKENS: the live (unrevoked) tokens, never their secrets.
public struct ListTokens: MessageBody, Hashable {
    public static let messageType = "TOKENS"
    public init() {}
}

/// TOKEN_REVOKE: refuse the live token named `name` from now on.
public struct RevokeToken: MessageBody, Hashable {
    public static let messageType = "TOKEN_REVOKE"
    public var name: String
    public init(name: String) { self.name = name }
}

/// A token as the coordinator describes it: everything but the token.
public struct TokenInfo: Codable, Sendable, Hashable {
    public var name: String
    public var scopes: [APIScope]
    public var inputRoots: [String]
    public var outputRoots: [String]
    public var rateLimit: Int?
    public var createdAtMilliseconds: Int64
    public var expiresAtMilliseconds: Int64?
    public var revokedAtMilliseconds: Int64?

    public init(name: String, scopes: [APIScope], inputRoots: [String], outputRoots: [String], rateLimit: Int?,
                createdAtMilliseconds: Int64, expiresAtMilliseconds: Int64?, revokedAtMilliseconds: Int64?) {
        self.name = name
        self.scopes = scopes
        self.inputRoots = inputRoots
        self.outputRoots = outputRoots
        self.rateLimit = rateLimit
        self.createdAtMilliseconds = createdAtMilliseconds
        self.expiresAtMilliseconds = expiresAtMilliseconds
        self.revokedAtMilliseconds = revokedAtMilliseconds
    }
}

/// TOKEN: the answer to TOKEN_CREATE (with `token`, the only time it is shown) and TOKEN_REVOKE.
public struct TokenChanged: MessageBody, Hashable {
    public static let messageType = "TOKEN"
    /// The bearer token itself (`spl_…`): in the answer to TOKEN_CREATE only.
    public var token: String?
    public var info: TokenInfo
    public init(token: String? = nil, info: TokenInfo) {
        self.token = token
        self.info = info
    }
}

/// TOKEN_LIST: the answer to TOKENS.
public struct TokenList: MessageBody, Hashable {
    public static let messageType = "TOKEN_LIST"
    public var tokens: [TokenInfo]
    public init(tokens: [TokenInfo]) { self.tokens = tokens }
}
