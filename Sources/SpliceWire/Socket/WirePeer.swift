public import Foundation

/// A ROUTER routing id: the return address of one connection. It says where to send a reply,
/// not who the peer is — identify peers by their authenticated `CurvePublicKey`.
public struct RoutingID: Hashable, Sendable, CustomStringConvertible {
    public let bytes: Data

    public init(_ bytes: Data) { self.bytes = bytes }
    public init(_ text: String) { self.bytes = Data(text.utf8) }

    /// Printable text when the id is printable ASCII, otherwise `0x…` hex.
    public var description: String {
        if !bytes.isEmpty, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            return String(decoding: bytes, as: UTF8.self)
        }
        return "0x" + bytes.map { String(format: "%02x", $0) }.joined()
    }
}

/// Who sent a message, as far as this endpoint knows.
public struct WirePeer: Hashable, Sendable, CustomStringConvertible {
    /// Where to send replies (ROUTER endpoints); nil on a DEALER, which has one logical peer.
    public let routingID: RoutingID?
    /// The peer's public key as authenticated by the ZAP handler during the CURVE handshake;
    /// nil when the endpoint does not use CURVE server mode. This, not the routing id, is the
    /// peer's identity.
    public let publicKey: CurvePublicKey?

    public init(routingID: RoutingID?, publicKey: CurvePublicKey?) {
        self.routingID = routingID
        self.publicKey = publicKey
    }

    /// The peer of a DEALER endpoint.
    public static let upstream = WirePeer(routingID: nil, publicKey: nil)

    public var description: String {
        switch (routingID, publicKey) {
        case (nil, nil): "upstream"
        case (let id?, nil): "route=\(id)"
        case (nil, let key?): "key=\(key)"
        case (let id?, let key?): "key=\(key) route=\(id)"
        }
    }
}

/// One received multipart message: its frames (without the routing id) and its sender.
public struct WireDelivery: Sendable {
    public let peer: WirePeer
    public let frames: [Data]
    /// Set when the socket thread refused the message (it was oversized) and already counted it:
    /// then `frames` is empty, and the delivery is only a notice its receiver may log or answer.
    public let rejection: WireRejection?

    public init(peer: WirePeer, frames: [Data], rejection: WireRejection? = nil) {
        self.peer = peer
        self.frames = frames
        self.rejection = rejection
    }
}
