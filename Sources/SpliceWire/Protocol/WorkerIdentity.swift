
/// Who a worker is, as the coordinator keys its sessions.
///
/// With CURVE on, a worker is its authenticated public key (the ZAP handler proved it during the
/// handshake); the routing id is only a return address and may change on every reconnection.
/// Without CURVE (loopback, or `--insecure`) nothing is authenticated, so the only identity there
/// is the connection itself: its routing id.
public enum WorkerIdentity: Hashable, Sendable, CustomStringConvertible {
    /// A CURVE key admitted by the ZAP handler.
    case key(CurvePublicKey)
    /// A connection on an endpoint without CURVE.
    case connection(RoutingID)

    /// The identity of the peer that sent a message: its key when the endpoint authenticated
    /// one, else its routing id; nil when it has neither (a DEALER-side delivery).
    public init?(peer: WirePeer) {
        if let key = peer.publicKey {
            self = .key(key)
        } else if let route = peer.routingID {
            self = .connection(route)
        } else {
            return nil
        }
    }

    /// The `workers.public_key` value of this identity: the Z85 key, or `insecure:<routing id>`
    /// for an unauthenticated connection (which can never collide with a 40-character key).
    public var storeKey: String {
        switch self {
        case .key(let key): key.z85
        case .connection(let route): "insecure:\(route)"
        }
    }

    /// The Z85 key, or `route:<routing id>`.
    public var description: String {
        switch self {
        case .key(let key): key.z85
        case .connection(let route): "route:\(route)"
        }
    }
}
