internal import CZeroMQ
internal import CZeroMQShims
internal import Foundation
internal import SpliceJSON

/// What an endpoint's socket thread needs to open its socket.
struct EndpointPlan: Sendable {
    var type: WireSocketType
    var context: WireContext
    var binds: [String]
    var connects: [String]
    var options: WireOptions
    /// The authorizer that re-checks authenticated keys on every message (CURVE servers).
    var authorizer: (any Authorizer)?
}

/// The socket thread of one endpoint. Everything here runs on that thread and nowhere else: the
/// libzmq socket, its monitor and the routing tables are confined to it. The async side talks to
/// it only through the `EndpointChannel`.
///
/// The loop blocks in `zmq_poll` on the socket, the monitor and the channel's wake-up pipe;
/// each turn it runs queued commands (sends, disconnects, close), then reads up to a batch of
/// messages while the inbound queue has room.
final class EndpointLoop {
    private let plan: EndpointPlan
    private let channel: EndpointChannel
    private let socket: RawSocket
    private var monitor: RawSocket?
    /// The CURVE server domain, when this endpoint authenticates its peers.
    private let serverDomain: String?

    /// Authenticated key of each routing id, from the latest message on it.
    private var keyOfRoute: [RoutingID: CurvePublicKey] = [:]
    /// Routing ids of each key, most recently heard last; a few per key at most.
    private var routesOfKey: [CurvePublicKey: [RoutingID]] = [:]
    private static let routesKeptPerKey = 8
    /// Routes of sessions admitted on probation that sent what probation allows: replies may go
    /// to them while their key is not admitted.
    private var probationRoutes: Set<RoutingID> = []
    private static let receiveBatch = 64

    // MARK: - Opening

    /// Creates, configures and binds/connects the socket on the calling (socket) thread.
    /// Returns the loop and the resolved endpoints (`tcp://127.0.0.1:*` becomes the real port).
    static func open(_ plan: EndpointPlan, channel: EndpointChannel) throws(WireError) -> (EndpointLoop, [String]) {
        let zmqType = plan.type == .router ? ZMQ_ROUTER : ZMQ_DEALER
        // If anything below throws, the RawSockets' deinit closes them.
        let socket = try RawSocket(context: plan.context, type: zmqType)
        try configure(socket, plan.options, type: plan.type)
        let loop = EndpointLoop(plan: plan, channel: channel, socket: socket)
        if plan.options.monitorEvents {
            let address = "inproc://splice-monitor-\(UUID().uuidString)"
            try socket.monitor(address: address, events: WireEvent.monitoredMask)
            let monitor = try RawSocket(context: plan.context, type: ZMQ_PAIR)
            try monitor.set(ZMQ_LINGER, Int32(0), name: "ZMQ_LINGER")
            try monitor.connect(address)
            loop.monitor = monitor
        }
        var resolved: [String] = []
        for endpoint in plan.binds {
            try socket.bind(endpoint)
            resolved.append(try socket.getString(ZMQ_LAST_ENDPOINT, name: "ZMQ_LAST_ENDPOINT"))
        }
        for endpoint in plan.connects {
            try socket.connect(endpoint)
            resolved.append(endpoint)
        }
        return (loop, resolved)
    }

    private init(plan: EndpointPlan, channel: EndpointChannel, socket: RawSocket) {
        self.plan = plan
        self.channel = channel
        self.socket = socket
        if case .server(_, let domain) = plan.options.curve { serverDomain = domain } else { serverDomain = nil }
    }

