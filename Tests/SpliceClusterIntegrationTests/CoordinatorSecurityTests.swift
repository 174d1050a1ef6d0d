import Foundation
import SpliceTestSupport
import SpliceWire
import Testing
import SpliceCoordinator

/// The first event on `endpoint` matching `predicate`, or nil after `timeout`.
private func firstEvent(
    on endpoint: WireEndpoint, within timeout: Duration = .seconds(5), where predicate: @escaping @Sendable (WireEvent.Kind) -> Bool
) async -> WireEvent? {
    await within(timeout) {
        for await event in endpoint.events where predicate(event.kind) { return event }
        return nil
    }
}

@Suite("Coordinator: CURVE, ZAP and the binding policy", .timeLimit(.minutes(5)))
struct CoordinatorSecurityTests {
    @Test("an unenrolled key is refused at the handshake; an enrolled one is welcomed; revoking it ends its session")
    func enrollment() async throws {
        let server = try CurveKeyPair.generate()
        let admin = try CurveKeyPair.generate()
        let member = try CurveKeyPair.generate()
        let stranger = try CurveKeyPair.generate()
        let coordinator = try await CoordinatorUnderTest.start { configuration in
            configuration.keys = server
            configuration.adminKeys = [admin.publicKey]
        }
        #expect(coordinator.endpoints.serverKey == server.publicKey)
        let context = try WireContext()
        let client = try await TestClient.connect(
            to: coordinator.endpoints.api, curve: .client(keys: admin, serverKey: server.publicKey), context: context)
        let enrolled = try await client.request(.enroll(EnrollWorker(publicKey: member.publicKey, name: "member")))
        #expect(enrolled == .workerKey(WorkerKeyChanged(publicKey: member.publicKey, enrolled: true)))

        let intruder = try await ScriptedWorker.connect(
            to: coordinator.endpoints.workers, context: context,
            curve: .client(keys: stranger, serverKey: server.publicKey))
        try await intruder.send(.hello(Hello(workerName: "intruder", slots: 8, encoders: [])))
        let refusal = await firstEvent(on: intruder.endpoint.wire) {
            if case .authenticationFailed = $0 { true } else { false }
        }
        #expect(refusal?.kind == .authenticationFailed(status: 400))
        #expect(await intruder.next(within: .milliseconds(500)) { $0 } == nil, "nothing ever reaches an unenrolled key")

        let worker = try await ScriptedWorker.connect(
            to: coordinator.endpoints.workers, context: context,
            curve: .client(keys: member, serverKey: server.publicKey), routingID: RoutingID("w:member"))
        #expect(try await worker.hello() != nil)
        let sessions = await coordinator.coordinator.sessions()
        #expect(sessions.map(\.identity) == [.key(member.publicKey)], "identified by its key, not its routing id")
        guard case .workers(let listed) = try await client.request(.workers(ListWorkers())) else {
            Issue.record("WORKERS did not answer WORKER_LIST")
            return
        }
        #expect(listed.workers.map(\.publicKey) == [member.publicKey])
        #expect(listed.workers.first?.connected == true && listed.workers.first?.name == "scripted")

        // A client whose key is not an admin key gets no answer at all.
        let outsider = try await TestClient.connect(
            to: coordinator.endpoints.api, curve: .client(keys: member, serverKey: server.publicKey), context: context)
        await #expect(throws: WireError.self) { try await outsider.request(.workers(ListWorkers()), timeout: .seconds(1)) }

        let revoked = try await client.request(.revoke(RevokeWorker(publicKey: member.publicKey)))
        #expect(revoked == .workerKey(WorkerKeyChanged(publicKey: member.publicKey, enrolled: false, sessionsClosed: 1)))
        #expect(await worker.disconnect(.revoked) != nil)
        #expect(await coordinator.coordinator.sessions().isEmpty)
        // Re-enrolling a revoked key is refused; so is a new connection with it.
        guard case .error(let error) = try await client.request(.enroll(EnrollWorker(publicKey: member.publicKey)))
        else {
            Issue.record("re-enrolling a revoked key was accepted")
            return
        }
        #expect(error.code == .invalidRequest)
        let again = try await ScriptedWorker.connect(
            to: coordinator.endpoints.workers, context: context,
            curve: .client(keys: member, serverKey: server.publicKey))
        try await again.send(.hello(Hello(workerName: "again", slots: 1, encoders: [])))
        #expect(await firstEvent(on: again.endpoint.wire) {
            if case .authenticationFailed = $0 { true } else { false }
        }?.kind == .authenticationFailed(status: 400))

        for endpoint in [intruder, worker, again] { await endpoint.close() }
        await outsider.close()
        await client.close()
        try await coordinator.stop()
    }

    @Test("a non-loopback bind without keys is refused unless --insecure", arguments: ["tcp://*:0", "tcp://0.0.0.0:0"])
    func bindingPolicy(endpoint: String) async throws {
        let database = try await TestPostgres.makeDatabase()
        var configuration = CoordinatorUnderTest.configuration(database: database, spool: Fixtures.temporaryDirectory())
        configuration.workersEndpoint = endpoint
        let refused = Coordinator(configuration: configuration)
        let error = await #expect(throws: WireError.self) { try await refused.run() }
        #expect(error?.code == .insecureBinding)
        await #expect(throws: WireError.self) { try await refused.ready() }

        configuration.insecure = true
        configuration.workersEndpoint = endpoint.replacingOccurrences(of: ":0", with: ":*")
        let allowed = Coordinator(configuration: configuration)
        let running = Task { try await allowed.run() }
        _ = try await allowed.ready()
        await allowed.shutdown()
        try await running.value
    }
}
