import SpliceConcurrency

/// The kinds of socket SpliceWire opens for callers.
public enum WireSocketType: Sendable, Hashable {
    /// Many peers, each addressed by routing id (the coordinator side).
    case router
    /// One logical peer, load-balanced over its connections (the worker and client side).
    case dealer
}

/// How an endpoint uses CURVE.
public enum CurveRole: Sendable, Hashable {
    /// No encryption or authentication. Acceptable on loopback only (see `EndpointSecurityPolicy`).
    case none
    /// A CURVE server: clients must know `keys.publicKey`, and a ZAP handler serving `domain` in
    /// the same context decides which client keys are admitted.
    case server(keys: CurveKeyPair, domain: String = "splice")
    /// A CURVE client with its own key pair, trusting the server's public key.
    case client(keys: CurveKeyPair, serverKey: CurvePublicKey)
}

/// Socket options. Defaults suit the cluster: a finite linger, ROUTER_MANDATORY and
/// ROUTER_HANDOVER on, ZMTP heartbeats on, bounded queues and message sizes.
public struct WireOptions: Sendable, Hashable {
    /// ZMTP heartbeats (`ZMQ_HEARTBEAT_IVL`, `_TIMEOUT`, `_TTL`). They detect dead TCP
    /// connections, not a hung peer: the protocol still needs its own HEARTBEAT messages.
    public struct Heartbeat: Sendable, Hashable {
        /// How often to send a ZMTP PING when the connection is idle.
        public var interval: Duration
        /// How long to wait for any traffic after a PING before dropping the connection.
        public var timeout: Duration
        /// How long the remote side may go without hearing from us before dropping us.
        public var ttl: Duration

        public init(interval: Duration, timeout: Duration, ttl: Duration) {
            self.interval = interval
            self.timeout = timeout
            self.ttl = ttl
        }
    }

    /// How long unsent messages may keep the context alive after close (`ZMQ_LINGER`).
    /// libzmq's default is forever, which makes shutdown hang; nil means forever.
    public var linger: Duration? = .seconds(1)
    /// Send queue bound per peer, in messages (`ZMQ_SNDHWM`).
    public var sendHighWaterMark = 1000
    /// Receive queue bound per peer, in messages (`ZMQ_RCVHWM`).
    public var receiveHighWaterMark = 1000
    /// ROUTER only: unroutable sends and full queues become errors instead of silent drops.
    public var routerMandatory = true
    /// ROUTER only: a peer that reconnects with a routing id still in use takes it over instead
    /// of being silently refused.
    public var routerHandover = true
    /// ZMTP heartbeats; nil disables them.
    public var heartbeat: Heartbeat? = Heartbeat(interval: .seconds(2), timeout: .seconds(6), ttl: .seconds(10))
    /// The routing id this socket presents to a ROUTER (`ZMQ_ROUTING_ID`); nil lets the ROUTER
    /// assign one. 1…255 bytes, not starting with a zero byte.
    public var routingID: RoutingID?
    /// Queue messages only to completed connections (`ZMQ_IMMEDIATE`): with no peer connected a
    /// DEALER's send fails with `wouldBlock` instead of queueing for a peer that may never come.
    public var immediate = false
    /// First reconnect delay (`ZMQ_RECONNECT_IVL`).
    public var reconnectInterval: Duration = .milliseconds(100)
    /// Reconnect backoff cap (`ZMQ_RECONNECT_IVL_MAX`); libzmq doubles the delay up to it.
    public var reconnectIntervalMax: Duration = .seconds(5)
    /// Largest message (all its frames) the endpoint accepts. A larger one, up to
    /// `disconnectBytes` a frame, is read by the socket thread without being copied, counted as
    /// `oversized` and handed to the receiver as a rejection (to log, and on the client API to
    /// answer `ERROR too-large` when its request id can be read).
    public var maxMessageBytes = 4 << 20
    /// Largest frame libzmq reads from a peer at all (`ZMQ_MAXMSGSIZE`): a peer sending a larger
    /// one is disconnected by libzmq before anything of it is seen (it may reconnect), which is
    /// what bounds the memory a peer can make the endpoint hold. Nil: 16 × `maxMessageBytes`
    /// (64 MiB by default). Never below `maxMessageBytes`.
    public var disconnectBytes: Int?
    /// Largest number of frames (after the routing id) the endpoint accepts in one message.
    public var maxFrames = 16
    /// CURVE security.
    public var curve: CurveRole = .none
    /// `ZMQ_ZAP_ENFORCE_DOMAIN`: a CURVE server whose ZAP handler is missing refuses clients
    /// instead of admitting them. Leave it on.
    public var zapEnforceDomain = true
    /// How many received messages may wait for the consumer before the endpoint stops reading
    /// from the socket (pushing back into the receive high-water mark and TCP).
    public var inboundBuffer = 1024
    /// Publish connection and handshake events on `WireEndpoint.events`.
    public var monitorEvents = true
    /// CURVE servers: the envelope types (`JOIN`) a session its ZAP handler admitted on probation
    /// (`AuthorizationDecision.probation`) may send while its key is not authorized; anything else
    /// from it is dropped as `probation`. Empty: such sessions send nothing at all.
    public var probationTypes: Set<String> = []
    /// The largest message a session on probation may send.
    public static let probationMaxBytes = 4096

    public init() {}

    /// The frame size at which libzmq drops the connection (`disconnectBytes`, resolved).
    var effectiveDisconnectBytes: Int {
        max(disconnectBytes ?? maxMessageBytes.multipliedReportingOverflow(by: 16).partialValue, maxMessageBytes)
    }

    /// Options for a worker's or client's DEALER. With `immediate` (the default, for workers)
    /// sends fail fast with `.wouldBlock` until the connection and handshake are up, so a worker
    /// knows it is cut off and keeps its results to resend (its HELLO loop retries until WELCOME).
    /// A one-shot client (the CLI) passes `immediate: false`: its request waits in the queue for
    /// the connection and the request timeout decides.
    public static func dealer(
        routingID: RoutingID? = nil, curve: CurveRole = .none, immediate: Bool = true
    ) -> WireOptions {
        var options = WireOptions()
        options.routingID = routingID
        options.immediate = immediate
        options.curve = curve
        return options
    }

    /// Options for the coordinator's ROUTER (the defaults, with `curve`).
    public static func router(curve: CurveRole = .none) -> WireOptions {
        var options = WireOptions()
        options.curve = curve
        return options
    }
}

extension Duration {
    /// Whole milliseconds for a libzmq int option, clamped to Int32.
    var zmqMilliseconds: Int32 { Int32(clamping: wholeMilliseconds) }
}
