/// Why a worker daemon cannot start or had to stop: a stable `code`, a one-line message naming
/// what to fix, and whether trying again later can help.
public struct WorkerError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The spool is missing, not a directory, or not writable.
        case spoolUnusable = "spool-unusable"
        /// A setting is out of range (slots, timeouts, the coordinator endpoint).
        case invalidConfiguration = "invalid-configuration"
        /// The coordinator revoked this worker's key.
        case revoked
        /// `run()` was called twice.
        case alreadyRunning = "already-running"
    }

    public let code: Code
    public let message: String
    public let isRetryable: Bool

    public init(_ code: Code, _ message: String, isRetryable: Bool = false) {
        self.code = code
        self.message = message
        self.isRetryable = isRetryable
    }

    public var description: String { message }
}
