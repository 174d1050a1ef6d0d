internal import CZeroMQ
internal import CZeroMQShims
internal import Glibc
public import SpliceCore

/// An error from SpliceWire: a stable `code` to branch on, the raw errno (0 when the error did not
/// come from C), a message for people and whether retrying the same operation later can help.
public struct WireError: SpliceError, Hashable {
    /// A stable, machine-readable error code. New codes may be added; existing ones never change.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// ROUTER could not route a message: the peer is unknown or has disconnected
        /// (`EHOSTUNREACH` with `ZMQ_ROUTER_MANDATORY`). Act on it (e.g. release the lease).
        public static let unroutable = Code(rawValue: "unroutable")
        /// The send queue is full (high-water mark) or, with `immediate`, no peer is connected.
        public static let wouldBlock = Code(rawValue: "would-block")
        /// The endpoint or its context has been closed.
        public static let closed = Code(rawValue: "closed")
        /// The ZeroMQ context was terminated.
        public static let contextTerminated = Code(rawValue: "context-terminated")
        /// A bind failed because the address is in use.
        public static let addressInUse = Code(rawValue: "address-in-use")
        /// An endpoint string, option value or argument was rejected.
        public static let invalidArgument = Code(rawValue: "invalid-argument")
        /// The message is addressed to a routing id this endpoint has never heard from.
        public static let unknownPeer = Code(rawValue: "unknown-peer")
        /// The routing id now belongs to a different authenticated key than the caller expected.
        public static let peerMismatch = Code(rawValue: "peer-mismatch")
        /// The peer's key is no longer authorized; nothing is sent to it.
        public static let peerRevoked = Code(rawValue: "peer-revoked")
        /// A CURVE server socket was requested but no ZAP handler serves its domain (fail closed).
        public static let authenticationUnavailable = Code(rawValue: "authentication-unavailable")
        /// Refused to listen on a non-loopback address without CURVE keys.
        public static let insecureBinding = Code(rawValue: "insecure-binding")
        /// A CURVE key is not valid Z85 text of a 32-byte key.
        public static let invalidKey = Code(rawValue: "invalid-key")
        /// A key file could not be read or written.
        public static let keyFile = Code(rawValue: "key-file")
        /// A secret key file is readable by group or others.
        public static let insecureKeyFile = Code(rawValue: "insecure-key-file")
        /// A message could not be encoded.
        public static let encoding = Code(rawValue: "encoding")
        /// A message is larger than the configured maximum.
        public static let messageTooLarge = Code(rawValue: "message-too-large")
        /// No answer arrived in time.
        public static let timedOut = Code(rawValue: "timed-out")
        /// Another libzmq or system failure; see `errno` and `message`.
        public static let system = Code(rawValue: "system")
    }

    public let code: Code
    /// The raw errno (or libzmq error number); 0 when the error did not come from C.
    public let errno: Int32
    public let message: String
    /// Whether the same operation may succeed if retried later (the retry policy reads this).
    public let isRetryable: Bool

    public init(_ code: Code, _ message: String, errno: Int32 = 0, isRetryable: Bool = false) {
        self.code = code
        self.errno = errno
        self.message = message
        self.isRetryable = isRetryable
    }

    public var description: String {
        errno == 0 ? "\(message) [\(code)]" : "\(message) [\(code), errno \(errno)]"
    }
}

extension WireError {
    /// Builds the error for a failed libzmq call from `zmq_errno()`. `operation` says what was
    /// attempted ("bind tcp://…"); libzmq's own text is appended.
    static func zmq(_ operation: String, errno: Int32 = zmq_errno()) -> WireError {
        let text = String(cString: zmq_strerror(errno))
        let message = "\(operation): \(text)"
        switch errno {
        case EHOSTUNREACH:
            return WireError(.unroutable, message, errno: errno)
        case EAGAIN, EINTR:
            return WireError(.wouldBlock, message, errno: errno, isRetryable: true)
        case splice_ZMQ_ETERM():
            return WireError(.contextTerminated, message, errno: errno)
        case ENOTSOCK:
            return WireError(.closed, message, errno: errno)
        case EADDRINUSE:
            return WireError(.addressInUse, message, errno: errno, isRetryable: true)
        case EINVAL, EPROTONOSUPPORT, ENODEV:
            return WireError(.invalidArgument, message, errno: errno)
        default:
            return WireError(.system, message, errno: errno)
        }
    }

    static let endpointClosed = WireError(.closed, "the endpoint is closed")
}
