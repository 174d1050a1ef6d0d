public import Foundation

/// One ZeroMQ socket with an async API.
///
/// The socket lives on a dedicated thread of its own (libzmq sockets are not thread safe, and
/// `zmq_poll` blocks, so neither may run on Swift's cooperative pool). Any task may call `send`:
/// the frames are queued, the socket thread is woken through an eventfd, sends them and reports
/// the result back, so an unroutable peer surfaces as a thrown `WireError` (`.unroutable`)
/// instead of vanishing. Received messages arrive through `receive()` / `deliveries` (one
/// consumer at a time is the expected use); when the consumer falls behind by `inboundBuffer`
/// messages the thread stops reading, which pushes back into libzmq's high-water mark and TCP.
///
/// On a CURVE server endpoint every delivery carries the peer's authenticated public key, and
/// messages from sessions without one, or whose key the `Authorizer` no longer admits, are
/// dropped and counted.
public final class WireEndpoint: Sendable {
    /// The socket type.
    public let type: WireSocketType
    /// The endpoints as resolved after binding (`tcp://127.0.0.1:*` → the real port) or connecting.
    public let endpoints: [String]
    /// The options the socket was opened with.
    public let options: WireOptions
    /// Received / delivered / dropped / sent counts.
    public let counters: WireCounters
    /// Connection and handshake events (when `options.monitorEvents`); finishes on close.
    /// One consumer, once: like any `AsyncStream`, it ends for good when the task iterating it
    /// is cancelled.
    public let events: AsyncStream<WireEvent>
    let channel: EndpointChannel

    // MARK: - Opening

    /// Opens a socket of `type` and binds it to each of `endpoints`
    /// (e.g. `tcp://127.0.0.1:*`; see `endpoints` for the resolved ports).
    public static func bind(
        _ endpoints: [String], type: WireSocketType, context: WireContext, options: WireOptions = WireOptions()
    ) async throws(WireError) -> WireEndpoint {
        try await open(type: type, context: context, binds: endpoints, connects: [], options: options)
    }

    /// Opens a socket of `type` and connects it to `endpoint`. libzmq connects (and reconnects,
    /// with backoff) in the background: this returns before the peer is reachable.
    public static func connect(
        _ endpoint: String, type: WireSocketType, context: WireContext, options: WireOptions = WireOptions()
    ) async throws(WireError) -> WireEndpoint {
        try await open(type: type, context: context, binds: [], connects: [endpoint], options: options)
    }

    /// Opens the socket on its own thread. A CURVE server needs a running `ZAPHandler` for its
    /// domain in `context` (fail closed); `requireZAPHandler: false` exists only so tests can
    /// show what libzmq does without one.
    package static func open(
        type: WireSocketType, context: WireContext, binds: [String], connects: [String], options: WireOptions,
        requireZAPHandler: Bool = true
    ) async throws(WireError) -> WireEndpoint {
        var plan = EndpointPlan(type: type, context: context, binds: binds, connects: connects, options: options)
        if case .server(_, let domain) = options.curve {
            plan.authorizer = context.authorizer(forZAPDomain: domain)
            if plan.authorizer == nil && requireZAPHandler {
                throw WireError(
                    .authenticationUnavailable, "no ZAP handler serves domain \"\(domain)\" in this context; start a ZAPHandler "
                        + "before binding a CURVE server, or every client key would be admitted")
            }
        }
        let (events, eventSink) = AsyncStream.makeStream(of: WireEvent.self, bufferingPolicy: .bufferingNewest(256))
        let counters = WireCounters()
        let finalPlan = plan
        let channel = try EndpointChannel(inboundCapacity: options.inboundBuffer, events: eventSink, counters: counters)
        let started = await withCheckedContinuation { (started: CheckedContinuation<Result<[String], WireError>, Never>) in
            let thread = Thread {
                switch Result(catching: { () throws(WireError) in try EndpointLoop.open(finalPlan, channel: channel) }) {
                case .success(let (loop, resolved)):
                    started.resume(returning: .success(resolved))
                    loop.run()
                case .failure(let error):
                    channel.shutDown()
                    started.resume(returning: .failure(error))
                }
            }
            thread.name = "splice-wire-\(type)"
            thread.start()
        }
        let resolved = try started.get()
        return WireEndpoint(
            type: type, endpoints: resolved, options: options, counters: counters, events: events, channel: channel
        )
    }

