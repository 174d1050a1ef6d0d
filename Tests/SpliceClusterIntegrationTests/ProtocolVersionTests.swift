import Foundation
import SpliceConcurrency
import SpliceCoordinator
import SpliceLog
import SpliceTestSupport
import SpliceWire
import Testing

// A coordinator and workers of two releases (docs/protocol.md, Versions; docs/deploy.md,
// Upgrading): a real coordinator and raw DEALERs speaking the envelopes of other versions as
// their releases write them, and a real worker daemon against a scripted coordinator that refuses
// its version. The same with a real previous release's worker is UpgradeScenarioTests.

/// A DEALER that sends and reads raw envelopes, as a worker of another release would.
private struct RawWorker: Sendable {
    let wire: WireEndpoint

    static func connect(to address: String, context: WireContext) async throws -> RawWorker {
        RawWorker(wire: try await WireEndpoint.connect(address, type: .dealer, context: context,
                                                       options: .dealer(immediate: false)))
    }

    /// A HELLO of `version`, shaped as version 2 writes it (no `protocolVersions`).
    func hello(version: Int, name: String) async throws {
        let body = #"{"workerName": "\#(name)", "slots": 1, "encoders": ["libx264"], "running": [], "finished": [], "#
            + #""failed": [], "software": "release \#(version)"}"#
        try await wire.send([Data(#"{"protocol": "splice-worker", "version": \#(version), "type": "HELLO", "body": \#(body)}"#.utf8)])
    }

    /// The next envelope of `type` within `timeout`, as its JSON text; others are skipped.
    func next(_ type: String, within timeout: Duration = .seconds(20)) async -> Data? {
        await withDeadline(timeout) { () -> Data? in
            while let delivery = await wire.receive() {
                guard let frame = delivery.frames.first, Self.field("type", of: frame) as? String == type else { continue }
                return frame
            }
            return nil
        }
    }

    static func field(_ name: String, of frame: Data) -> Any? {
        (try? JSONSerialization.jsonObject(with: frame) as? [String: Any])?[name]
    }

    static func body(of frame: Data) -> [String: Any] {
        field("body", of: frame) as? [String: Any] ?? [:]
    }
}

@Suite("Worker-protocol versions: a coordinator speaks its own and the previous one", .timeLimit(.minutes(3)))
struct ProtocolVersionTests {
    @Test("a version-2 worker is welcomed in version 2 and listed as 2; today's worker as 3")
    func previousVersionWelcomed() async throws {
        let coordinator = try await CoordinatorUnderTest.start()
        let context = try WireContext()
        let old = try await RawWorker.connect(to: coordinator.endpoints.workers, context: context)
        var welcome: Data?
        for _ in 0..<20 where welcome == nil {
            try await old.hello(version: 2, name: "release-2")
            welcome = await old.next("WELCOME", within: .seconds(2))
        }
        let welcomed = try #require(welcome, "a version-2 HELLO was never welcomed")
        #expect(RawWorker.field("version", of: welcomed) as? Int == 2, "WELCOME not in the worker's version")
        // Its heartbeats too come in version 2.
        let heartbeat = try #require(await old.next("HEARTBEAT"), "no HEARTBEAT to the version-2 worker")
        #expect(RawWorker.field("version", of: heartbeat) as? Int == 2)

        let today = try await ScriptedWorker.connect(to: coordinator.endpoints.workers, context: context)
        _ = try #require(try await today.hello(), "today's worker was not welcomed")
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        guard case .workers(let list) = try await client.request(.workers(ListWorkers())) else {
            Issue.record("no WORKER_LIST")
            return
        }
        let versions = Dictionary(list.workers.map { ($0.name ?? "?", $0.protocolVersion) }, uniquingKeysWith: { a, _ in a })
        #expect(versions == ["release-2": 2, "scripted": 3])
        await today.close()
        await old.wire.close(linger: .zero)
        await client.endpoint.close(linger: .zero)
        await context.terminate()
        try await coordinator.stop()
    }

    @Test("a newer worker's HELLO is answered in its version with the versions the coordinator speaks; an older one's with protocol-error it can read; both logged")
    func otherVersionsRefused() async throws {
        let log = CapturedLog()
        let coordinator = try await CoordinatorUnderTest.start { configuration in
            configuration.logger = Logger(level: .info, sink: log)
        }
        let context = try WireContext()
        let newer = try await RawWorker.connect(to: coordinator.endpoints.workers, context: context)
        try await newer.hello(version: 4, name: "release-4")
        let answer = try #require(await newer.next("DISCONNECT"), "no answer to a version-4 HELLO")
        let decoded = try WireCodec().decode([answer], as: CoordinatorMessage.self).get()
        #expect(decoded.version == 4, "not in the worker's own version")
        guard case .disconnect(let disconnect) = decoded.message else {
            Issue.record("not a DISCONNECT")
            return
        }
        #expect(disconnect.reason == .unsupportedVersion)
        #expect(disconnect.versions == ProtocolVersions(oldest: 2, newest: 3))
        #expect(disconnect.detail.contains("upgrade the coordinator first"))
        // Said again at once (as a worker that re-HELLOs on DISCONNECT does): not answered again yet.
        try await newer.hello(version: 4, name: "release-4")
        #expect(await newer.next("DISCONNECT", within: .seconds(3)) == nil, "answered twice within 10 s")

        let older = try await RawWorker.connect(to: coordinator.endpoints.workers, context: context)
        try await older.hello(version: 1, name: "release-1")
        let refusal = try #require(await older.next("DISCONNECT"), "no answer to a version-1 HELLO")
        #expect(RawWorker.field("version", of: refusal) as? Int == 1)
        let body = RawWorker.body(of: refusal)
        #expect(body["reason"] as? String == "protocol-error")
        #expect((body["detail"] as? String)?.contains("upgrade the worker") == true)

        #expect(await eventually { log.text.contains("worker refused: it speaks a protocol version") })
        #expect(log.text.contains("worker_version=4") && log.text.contains("worker_version=1"))
        // Neither registered.
        #expect(try await coordinator.repository.workers().isEmpty)
        await newer.wire.close(linger: .zero)
        await older.wire.close(linger: .zero)
        await context.terminate()
        try await coordinator.stop()
    }

    @Test("a worker refused for its version waits — no HELLO for 15 s, nothing failed — says so each time, and keeps trying",
          arguments: [(ProtocolVersions(oldest: 1, newest: 2), 2, "upgrade the coordinator first"),
                      (ProtocolVersions(oldest: 4, newest: 5), 5, "upgrade this worker")])
    func workerWaits(coordinatorVersions: ProtocolVersions, envelope: Int, hint: String) async throws {
        let log = CapturedLog()
        let coordinator = try await ScriptedCoordinator.bind()
        let worker = try RunningWorker.start(coordinator: coordinator.address, logger: Logger(level: .info, sink: log))
        let refusal = CoordinatorMessage.disconnect(Disconnect(
            reason: .unsupportedVersion, detail: "the coordinator speaks \(coordinatorVersions)", versions: coordinatorVersions))
        // Every HELLO is refused, as a coordinator that does not speak the worker's version does.
        let hellos = LockedBox<[ContinuousClock.Instant]>([])
        _ = await withDeadline(.seconds(35)) { () -> Bool? in
            while let (received, peer) = await coordinator.endpoint.receiveMessage() {
                guard case .hello(let hello) = received.message else { continue }
                #expect(hello.protocolVersions == ProtocolVersions(oldest: 3, newest: 3))
                hellos.value.append(.now)
                try? await coordinator.endpoint.send(refusal, to: peer, version: envelope)
            }
            return nil
        }
        let arrivals = hellos.value
        // Not the usual HELLO every 100 ms (some were on their way before the first refusal arrived):
        // after a refusal, the next one 15 s later — so two or three rounds in 35 s — and still
        // trying, so the worker neither stopped nor gave up.
        let gaps = zip(arrivals.dropFirst(), arrivals).map { $0 - $1 }
        #expect(arrivals.count >= 2 && arrivals.count <= 60, "\(arrivals.count) HELLOs in 35 s (every 100 ms would be 350)")
        #expect(gaps.contains { $0 >= .seconds(14) }, "no wait between HELLOs: \(gaps)")
        let said = log.text.components(separatedBy: "waiting: the coordinator does not speak this worker's protocol version")
        #expect(said.count >= 3, "not said on each refusal:\n\(log.text)")
        #expect(log.text.contains("worker_version=3") && log.text.contains("coordinator_versions=\(coordinatorVersions)"))
        #expect(log.text.contains(hint))
        #expect(!log.text.contains("registered with the coordinator"))
        await worker.stop()
        await coordinator.close()
    }
}
