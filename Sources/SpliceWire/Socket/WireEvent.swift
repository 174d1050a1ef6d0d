internal import CZeroMQ
internal import Foundation

/// A connection or handshake event on an endpoint's socket (from libzmq's socket monitor).
/// Events are advisory: a burst may drop the oldest when nobody reads them.
public struct WireEvent: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// A bind is listening.
        case listening
        /// An outgoing connection was established (handshake still to come).
        case connected
        /// An incoming connection was accepted (handshake still to come).
        case accepted
        /// The ZMTP (and CURVE) handshake completed.
        case handshakeSucceeded
        /// The peer refused our credentials, or we refused theirs; `status` is the ZAP status
        /// code (400: denied, 500: the authorizer failed or timed out, 300: retry later).
        case authenticationFailed(status: Int)
        /// The handshake broke the protocol (wrong keys, wrong mechanism, garbage).
        case handshakeFailedProtocol
        /// The handshake failed for another reason (for example no ZAP handler is running).
        case handshakeFailed
        /// A connection closed.
        case disconnected
    }

    public let kind: Kind
    /// The endpoint the event concerns (`tcp://127.0.0.1:7450`).
    public let endpoint: String

    public init(kind: Kind, endpoint: String) {
        self.kind = kind
        self.endpoint = endpoint
    }

    public var description: String { "\(kind) \(endpoint)" }

    /// The monitor event mask SpliceWire subscribes to.
    static let monitoredMask: Int32 = ZMQ_EVENT_LISTENING | ZMQ_EVENT_CONNECTED | ZMQ_EVENT_ACCEPTED
        | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
        | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL

    /// Parses a monitor message: frame 1 holds a 16-bit event id and a 32-bit value (native byte
    /// order), frame 2 the endpoint.
    init?(monitorFrames frames: [Data]) {
        guard frames.count >= 2, frames[0].count >= 6 else { return nil }
        let header = [UInt8](frames[0])
        let event = Int32(header[0]) | Int32(header[1]) << 8
        var value = 0
        for byte in header[2..<6].reversed() { value = value << 8 | Int(byte) }
        let endpoint = String(decoding: frames[1], as: UTF8.self)
        let kind: Kind
        switch event {
        case ZMQ_EVENT_LISTENING: kind = .listening
        case ZMQ_EVENT_CONNECTED: kind = .connected
        case ZMQ_EVENT_ACCEPTED: kind = .accepted
        case ZMQ_EVENT_DISCONNECTED: kind = .disconnected
        case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: kind = .handshakeSucceeded
        case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: kind = .authenticationFailed(status: value)
        case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL: kind = .handshakeFailedProtocol
        case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: kind = .handshakeFailed
        default: return nil
        }
        self.init(kind: kind, endpoint: endpoint)
    }
}