    /// Applies every option; linger first, so a socket abandoned by a later failure cannot hang
    /// the context.
    static func configure(_ socket: RawSocket, _ options: WireOptions, type: WireSocketType) throws(WireError) {
        try socket.set(ZMQ_LINGER, options.linger?.zmqMilliseconds ?? Int32(-1), name: "ZMQ_LINGER")
        try socket.set(ZMQ_SNDHWM, Int32(clamping: options.sendHighWaterMark), name: "ZMQ_SNDHWM")
        try socket.set(ZMQ_RCVHWM, Int32(clamping: options.receiveHighWaterMark), name: "ZMQ_RCVHWM")
        if type == .router {
            try socket.set(ZMQ_ROUTER_MANDATORY, options.routerMandatory ? Int32(1) : 0, name: "ZMQ_ROUTER_MANDATORY")
            try socket.set(ZMQ_ROUTER_HANDOVER, options.routerHandover ? Int32(1) : 0, name: "ZMQ_ROUTER_HANDOVER")
        }
        if let heartbeat = options.heartbeat {
            try socket.set(ZMQ_HEARTBEAT_IVL, heartbeat.interval.zmqMilliseconds, name: "ZMQ_HEARTBEAT_IVL")
            try socket.set(ZMQ_HEARTBEAT_TIMEOUT, heartbeat.timeout.zmqMilliseconds, name: "ZMQ_HEARTBEAT_TIMEOUT")
            try socket.set(ZMQ_HEARTBEAT_TTL, heartbeat.ttl.zmqMilliseconds, name: "ZMQ_HEARTBEAT_TTL")
        }
        if let routingID = options.routingID {
            try socket.set(ZMQ_ROUTING_ID, bytes: routingID.bytes, name: "ZMQ_ROUTING_ID")
        }
        try socket.set(ZMQ_IMMEDIATE, options.immediate ? Int32(1) : 0, name: "ZMQ_IMMEDIATE")
        try socket.set(ZMQ_RECONNECT_IVL, options.reconnectInterval.zmqMilliseconds, name: "ZMQ_RECONNECT_IVL")
        try socket.set(
            ZMQ_RECONNECT_IVL_MAX, options.reconnectIntervalMax.zmqMilliseconds, name: "ZMQ_RECONNECT_IVL_MAX"
        )
        try socket.set(ZMQ_MAXMSGSIZE, Int64(options.effectiveDisconnectBytes), name: "ZMQ_MAXMSGSIZE")
        switch options.curve {
        case .none:
            break
        case .server(let keys, let domain):
            try socket.set(ZMQ_CURVE_SERVER, Int32(1), name: "ZMQ_CURVE_SERVER")
            try socket.set(ZMQ_CURVE_SECRETKEY, bytes: keys.secretKey.bytes, name: "ZMQ_CURVE_SECRETKEY")
            try socket.set(ZMQ_ZAP_DOMAIN, bytes: Data(domain.utf8), name: "ZMQ_ZAP_DOMAIN")
            try socket.set(
                Int32(splice_ZMQ_ZAP_ENFORCE_DOMAIN()), options.zapEnforceDomain ? Int32(1) : 0,
                name: "ZMQ_ZAP_ENFORCE_DOMAIN"
            )
        case .client(let keys, let serverKey):
            try socket.set(ZMQ_CURVE_SERVERKEY, bytes: serverKey.bytes, name: "ZMQ_CURVE_SERVERKEY")
            try socket.set(ZMQ_CURVE_PUBLICKEY, bytes: keys.publicKey.bytes, name: "ZMQ_CURVE_PUBLICKEY")
            try socket.set(ZMQ_CURVE_SECRETKEY, bytes: keys.secretKey.bytes, name: "ZMQ_CURVE_SECRETKEY")
        }
    }

    // MARK: - Running

    /// Runs until a close command arrives or the context is terminated, then closes the socket
    /// and shuts the channel down.
    func run() {
        var poller = RawPoller()
        let socketItem = poller.add(socket: socket.pollHandle)
        let wakeItem = poller.add(fd: channel.wake.fd)
        poller.setReadInterest(wakeItem, true)
        var monitorItem: Int?
        if let monitor {
            monitorItem = poller.add(socket: monitor.pollHandle)
            poller.setReadInterest(monitorItem!, true)
        }
        var closing: [CheckedContinuation<Void, Never>] = []
        var lingerOverride: Duration?
        running: while true {
            poller.setReadInterest(socketItem, channel.inbound.hasRoom)
            do {
                try poller.poll(timeoutMilliseconds: -1)
            } catch {
                break running  // ETERM: the context is being terminated
            }
            if poller.isReadable(wakeItem) { channel.wake.drain() }
            var stop = false
            for command in channel.takeCommands() {
                if case .close(let linger, let reply) = command {
                    stop = true
                    lingerOverride = linger ?? lingerOverride
                    if let reply { closing.append(reply) }
                } else if stop {
                    command.failClosed()  // queued after the close
                } else {
                    execute(command)
                }
            }
            if stop { break running }
            if poller.isReadable(socketItem), !receiveBatch() { break running }
            if let monitorItem, poller.isReadable(monitorItem) { readEvents() }
        }
        if let lingerOverride {
            try? socket.set(ZMQ_LINGER, lingerOverride.zmqMilliseconds, name: "ZMQ_LINGER")
        }
        socket.stopMonitor()
        monitor?.close()
        socket.close()
        channel.shutDown()
        for reply in closing { reply.resume() }
    }

