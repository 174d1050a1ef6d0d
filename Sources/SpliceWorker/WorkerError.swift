public import SpliceCore

/// Why a worker daemon cannot start or had to stop: a stable `code`, a one-line message naming
/// what to fix, and whether trying again later can help.
public typealias WorkerError = CodedError<WorkerErrorCode>

/// The stable codes of ``WorkerError``.
public enum WorkerErrorCode: String, Sendable, Hashable {
    /// The spool is missing, not a directory, or not writable.
    case spoolUnusable = "spool-unusable"
    /// A setting is out of range (slots, timeouts, the coordinator endpoint).
    case invalidConfiguration = "invalid-configuration"
    /// The coordinator revoked this worker's key.
    case revoked
    /// The coordinator refused this worker's join token (unknown, expired, used up, revoked), or
    /// the key it presented was revoked.
    case joinRefused = "join-refused"
    /// `run()` was called twice.
    case alreadyRunning = "already-running"
}
