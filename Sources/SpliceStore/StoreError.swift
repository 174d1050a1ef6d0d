public import SpliceCore

/// An error from the job store: a stable `code`, the server's SQLSTATE when there is one, a message
/// for people, and whether trying again can help.
///
/// The description never contains a password or a full connection string: every message that
/// may quote connection details passes through the store's redaction first.
public struct StoreError: SpliceError, Equatable {
    /// A stable identifier for the kind of failure; match on it, not on the message.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The stable string form, e.g. `connection-lost`.
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The connection string could not be parsed or names an impossible setting.
        public static let invalidConfiguration = Code("invalid-configuration")
        /// No connection could be opened (server down, starting up, refused, bad credentials).
        public static let connectionFailed = Code("connection-failed")
        /// An open connection broke; the statement may or may not have been applied.
        public static let connectionLost = Code("connection-lost")
        /// The server rejected a statement; `sqlState` says why.
        public static let queryFailed = Code("query-failed")
        /// A value cannot be sent (e.g. a string with a NUL byte).
        public static let invalidValue = Code("invalid-value")
        /// A result column could not be decoded into the requested Swift type.
        public static let decodingFailed = Code("decoding-failed")
        /// The database holds a migration this binary does not know: it is newer than the code.
        public static let databaseNewerThanCode = Code("database-newer-than-code")
        /// A migration that already ran has a different checksum now: someone edited a landed file.
        public static let migrationChecksumMismatch = Code("migration-checksum-mismatch")
        /// The embedded migrations themselves are malformed (name, numbering).
        public static let invalidMigration = Code("invalid-migration")
        /// A row the call refers to does not exist.
        public static let notFound = Code("not-found")
        /// A row with that name or key exists already (a live token's name).
        public static let conflict = Code("conflict")
        /// The call asks for a state change the current state does not allow.
        public static let invalidTransition = Code("invalid-transition")
        /// The worker's key has been revoked.
        public static let workerRevoked = Code("worker-revoked")
        /// The private PostgreSQL server could not be set up, started or stopped.
        public static let embeddedServer = Code("embedded-server")
        /// The fence refused a write: the session's coordinator epoch is not the current one
        /// (another coordinator took over), or the session claims none (SQLSTATE SP001).
        public static let fenced = Code("fenced")
    }

    /// What kind of failure this is.
    public var code: Code
    /// The five-character SQLSTATE reported by the server, when the server reported one.
    public var sqlState: String?
    /// A human-readable explanation, already redacted.
    public var message: String
    /// Whether running the same operation again may succeed (lost connection, serialization
    /// failure, deadlock, server starting or shutting down).
    public var isRetryable: Bool

    /// Creates an error; `isRetryable` defaults to what the code and SQLSTATE imply.
    public init(_ code: Code, _ message: String, sqlState: String? = nil, isRetryable: Bool? = nil) {
        self.code = code
        self.sqlState = sqlState
        self.message = message
        self.isRetryable = isRetryable ?? StoreError.impliesRetry(code: code, sqlState: sqlState)
    }

    public var description: String {
        var text = "store error \(code.rawValue)"
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        return text + ": " + message
    }

    /// SQLSTATEs after which the same work can simply be tried again.
    static func impliesRetry(code: Code, sqlState: String?) -> Bool {
        if code == .connectionFailed || code == .connectionLost { return true }
        guard let sqlState else { return false }
        switch sqlState {
        case SQLState.serializationFailure, SQLState.deadlockDetected,
             "57P01", "57P02", "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
             "53300": // too_many_connections
            return true
        default:
            return sqlState.hasPrefix("08") // connection_exception class
        }
    }
}

/// SQLSTATE values the store reacts to.
public enum SQLState {
    /// 40001: the transaction conflicted with a concurrent one; retry it.
    public static let serializationFailure = "40001"
    /// 40P01: the transaction was chosen as a deadlock victim; retry it.
    public static let deadlockDetected = "40P01"
    /// 42P04: CREATE DATABASE of a name that exists.
    public static let duplicateDatabase = "42P04"
    /// SP001: the fence refused a coordinator's write (Migrations/0008_coordinator_leadership.sql).
    public static let fenced = "SP001"
    /// 55P03: a lock was not granted within `lock_timeout`.
    public static let lockNotAvailable = "55P03"
}