    private func execute(_ command: EndpointCommand) {
        switch command {
        case .send(let frames, let target, let reply):
            reply.resume(returning: send(frames, to: target))
        case .sendAll(let sends, let reply):
            reply.resume(returning: sends.map { send($0.frames, to: $0.target) })
        case .disconnect(let key, let farewell, let reply):
            reply.resume(returning: disconnect(key, farewell: farewell))
        case .close:
            break  // handled by run()
        }
    }

    // MARK: - Receiving

    /// Reads up to a batch of messages while the inbound queue has room. Returns false when the
    /// socket is unusable (context terminated).
    private func receiveBatch() -> Bool {
        let isRouter = plan.type == .router
        for _ in 0..<Self.receiveBatch {
            guard channel.inbound.hasRoom else { return true }
            let received: RawSocket.Received?
            do {
                // A ROUTER's first frame is the routing id (at most 255 bytes).
                received = try socket.receive(
                    maxFrames: plan.options.maxFrames + (isRouter ? 1 : 0),
                    maxBytes: plan.options.maxMessageBytes + (isRouter ? 255 : 0),
                    payloadIndex: isRouter ? 1 : 0
                )
            } catch {
                return error.code != .contextTerminated && error.code != .closed
            }
            guard let received else { return true }
            channel.counters.recordReceived()
            switch admit(received) {
            case .success(let delivery):
                // An oversized message is counted here and handed on as a notice (no frames), so
                // that its receiver can log it and answer it (docs/protocol.md, Rejections).
                if let rejection = delivery.rejection { channel.counters.recordDropped(rejection.reason) }
                channel.inbound.push(delivery)
            case .failure(let rejection):
                channel.counters.recordDropped(rejection.reason)
            }
        }
        return true
    }

    /// Splits off the routing id, enforces limits and authentication, and records the route. An
    /// oversized message from an admitted peer comes back as a notice: no frames, its rejection.
    private func admit(_ received: RawSocket.Received) -> Result<WireDelivery, WireRejection> {
        var oversized: WireRejection?
        switch received.overLimit {
        case nil: break
        case .oversized?:
            let limit = plan.options.maxMessageBytes
            oversized = WireRejection(.oversized, "\(received.totalBytes) bytes, over the \(limit)-byte limit",
                                      requestID: received.requestID)
        case let reason?:
            return .failure(WireRejection(reason, "over the endpoint's limit"))
        }
        var frames = received.frames
        var routingID: RoutingID?
        if plan.type == .router {
            guard !frames.isEmpty else {
                return .failure(oversized ?? WireRejection(.missingFrames, "no routing id"))
            }
            routingID = RoutingID(frames.removeFirst())
        }
        if oversized != nil { frames = [] }
        guard let domain = serverDomain else {
            return .success(WireDelivery(peer: WirePeer(routingID: routingID, publicKey: nil), frames: frames,
                                         rejection: oversized))
        }
        // A CURVE server admits only messages whose session a ZAP handler authenticated. With
        // ZAP_ENFORCE_DOMAIN libzmq already refuses such sessions; this is the second lock.
        guard let userID = received.userID else {
            return .failure(WireRejection(.unauthenticated, "no authenticated key on the session"))
        }
        let onProbation = userID.hasPrefix(ZAPHandler.probationPrefix)
        let z85 = onProbation ? String(userID.dropFirst(ZAPHandler.probationPrefix.count)) : userID
        guard let key = try? CurvePublicKey(z85: z85) else {
            return .failure(WireRejection(.unauthenticated, "no authenticated key on the session"))
        }
        if let authorizer = plan.authorizer, !authorizer.isStillAuthorized(key, domain: domain) {
            // A session on probation may send what probation allows until its key is admitted.
            guard onProbation else { return .failure(WireRejection(.revoked, "key \(key) is no longer authorized")) }
            guard oversized == nil, Self.probationAdmits(frames, types: plan.options.probationTypes) else {
                let allowed = plan.options.probationTypes.isEmpty
                    ? "nothing" : plan.options.probationTypes.sorted().joined(separator: ", ")
                // Handed on as a notice (no frames), so the receiver can log who knocks without a token.
                let rejection = WireRejection(.probation,
                                              "key \(key) is not enrolled: it may send \(allowed) until it is")
                return .success(WireDelivery(peer: WirePeer(routingID: routingID, publicKey: key), frames: [],
                                             rejection: rejection))
            }
            if let routingID {
                noteRoute(routingID, key: key)
                probationRoutes.insert(routingID)
            }
            return .success(WireDelivery(peer: WirePeer(routingID: routingID, publicKey: key), frames: frames))
        }
        if let routingID { noteRoute(routingID, key: key) }
        return .success(WireDelivery(peer: WirePeer(routingID: routingID, publicKey: key), frames: frames,
                                     rejection: oversized))
    }

