/// Why a received message was dropped. Decoding is total: every malformed, unexpected or
/// unauthorized input ends up as one of these, is counted in `WireCounters` and dropped.
public struct WireRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable reason, usable as a metric label.
    public enum Reason: String, Sendable, Hashable, CaseIterable, Codable {
        /// Larger than the endpoint's or codec's byte limit.
        case oversized = "oversized"
        /// More frames than the protocol allows.
        case tooManyFrames = "too-many-frames"
        /// Fewer frames than the protocol needs (for example an empty message).
        case missingFrames = "missing-frames"
        /// Not a JSON object, truncated JSON, or no envelope fields.
        case garbled = "garbled"
        /// The envelope names another protocol.
        case wrongProtocol = "wrong-protocol"
        /// The envelope's protocol version is not one this build speaks (`version` says which it
        /// was: a coordinator answers a worker's with DISCONNECT naming both).
        case unsupportedVersion = "unsupported-version"
        /// The type is unknown, or not one this side accepts.
        case unknownType = "unknown-type"
        /// The body does not match its type (missing or mistyped fields, invalid key text).
        case invalidBody = "invalid-body"
        /// The body decodes, but a number in it is outside what the protocol allows
        /// (`WireLimits`): a negative size, an interval of years, more slots than a machine has.
        case outOfRange = "out-of-range"
        /// A CURVE server received a message without an authenticated key (no ZAP handler ran).
        case unauthenticated = "unauthenticated"
        /// The sender's key has been revoked since its handshake.
        case revoked = "revoked"
        /// A session admitted on probation (its key not enrolled) sent something other than what
        /// probation allows (a worker's JOIN).
        case probation = "probation"
    }

    public let reason: Reason
    /// What exactly was wrong, for logs and for the client API's ERROR reply: names the envelope or
    /// body field in backticks (`` `body.limit` ``), never quotes the message body.
    public let detail: String
    /// The envelope's request id (`id`), when it could be read: a client API endpoint answers the
    /// rejection with an `ERROR` carrying it, so a client bug does not look like a dead server.
    public let requestID: String?
    /// The envelope's `version` and `type`, when they could be read (an `unsupported-version`
    /// HELLO is answered with the versions the receiver speaks).
    public let version: Int?
    public let messageType: String?

    public init(_ reason: Reason, _ detail: String, requestID: String? = nil, version: Int? = nil,
                messageType: String? = nil) {
        self.reason = reason
        self.detail = detail
        self.requestID = requestID
        self.version = version
        self.messageType = messageType
    }

    public var description: String { "\(reason.rawValue): \(detail)" }
}
