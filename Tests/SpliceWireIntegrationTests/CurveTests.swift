import Foundation
import SpliceWire
import Testing

/// A coordinator-like CURVE server: a context, a ZAP handler over `keys` and a ROUTER.
private struct CurveServer {
    let context: WireContext
    let zap: ZAPHandler?
    let router: WireEndpoint
    let serverKeys: CurveKeyPair
    /// What the router was opened with.
    let options: WireOptions

    static func start(
        enrolled keys: EnrolledKeys?, authorizer: (any Authorizer)? = nil, decisionTimeout: Duration = .seconds(5),
        zapEnforceDomain: Bool = true
    ) async throws -> CurveServer {
        let context = try WireContext()
        let serverKeys = try CurveKeyPair.generate()
        var zap: ZAPHandler?
        if let chosen = authorizer ?? keys {
            zap = try await ZAPHandler.start(context: context, authorizer: chosen, decisionTimeout: decisionTimeout)
        }
        var options = WireOptions.router(curve: .server(keys: serverKeys))
        options.zapEnforceDomain = zapEnforceDomain
        let router = try await WireEndpoint.open(
            type: .router, context: context, binds: [anyLoopbackPort], connects: [], options: options,
            requireZAPHandler: false
        )
        return CurveServer(context: context, zap: zap, router: router, serverKeys: serverKeys, options: options)
    }

    /// A worker-like DEALER using `keys`.
    func client(_ keys: CurveKeyPair, routingID: RoutingID? = nil, serverKey: CurvePublicKey? = nil) async throws
        -> WireEndpoint
    {
        // Not `immediate`: the first message waits for the handshake instead of failing.
        let options = WireOptions.dealer(
            routingID: routingID, curve: .client(keys: keys, serverKey: serverKey ?? serverKeys.publicKey),
            immediate: false
        )
        return try await WireEndpoint.connect(router.endpoints[0], type: .dealer, context: context, options: options)
    }

    func stop(_ clients: WireEndpoint...) async {
        for client in clients { await client.close(linger: .zero) }
        await router.close(linger: .zero)
        await zap?.close()
        await context.terminate()
    }
}

@Suite("CURVE and ZAP over tcp://127.0.0.1", .timeLimit(.minutes(1)))
struct CurveTests {
    @Test("an enrolled key gets in, and every message carries its authenticated key")
    func enrolled() async throws {
        let workerKeys = try CurveKeyPair.generate()
        let server = try await CurveServer.start(enrolled: EnrolledKeys([workerKeys.publicKey]))
        let worker = try await server.client(workerKeys)
        for index in 0..<3 { try await worker.send([Data(text: "m\(index)")]) }
        for index in 0..<3 {
            let delivery = try #require(await receive(server.router))
            #expect(delivery.texts == ["m\(index)"])
            #expect(delivery.peer.publicKey == workerKeys.publicKey)
            #expect(delivery.peer.routingID != nil)
        }
        // Reply by key and by peer.
        try await server.router.send([Data(text: "by key")], toKey: workerKeys.publicKey)
        #expect(await receive(worker)?.texts == ["by key"])
        // At least the one handshake; a loaded machine may see the session reconnect (heartbeat
        // timeout) and hand-shake again, which is allowed as well.
        #expect((server.zap?.statistics.allowed ?? 0) >= 1)
        await server.stop(worker)
    }

    @Test("an unenrolled key is refused during the handshake: no message ever arrives")
    func unenrolled() async throws {
        let server = try await CurveServer.start(enrolled: EnrolledKeys([try CurveKeyPair.generate().publicKey]))
        let intruder = try await server.client(try CurveKeyPair.generate())
        try await intruder.send([Data(text: "let me in")])
        let refusal = await firstEvent(on: intruder) {
            if case .authenticationFailed = $0 { return true } else { return false }
        }
        #expect(refusal?.kind == .authenticationFailed(status: 400))
        #expect(await receive(server.router, within: .milliseconds(500)) == nil)
        #expect(server.router.counters.snapshot().received == 0)
        #expect(server.zap?.statistics.denied ?? 0 >= 1)
        await server.stop(intruder)
    }

    @Test("a client with the wrong server key never gets a session")
    func wrongServerKey() async throws {
        let workerKeys = try CurveKeyPair.generate()
        let server = try await CurveServer.start(enrolled: EnrolledKeys([workerKeys.publicKey]))
        let confused = try await server.client(workerKeys, serverKey: try CurveKeyPair.generate().publicKey)
        try await confused.send([Data(text: "hello?")])
        #expect(await receive(server.router, within: .milliseconds(500)) == nil)
        #expect(server.router.counters.snapshot().received == 0)
        await server.stop(confused)
    }