    /// Whether a message from a session on probation is one of `types`: one small frame whose
    /// envelope `type` is listed.
    private static func probationAdmits(_ frames: [Data], types: Set<String>) -> Bool {
        struct EnvelopeType: Decodable { let type: String }
        guard !types.isEmpty, frames.count == 1, let frame = frames.first, frame.count <= WireOptions.probationMaxBytes,
              let envelope = try? JSON.decode(EnvelopeType.self, from: frame) else { return false }
        return types.contains(envelope.type)
    }

    private func noteRoute(_ routingID: RoutingID, key: CurvePublicKey) {
        if keyOfRoute[routingID] == key, routesOfKey[key]?.last == routingID { return }
        forgetRoute(routingID)
        keyOfRoute[routingID] = key
        var routes = routesOfKey[key, default: []]
        routes.append(routingID)
        if routes.count > Self.routesKeptPerKey {
            keyOfRoute[routes.removeFirst()] = nil
        }
        routesOfKey[key] = routes
    }

    private func forgetRoute(_ routingID: RoutingID) {
        probationRoutes.remove(routingID)
        guard let key = keyOfRoute.removeValue(forKey: routingID) else { return }
        routesOfKey[key]?.removeAll { $0 == routingID }
        if routesOfKey[key]?.isEmpty == true { routesOfKey[key] = nil }
    }

    private func readEvents() {
        guard let monitor else { return }
        while let received = try? monitor.receive(maxFrames: 4, maxBytes: 4096, payloadIndex: -1) {
            if let event = WireEvent(monitorFrames: received.frames) { channel.events.yield(event) }
        }
    }

    // MARK: - Sending

    private func send(_ frames: [Data], to target: SendTarget) -> Result<Void, WireError> {
        do throws(WireError) {
            let routingID = try resolve(target).get()
            do throws(WireError) {
                try socket.send(routingID.map { [$0.bytes] + frames } ?? frames)
            } catch {
                if error.code == .unroutable, let routingID { forgetRoute(routingID) }
                throw error
            }
            channel.counters.recordSent()
            return .success(())
        } catch {
            channel.counters.recordSendFailed()
            return .failure(error)
        }
    }

    /// The routing id to prefix (nil on a DEALER), after checking that an authenticated peer is
    /// still authorized and still owns that route.
    private func resolve(_ target: SendTarget) -> Result<RoutingID?, WireError> {
        guard plan.type == .router else { return .success(nil) }
        let key: CurvePublicKey?
        let routingID: RoutingID
        switch target {
        case .peer(let peer):
            guard let id = peer.routingID else {
                return .failure(WireError(.invalidArgument, "a ROUTER send needs the peer's routing id"))
            }
            routingID = id
            key = peer.publicKey
        case .key(let target):
            guard let id = routesOfKey[target]?.last else {
                return .failure(WireError(.unknownPeer, "no connection from key \(target)"))
            }
            routingID = id
            key = target
        }
        guard let key, let domain = serverDomain else { return .success(routingID) }
        // The answer to a session on probation (JOINED) goes out while its key is not admitted.
        if let authorizer = plan.authorizer, !authorizer.isStillAuthorized(key, domain: domain),
           !probationRoutes.contains(routingID) {
            return .failure(WireError(.peerRevoked, "key \(key) is no longer authorized"))
        }
        guard let owner = keyOfRoute[routingID] else {
            return .failure(WireError(.unknownPeer, "no connection \(routingID) from key \(key)"))
        }
        guard owner == key else {
            return .failure(WireError(
                .peerMismatch, "connection \(routingID) now belongs to key \(owner), not \(key)"))
        }
        return .success(routingID)
    }

    private func disconnect(_ key: CurvePublicKey, farewell: [Data]?) -> Int {
        let routes = routesOfKey[key] ?? []
        for routingID in routes {
            if let farewell { _ = try? socket.send([routingID.bytes] + farewell) }
            forgetRoute(routingID)
        }
        return routes.count
    }
}
