public import SpliceCore

/// An error from the coordinator itself (its own checks, not the store's or the wire's, which
/// keep their own error types): a stable code, a message for people that says what to do, and
/// whether trying again can help.
public typealias CoordinatorError = CodedError<CoordinatorErrorCode>

/// The stable codes of ``CoordinatorError``.
public enum CoordinatorErrorCode: String, Sendable, Hashable {
    /// The configuration cannot work (an endpoint, a directory, a key).
    case invalidConfiguration = "invalid-configuration"
    /// A job's stored plan cannot be decoded.
    case planUnreadable = "plan-unreadable"
    /// The coordinator stopped before it was ready.
    case notRunning = "not-running"
}