    @Test("a CURVE server refuses to open without a ZAP handler for its domain")
    func requiresHandler() async throws {
        let context = try WireContext()
        let options = WireOptions.router(curve: .server(keys: try CurveKeyPair.generate()))
        let refused = await wireError {
            _ = try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context, options: options)
        }
        #expect(refused?.code == .authenticationUnavailable)
        // A handler for another domain does not count.
        let zap = try await ZAPHandler.start(context: context, domain: "other", authorizer: EnrolledKeys())
        await #expect(throws: WireError.self) {
            try await WireEndpoint.bind([anyLoopbackPort], type: .router, context: context, options: options)
        }
        await zap.close()
        await context.terminate()
    }

    @Test("no ZAP handler + ZAP_ENFORCE_DOMAIN: libzmq refuses every client (fail closed)")
    func enforceDomainFailsClosed() async throws {
        let server = try await CurveServer.start(enrolled: nil)
        let applied = try await appliedOptions(server.options, type: .router)
        #expect(applied["zap_enforce_domain"] == 1)
        #expect(applied["curve_server"] == 1)
        let client = try await server.client(try CurveKeyPair.generate())
        try await client.send([Data(text: "anyone?")])
        #expect(await receive(server.router, within: .milliseconds(700)) == nil)
        #expect(server.router.counters.snapshot().received == 0)
        await server.stop(client)
    }

    @Test("no ZAP handler and enforcement off: libzmq lets clients in, the endpoint still drops them")
    func endpointIsTheSecondLock() async throws {
        let server = try await CurveServer.start(enrolled: nil, zapEnforceDomain: false)
        let client = try await server.client(try CurveKeyPair.generate())
        try await client.send([Data(text: "anyone?")])
        #expect(await eventually { server.router.counters.snapshot().dropped(.unauthenticated) == 1 })
        #expect(await receive(server.router, within: .milliseconds(200)) == nil)
        #expect(server.router.counters.snapshot().delivered == 0)
        await server.stop(client)
    }

    @Test("an authorizer that does not answer in time refuses the client (status 500)")
    func slowAuthorizer() async throws {
        let slow = ClosureAuthorizer { _ in
            try? await Task.sleep(for: .seconds(5))
            return .allow
        }
        let server = try await CurveServer.start(enrolled: nil, authorizer: slow, decisionTimeout: .milliseconds(200))
        let client = try await server.client(try CurveKeyPair.generate())
        try await client.send([Data(text: "hello")])
        let refusal = await firstEvent(on: client) {
            if case .authenticationFailed = $0 { return true } else { return false }
        }
        #expect(refusal?.kind == .authenticationFailed(status: 500))
        #expect(await receive(server.router, within: .milliseconds(300)) == nil)
        #expect(server.zap?.statistics.timedOut ?? 0 >= 1)
        await server.stop(client)
    }

    @Test("revoking a key ends its live session and refuses it from then on")
    func revocation() async throws {
        let workerKeys = try CurveKeyPair.generate()
        let enrolled = EnrolledKeys([workerKeys.publicKey])
        let server = try await CurveServer.start(enrolled: enrolled)
        let worker = try await server.client(workerKeys)
        try await worker.send([Data(text: "before")])
        let before = try #require(await receive(server.router))
        #expect(before.peer.publicKey == workerKeys.publicKey)

        // The coordinator's revoke: the authorizer first, then the live sessions.
        enrolled.revoke(workerKeys.publicKey)
        #expect(await wireError { try await server.router.send([Data(text: "job")], to: before.peer) }?.code
            == .peerRevoked)
        #expect(await wireError { try await server.router.send([Data(text: "job")], toKey: workerKeys.publicKey) }?.code
            == .peerRevoked)
        let cut = await server.router.disconnect(key: workerKeys.publicKey, farewell: [Data(text: "DISCONNECT revoked")])
        #expect(cut == 1)
        #expect(await receive(worker)?.texts == ["DISCONNECT revoked"])

        // The old session keeps its TCP connection until the worker leaves, but nothing it sends
        // gets through.
        try await worker.send([Data(text: "after")])
        #expect(await eventually { server.router.counters.snapshot().dropped(.revoked) == 1 })
        #expect(await receive(server.router, within: .milliseconds(200)) == nil)

        // A new connection with the revoked key is refused at the handshake.
        let again = try await server.client(workerKeys)
        try await again.send([Data(text: "again")])
        #expect(await receive(server.router, within: .milliseconds(500)) == nil)
        #expect(server.zap?.statistics.denied ?? 0 >= 1)

        // Enrolling it again lets a new connection (and the old one) through.
        enrolled.enroll(workerKeys.publicKey)
        let back = try await server.client(workerKeys)
        try await back.send([Data(text: "back")])
        let delivered = await within(.seconds(30)) { () -> WireDelivery? in
            while let delivery = await server.router.receive() {
                if delivery.texts == ["back"] { return delivery }
            }
            return nil
        }
        #expect(delivered?.peer.publicKey == workerKeys.publicKey)
        await server.stop(worker, again, back)
    }

    @Test("a route taken over by another key is not used for the first key's messages")
    func routeOwnership() async throws {
        let first = try CurveKeyPair.generate()
        let second = try CurveKeyPair.generate()
        let server = try await CurveServer.start(enrolled: EnrolledKeys([first.publicKey, second.publicKey]))
        let shared = RoutingID("worker-1")
        let a = try await server.client(first, routingID: shared)
        try await a.send([Data(text: "a")])
        let fromA = try #require(await receive(server.router))
        #expect(fromA.peer.publicKey == first.publicKey)

        // Another enrolled worker claims the same routing id (ROUTER_HANDOVER lets it).
        let b = try await server.client(second, routingID: shared)
        try await b.send([Data(text: "b")])
        let fromB = try #require(await receive(server.router))
        #expect(fromB.peer.publicKey == second.publicKey)
        #expect(fromB.peer.routingID == shared)

        // Sending the first key's message down the second key's connection is refused.
        #expect(await wireError { try await server.router.send([Data(text: "meant for a")], to: fromA.peer) }?.code
            == .peerMismatch)
        #expect(await receive(b, within: .milliseconds(300)) == nil)
        await server.stop(a, b)
    }

    @Test("only one ZAP handler per context")
    func oneHandler() async throws {
        let context = try WireContext()
        let zap = try await ZAPHandler.start(context: context, authorizer: EnrolledKeys())
        #expect(await wireError { _ = try await ZAPHandler.start(context: context, authorizer: EnrolledKeys()) }?.code
            == .addressInUse)
        await zap.close()
        await context.terminate()
    }
}