    private init(
        type: WireSocketType, endpoints: [String], options: WireOptions, counters: WireCounters,
        events: AsyncStream<WireEvent>, channel: EndpointChannel
    ) {
        self.type = type
        self.endpoints = endpoints
        self.options = options
        self.counters = counters
        self.events = events
        self.channel = channel
    }

    deinit {
        // Dropping the last reference closes the socket (with the configured linger).
        channel.submit(.close(linger: nil, reply: nil))
    }

    // MARK: - Sending

    /// Sends one multipart message. On a ROUTER, `peer.routingID` says where; when
    /// `peer.publicKey` is set the send is refused unless that routing id still belongs to that
    /// authenticated key (`.peerMismatch`, `.unknownPeer`) and the key is still authorized
    /// (`.peerRevoked`). On a DEALER, `peer` is ignored.
    ///
    /// Throws `.unroutable` when the peer has gone (ROUTER_MANDATORY), `.wouldBlock` (retryable)
    /// when its queue is full or, with `immediate`, no connection is up, `.closed` after close.
    public func send(_ frames: [Data], to peer: WirePeer = .upstream) async throws(WireError) {
        try await submitSend(frames, to: .peer(peer))
    }

    /// Sends to the connection most recently heard from with authenticated `key` (CURVE server).
    public func send(_ frames: [Data], toKey key: CurvePublicKey) async throws(WireError) {
        try await submitSend(frames, to: .key(key))
    }

    /// Sends several messages in order with one hand-off to the socket thread, each checked and
    /// answered as `send(_:to:)` would answer it alone (a failed one does not stop the rest).
    public func send(all messages: [(frames: [Data], peer: WirePeer)]) async -> [Result<Void, WireError>] {
        guard !messages.isEmpty else { return [] }
        return await withCheckedContinuation { reply in
            channel.submit(.sendAll(messages.map { ($0.frames, .peer($0.peer)) }, reply: reply))
        }
    }

    private func submitSend(_ frames: [Data], to target: SendTarget) async throws(WireError) {
        let result = await withCheckedContinuation { reply in
            channel.submit(.send(frames, to: target, reply: reply))
        }
        try result.get()
    }

    // MARK: - Receiving

    /// The next received message; nil once the endpoint is closed (and drained), or when the
    /// calling task is cancelled while waiting.
    /// Oversized messages (notices, already counted as dropped) are skipped.
    public func receive() async -> WireDelivery? {
        while let delivery = await channel.inbound.next() {
            guard delivery.rejection == nil else { continue }
            counters.recordDelivered()
            return delivery
        }
        return nil
    }

    /// The next received message without counting it as delivered (for `MessageEndpoint`,
    /// which counts after decoding).
    func receiveUncounted() async -> WireDelivery? {
        await channel.inbound.next()
    }

    /// The received messages waiting now (at least one, up to `limit`), uncounted; empty once
    /// the endpoint is closed (and drained), or when the calling task is cancelled.
    func receiveUncounted(upTo limit: Int) async -> [WireDelivery] {
        await channel.inbound.next(upTo: limit)
    }

    /// Received messages as an async sequence; ends when the endpoint closes.
    public var deliveries: Deliveries { Deliveries(endpoint: self) }

    /// The async sequence of `WireEndpoint.deliveries`.
    public struct Deliveries: AsyncSequence, Sendable {
        public typealias Element = WireDelivery
        let endpoint: WireEndpoint

        public struct AsyncIterator: AsyncIteratorProtocol {
            let endpoint: WireEndpoint
            public mutating func next() async -> WireDelivery? { await endpoint.receive() }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(endpoint: endpoint) }
    }

    // MARK: - Sessions

    /// Cuts off the live connections of `key`: sends `farewell` (if any) to each, and forgets
    /// their routes, so later sends to the key fail with `.unknownPeer`. Combine with removing
    /// the key from the `Authorizer` (e.g. `EnrolledKeys.revoke`), which refuses its new
    /// handshakes and makes this endpoint drop anything its old sessions still send.
    /// Returns how many connections were cut off.
    @discardableResult
    public func disconnect(key: CurvePublicKey, farewell: [Data]? = nil) async -> Int {
        await withCheckedContinuation { reply in
            channel.submit(.disconnect(key: key, farewell: farewell, reply: reply))
        }
    }

    // MARK: - Closing

    /// Closes the socket: messages still queued are flushed for up to `linger` (default: the
    /// configured `options.linger`) in the background, the delivery and event streams finish and
    /// later sends fail with `.closed`. Idempotent.
    public func close(linger: Duration? = nil) async {
        await withCheckedContinuation { reply in
            channel.submit(.close(linger: linger, reply: reply))
        }
    }
}
