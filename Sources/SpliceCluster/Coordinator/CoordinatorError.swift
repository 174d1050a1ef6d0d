/// An error from the coordinator itself (its own checks, not the store's or the wire's, which
/// keep their own error types): a stable code, a message for people that says what to do, and
/// whether trying again can help.
public struct CoordinatorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable code.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The configuration cannot work (an endpoint, a directory, a key).
        public static let invalidConfiguration = Code(rawValue: "invalid-configuration")
        /// A job's stored plan cannot be decoded.
        public static let planUnreadable = Code(rawValue: "plan-unreadable")
        /// The coordinator stopped before it was ready.
        public static let notRunning = Code(rawValue: "not-running")
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
