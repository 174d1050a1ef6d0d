import Foundation
import SpliceWire
import Testing

@Suite("ROUTER and DEALER over tcp://127.0.0.1", .timeLimit(.minutes(1)))
struct RouterDealerTests {
    @Test("a DEALER's multipart message reaches the ROUTER, and the reply comes back")
    func roundTrip() async throws {
        let context = try WireContext()
        let router = try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context)
        #expect(router.endpoints.count == 1)
        #expect(!router.endpoints[0].hasSuffix("*"))
        let dealer = try await WireEndpoint.connect(router.endpoints[0], type: .dealer, context: context)

        try await dealer.send([Data(text: "hello"), Data(), Data(text: "world")])
        let request = try #require(await receive(router))
        #expect(request.texts == ["hello", "", "world"])
        #expect(request.peer.routingID != nil)
        #expect(request.peer.publicKey == nil)

        try await router.send([Data(text: "reply")], to: request.peer)
        let reply = try #require(await receive(dealer))
        #expect(reply.texts == ["reply"])
        #expect(reply.peer == .upstream)

        #expect(router.counters.snapshot().received == 1)
        #expect(router.counters.snapshot().delivered == 1)
        #expect(dealer.counters.snapshot().sent == 1)
        await shutDown(context, dealer, router)
    }

    @Test("ROUTER_MANDATORY: sends to an unknown or departed peer throw .unroutable")
    func mandatory() async throws {
        let context = try WireContext()
        let router = try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context)
        let stranger = WirePeer(routingID: RoutingID("nobody"), publicKey: nil)
        let unroutable = await wireError { try await router.send([Data(text: "x")], to: stranger) }
        #expect(unroutable?.code == .unroutable)
        #expect(unroutable?.isRetryable == false)

        let dealer = try await WireEndpoint.connect(router.endpoints[0], type: .dealer, context: context)
        try await dealer.send([Data(text: "hi")])
        let peer = try #require(await receive(router)).peer
        try await router.send([Data(text: "ok")], to: peer)
        await dealer.close(linger: .zero)
        // Once the ROUTER notices the closed connection, the route is gone.
        #expect(await eventually {
            await wireError { try await router.send([Data(text: "late")], to: peer) }?.code == .unroutable
        })
        #expect(router.counters.snapshot().sendFailed >= 2)
        await shutDown(context, router)
    }

    @Test("without ROUTER_MANDATORY the same send vanishes silently (why it is on by default)")
    func notMandatory() async throws {
        let context = try WireContext()
        var options = WireOptions()
        options.routerMandatory = false
        let router = try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context, options: options)
        try await router.send([Data(text: "x")], to: WirePeer(routingID: RoutingID("nobody"), publicKey: nil))
        await shutDown(context, router)
    }

    /// Two DEALERs with the same routing id, the first still connected (a worker restarted
    /// before its old TCP connection was noticed dead).
    private func sameRoutingID(handover: Bool) async throws -> (first: String?, reply: [String?]) {
        let context = try WireContext()
        var options = WireOptions()
        options.routerHandover = handover
        let router = try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context, options: options)
        let dealerOptions = WireOptions.dealer(routingID: RoutingID("worker-1"), immediate: false)
        let old = try await WireEndpoint.connect(router.endpoints[0], type: .dealer, context: context, options: dealerOptions)
        try await old.send([Data(text: "from old")])
        let first = await receive(router)?.texts.first
        let new = try await WireEndpoint.connect(router.endpoints[0], type: .dealer, context: context, options: dealerOptions)
        try await new.send([Data(text: "from new")])
        let second = await receive(router, within: .milliseconds(700))
        // Reply to whoever holds the routing id now.
        try? await router.send([Data(text: "reply")], to: WirePeer(routingID: RoutingID("worker-1"), publicKey: nil))
        async let atNew = receive(new, within: .milliseconds(700))
        async let atOld = receive(old, within: .milliseconds(700))
        let replies = [second?.texts.first, await atNew?.texts.first, await atOld?.texts.first]
        for endpoint in [old, new, router] { await endpoint.close(linger: .zero) }
        await context.terminate()
        return (first, replies)
    }

    @Test("ROUTER_HANDOVER: a restarted DEALER with the same routing id takes the route over")
    func handover() async throws {
        let (first, replies) = try await sameRoutingID(handover: true)
        #expect(first == "from old")
        #expect(replies == ["from new", "reply", nil])
    }

    @Test("without ROUTER_HANDOVER the restarted DEALER is silently refused")
    func noHandover() async throws {
        let (first, replies) = try await sameRoutingID(handover: false)
        #expect(first == "from old")
        #expect(replies == [nil, nil, "reply"])
    }

    @Test("the socket options are applied as configured")
    func options() async throws {
        let context = try WireContext()
        var options = WireOptions.dealer()
        options.linger = .milliseconds(250)
        options.sendHighWaterMark = 77
        options.receiveHighWaterMark = 88
        options.heartbeat = .init(interval: .milliseconds(1500), timeout: .milliseconds(4500), ttl: .seconds(9))
        options.reconnectInterval = .milliseconds(120)
        options.reconnectIntervalMax = .seconds(7)
        options.maxMessageBytes = 65536
        let dealer = try await WireEndpoint.connect("tcp://127.0.0.1:9", type: .dealer, context: context, options: options)
        let applied = try await appliedOptions(options, type: .dealer)
        #expect(applied["linger"] == 250)
        #expect(applied["sndhwm"] == 77)
        #expect(applied["rcvhwm"] == 88)
        #expect(applied["heartbeat_ivl"] == 1500)
        #expect(applied["heartbeat_timeout"] == 4500)
        #expect(applied["heartbeat_ttl"] == 9000)
        #expect(applied["immediate"] == 1)
        #expect(applied["reconnect_ivl"] == 120)
        #expect(applied["reconnect_ivl_max"] == 7000)
        // libzmq reads frames up to 16 times the message limit (the endpoint counts and reports
        // those as oversized); only a larger one ends the connection.
        #expect(applied["maxmsgsize"] == 1_048_576)  // 16 × 65536
        options.disconnectBytes = 100_000
        #expect(try await appliedOptions(options, type: .dealer)["maxmsgsize"] == 100_000)
        options.disconnectBytes = 1000
        #expect(try await appliedOptions(options, type: .dealer)["maxmsgsize"] == 65536, "never below the message limit")
        await shutDown(context, dealer)
    }

    @Test("a slow consumer loses nothing: the endpoint stops reading instead of dropping")
    func backpressure() async throws {
        let context = try WireContext()
        var options = WireOptions()
        options.inboundBuffer = 4
        let router = try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context, options: options)
        let dealer = try await WireEndpoint.connect(router.endpoints[0], type: .dealer, context: context)
        let count = 500
        for index in 0..<count { try await dealer.send([Data(text: "\(index)")]) }
        try await Task.sleep(for: .milliseconds(100))
        var received: [String] = []
        while received.count < count, let delivery = await receive(router) {
            received.append(delivery.texts[0])
        }
        #expect(received == (0..<count).map(String.init))
        #expect(router.counters.snapshot().totalDropped == 0)
        await shutDown(context, dealer, router)
    }

    @Test("with `immediate` and no coordinator up, a DEALER's send fails fast and retryably")
    func immediate() async throws {
        let context = try WireContext()
        let dealer = try await WireEndpoint.connect("tcp://127.0.0.1:9", type: .dealer, context: context, options: .dealer())
        // Not queued for a peer that is not there.
        let failure = await wireError { try await dealer.send([Data(text: "result")]) }
        #expect(failure?.code == .wouldBlock)
        #expect(failure?.isRetryable == true)
        await shutDown(context, dealer)
    }

    @Test("closing with unsent messages and a finite linger does not hang")
    func lingerClose() async throws {
        let context = try WireContext()
        // A port nobody listens on any more.
        let gone = try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context)
        let deadEndpoint = gone.endpoints[0]
        await gone.close(linger: .zero)

        var options = WireOptions()
        options.linger = .milliseconds(100)
        let dealer = try await WireEndpoint.connect(deadEndpoint, type: .dealer, context: context, options: options)
        for _ in 0..<50 { try await dealer.send([Data(text: "queued forever")]) }
        // libzmq's default linger is forever: without the configured 100 ms this never returns.
        // (How fast it returns is not asserted: a loaded machine decides that.)
        let finished = await within(.seconds(20)) {
            await dealer.close()  // the configured 100 ms linger
            await context.terminate()
            return true
        }
        #expect(finished == true, "close waited on the unsent messages: linger not applied")
        // A closed endpoint refuses sends and ends its stream.
        await #expect(throws: WireError.self) { try await dealer.send([Data(text: "x")]) }
        #expect(await dealer.receive() == nil)
    }

    @Test("terminating the context stops endpoints that are still open")
    func terminateOpenEndpoints() async throws {
        let context = try WireContext()
        let router = try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context)
        let dealer = try await WireEndpoint.connect(router.endpoints[0], type: .dealer, context: context)
        let waiting = Task { await router.receive() }
        let finished = await within(.seconds(5)) {
            await context.terminate()
            return true
        }
        #expect(finished == true)
        #expect(await waiting.value == nil)
        await #expect(throws: WireError.self) { try await dealer.send([Data(text: "x")]) }
    }

    @Test("binding an address in use fails with a typed error")
    func addressInUse() async throws {
        let context = try WireContext()
        let first = try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context)
        #expect(await wireError { _ = try await WireEndpoint.bind(first.endpoints, type: .router, context: context) }?.code
            == .addressInUse)
        await shutDown(context, first)
    }
}
