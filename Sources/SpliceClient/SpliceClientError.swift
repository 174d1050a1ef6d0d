public import SpliceCore
public import SpliceWire
import Foundation

/// Why a `SpliceClient` call failed: a stable `code` to branch on, one line for people, and
/// whether trying again later may help.
public struct SpliceClientError: SpliceError, Hashable {
    /// A stable, machine-readable error code. New codes may be added; existing ones never change.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// No reply came from the coordinator in time (it is down, restarting, or unreachable).
        public static let unreachable = Code(rawValue: "unreachable")
        /// The coordinator refused this client's CURVE key during the handshake.
        public static let refused = Code(rawValue: "refused")
        /// The coordinator answered the request with an `ERROR` (see `apiError`).
        public static let rejected = Code(rawValue: "rejected")
        /// The coordinator answered with a reply of the wrong type (a version mismatch).
        public static let unexpectedReply = Code(rawValue: "unexpected-reply")
        /// The endpoint or keys the client was given cannot be used.
        public static let invalidConfiguration = Code(rawValue: "invalid-configuration")
        /// The socket failed in a way a retry does not cure.
        public static let transport = Code(rawValue: "transport")
        /// The calling task was cancelled.
        public static let cancelled = Code(rawValue: "cancelled")
    }

    public let code: Code
    /// What went wrong and what to do, on one line.
    public let message: String
    /// Whether the same call may succeed later (the coordinator may come back, the store may recover).
    public let isRetryable: Bool
    /// The coordinator's own error, for `.rejected`.
    public let apiError: APIError?

    public init(_ code: Code, _ message: String, isRetryable: Bool = false, apiError: APIError? = nil) {
        self.code = code
        self.message = SpliceClientError.oneLine(message)
        self.isRetryable = isRetryable
        self.apiError = apiError
    }

    public var description: String { message }

    /// The coordinator's `ERROR` reply as a client error; its message is already written for people.
    static func rejected(_ error: APIError) -> SpliceClientError {
        SpliceClientError(.rejected, error.message, isRetryable: error.isRetryable, apiError: error)
    }

    static let cancelledError = SpliceClientError(
        .cancelled, "cancelled while waiting for the coordinator")

    /// Joins the non-empty lines of `text` with "; " so an error always prints as one line.
    static func oneLine(_ text: String) -> String {
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        return lines.filter { !$0.isEmpty }.joined(separator: "; ")
    }
}
