public import SpliceCore

// The client API's requests about worker join tokens (`splice workers join-token`) and pruning
// (`splice workers prune`, `splice jobs prune`), admin scope. docs/deploy.md, Join tokens and
// Retention.

/// JOIN_TOKEN_CREATE: make a token that enrolls up to `uses` workers within `ttlSeconds`. The
/// coordinator draws it, keeps only its SHA-256, and answers it once (JOIN_TOKEN with `token`).
public struct CreateJoinToken: MessageBody, Hashable {
    public static let messageType = "JOIN_TOKEN_CREATE"
    /// 1…64 characters of `A–Z a–z 0–9 . _ -`, starting with a letter or digit; unique among live tokens.
    public var name: String
    public var uses: Int
    public var ttlSeconds: Int64

    public init(name: String, uses: Int, ttlSeconds: Int64) {
        self.name = name
        self.uses = uses
        self.ttlSeconds = ttlSeconds
    }
}

/// JOIN_TOKENS: the live (unrevoked) join tokens, never their secrets.
public struct ListJoinTokens: MessageBody, Hashable {
    public static let messageType = "JOIN_TOKENS"
    public init() {}
}

/// JOIN_TOKEN_REVOKE: refuse the live join token named `name` from now on.
public struct RevokeJoinToken: MessageBody, Hashable {
    public static let messageType = "JOIN_TOKEN_REVOKE"
    public var name: String
    public init(name: String) { self.name = name }
}

/// A join token as the coordinator describes it: everything but the token.
public struct JoinTokenInfo: Codable, Sendable, Hashable {
    public var name: String
    public var uses: Int
    public var usesLeft: Int
    public var createdAtMilliseconds: Int64
    public var expiresAtMilliseconds: Int64
    public var revokedAtMilliseconds: Int64?

    public init(name: String, uses: Int, usesLeft: Int, createdAtMilliseconds: Int64, expiresAtMilliseconds: Int64,
                revokedAtMilliseconds: Int64? = nil) {
        self.name = name
        self.uses = uses
        self.usesLeft = usesLeft
        self.createdAtMilliseconds = createdAtMilliseconds
        self.expiresAtMilliseconds = expiresAtMilliseconds
        self.revokedAtMilliseconds = revokedAtMilliseconds
    }
}

/// JOIN_TOKEN: the answer to JOIN_TOKEN_CREATE (with `token`, the only time it is shown) and
/// JOIN_TOKEN_REVOKE.
public struct JoinTokenChanged: MessageBody, Hashable {
    public static let messageType = "JOIN_TOKEN"
    /// The token itself (`splj_…`): in the answer to JOIN_TOKEN_CREATE only.
    public var token: String?
    public var info: JoinTokenInfo
    public init(token: String? = nil, info: JoinTokenInfo) {
        self.token = token
        self.info = info
    }
}

/// JOIN_TOKEN_LIST: the answer to JOIN_TOKENS.
public struct JoinTokenList: MessageBody, Hashable {
    public static let messageType = "JOIN_TOKEN_LIST"
    public var tokens: [JoinTokenInfo]
    public init(tokens: [JoinTokenInfo]) { self.tokens = tokens }
}

/// WORKERS_PRUNE: revoke the keys of workers not heard from for `notSeenSeconds` (their live
/// sessions end); with `dryRun`, only list them.
public struct PruneWorkers: MessageBody, Hashable {
    public static let messageType = "WORKERS_PRUNE"
    public var notSeenSeconds: Int64
    public var dryRun: Bool
    public init(notSeenSeconds: Int64, dryRun: Bool = false) {
        self.notSeenSeconds = notSeenSeconds
        self.dryRun = dryRun
    }
}

/// WORKERS_PRUNED: the answer to WORKERS_PRUNE.
public struct WorkersPruned: MessageBody, Hashable {
    public static let messageType = "WORKERS_PRUNED"
    public struct Pruned: Codable, Sendable, Hashable {
        public var publicKey: String
        public var name: String
        /// Last heard from (enrolled, when never); milliseconds since the epoch.
        public var lastSeenAtMilliseconds: Int64
        public init(publicKey: String, name: String, lastSeenAtMilliseconds: Int64) {
            self.publicKey = publicKey
            self.name = name
            self.lastSeenAtMilliseconds = lastSeenAtMilliseconds
        }
    }
    public var workers: [Pruned]
    public var dryRun: Bool
    public init(workers: [Pruned], dryRun: Bool) {
        self.workers = workers
        self.dryRun = dryRun
    }
}

/// JOBS_PRUNE: delete the jobs that finished more than `finishedBeforeSeconds` ago, with their
/// segments, events, webhook rows and spool files, in batches; with `dryRun`, only count them.
public struct PruneJobs: MessageBody, Hashable {
    public static let messageType = "JOBS_PRUNE"
    public var finishedBeforeSeconds: Int64
    public var dryRun: Bool
    public init(finishedBeforeSeconds: Int64, dryRun: Bool = false) {
        self.finishedBeforeSeconds = finishedBeforeSeconds
        self.dryRun = dryRun
    }
}

/// JOBS_PRUNED: the answer to JOBS_PRUNE: what was deleted (or, dry, would be).
public struct JobsPruned: MessageBody, Hashable {
    public static let messageType = "JOBS_PRUNED"
    public var jobs: Int
    public var segments: Int
    public var events: Int
    public var webhookEvents: Int
    public var dryRun: Bool
    public init(jobs: Int, segments: Int, events: Int, webhookEvents: Int, dryRun: Bool) {
        self.jobs = jobs
        self.segments = segments
        self.events = events
        self.webhookEvents = webhookEvents
        self.dryRun = dryRun
    }
}
