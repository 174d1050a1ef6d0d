import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceTestSupport
import SpliceWire
import Testing

/// Workers that join with a token (docs/deploy.md, Join tokens): a real coordinator with CURVE on
/// and real `splice worker` processes that hold no enrolled key — only the coordinator's public
/// key and a join token.
@Suite("Join tokens: workers enroll themselves", .timeLimit(.minutes(5)))
struct JoinTokenClusterTests {
    /// A `splice worker` child process and its log.
    final class WorkerChild: Sendable {
        let process: Process
        let log: URL
        let exited: AsyncStream<Int32>

        init(coordinator: String, serverKey: String, spool: URL, token: String, name: String) throws {
            log = Fixtures.temporaryDirectory("join-log").appendingPathComponent("\(name).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let process = Process()
            process.executableURL = SpliceBinary.url
            process.arguments = ["worker", "--coordinator", coordinator, "--spool", spool.path, "--slots", "1",
                                 "--name", name, "--server-key", serverKey, "--metrics-endpoint", "127.0.0.1:0"]
            process.environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
                                   "SPLICE_JOIN_TOKEN": token]
            process.standardError = try FileHandle(forWritingTo: log)
            process.standardOutput = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
            process.terminationHandler = { continuation.yield($0.terminationStatus) }
            exited = stream
            self.process = process
            try process.run()
        }

        var stderr: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

        func status(within timeout: Duration) async -> Int32? {
            await withDeadline(timeout) { await self.exited.first { _ in true } } ?? nil
        }

        func stop() async {
            guard process.isRunning else { return }
            kill(process.processIdentifier, SIGTERM)
            if await status(within: .seconds(20)) == nil { kill(process.processIdentifier, SIGKILL) }
        }
    }

    @Test("a worker joins with a token and completes a job; used-up, wrong, expired and revoked tokens are refused")
    func joinAndRefusals() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: SpliceBinary.url.path),
                     "\(SpliceBinary.url.path) is missing: build it with `swift build --build-tests`")
        let server = try CurveKeyPair.generate()
        let admin = try CurveKeyPair.generate()
        let keys = Fixtures.temporaryDirectory("join-keys")
        let serverKey = keys.appendingPathComponent("coordinator.pub").path
        try server.save(secretKeyPath: keys.appendingPathComponent("coordinator.key").path, publicKeyPath: serverKey)
        let spool = Fixtures.temporaryDirectory("join-spool")
        let coordinator = try await CoordinatorUnderTest.start(spool: spool) { configuration in
            configuration.keys = server
            configuration.adminKeys = [admin.publicKey]
        }
        let client = try await TestClient.connect(
            to: coordinator.endpoints.api, curve: .client(keys: admin, serverKey: server.publicKey))
        func token(_ name: String, uses: Int = 1, ttl: Int64 = 3600) async throws -> String {
            let request = CreateJoinToken(name: name, uses: uses, ttlSeconds: ttl)
            let reply = try await client.request(.createJoinToken(request))
            guard case .joinToken(let created) = reply, let token = created.token else {
                throw TestFailure("JOIN_TOKEN_CREATE answered \(reply)")
            }
            return token
        }
        func workers() async throws -> [WorkerInfo] {
            guard case .workers(let list) = try await client.request(.workers(ListWorkers())) else { return [] }
            return list.workers
        }
        let single = try await token("single")

        let member = try WorkerChild(coordinator: coordinator.endpoints.workers, serverKey: serverKey, spool: spool,
                                     token: single, name: "joiner")
        defer { if member.process.isRunning { kill(member.process.processIdentifier, SIGKILL) } }
        #expect(await eventually(within: .seconds(60)) { member.stderr.contains("joined the cluster") },
                "the worker never joined: \(member.stderr)")
        let clip = try await TestMedia.clip(seconds: 3)
        let output = Fixtures.temporaryDirectory("join-out").appendingPathComponent("out.mp4").path
        let job = try await client.submit(clip, to: output)
        let done = try await client.wait(for: job, toBe: [.succeeded, .failed], within: .seconds(120))
        #expect(done.state == .succeeded, "\(done)")
        #expect(try await TestMedia.frames(output) == 90)
        let joined = try await workers()
        #expect(joined.count == 1 && joined.first?.name == "joiner" && joined.first?.enrolled == true)
        #expect(try await coordinator.repository.joinTokens().first { $0.name == "single" }?.usesLeft == 0)

        // Refusals: each worker exits 1 with the reason and was never enrolled nor given work.
        let expiring = try await token("expiring", uses: 5, ttl: 1)
        let revoked = try await token("revoked", uses: 5)
        guard case .joinToken = try await client.request(.revokeJoinToken(RevokeJoinToken(name: "revoked"))) else {
            throw TestFailure("JOIN_TOKEN_REVOKE failed")
        }
        try await Task.sleep(for: .seconds(2))  // `expiring` has expired
        let cases = [("used-up", single), ("unknown-token", "splj_not-a-token-anyone-made"), ("expired", expiring),
                     ("revoked", revoked)]
        for (reason, presented) in cases {
            let refused = try WorkerChild(coordinator: coordinator.endpoints.workers, serverKey: serverKey,
                                          spool: spool, token: presented, name: "refused-\(reason)")
            let status = await refused.status(within: .seconds(60))
            if status == nil { await refused.stop() }
            #expect(status == 1, "\(reason): \(refused.stderr)")
            #expect(refused.stderr.contains("refused this worker's join token (\(reason))"), "\(refused.stderr)")
        }
        #expect(try await workers().map(\.name) == ["joiner"], "no refused worker was enrolled")
        let refusals = try await coordinator.repository.client.query(
            "SELECT detail FROM job_events WHERE kind = 'worker_join_refused' ORDER BY id"
        ).map { try $0.decode(String.self, column: "detail") }
        #expect(refusals.count == 4 && refusals[0].hasSuffix("reason=used-up"), "\(refusals)")

        await member.stop()
        await client.close()
        try await coordinator.stop()
    }

    @Test("probation: an unknown key may only present a token; once it joins, the same session is a worker")
    func probation() async throws {
        let server = try CurveKeyPair.generate()
        let admin = try CurveKeyPair.generate()
        let stranger = try CurveKeyPair.generate()
        let coordinator = try await CoordinatorUnderTest.start { configuration in
            configuration.keys = server
            configuration.adminKeys = [admin.publicKey]
        }
        let context = try WireContext()
        let client = try await TestClient.connect(
            to: coordinator.endpoints.api, curve: .client(keys: admin, serverKey: server.publicKey), context: context)
        let create = CreateJoinToken(name: "probe", uses: 1, ttlSeconds: 600)
        guard case .joinToken(let created) = try await client.request(.createJoinToken(create)),
              let token = created.token else {
            throw TestFailure("JOIN_TOKEN_CREATE failed")
        }
        // Heartbeats off: nothing but what the test sends.
        let worker = try await ScriptedWorker.connect(
            to: coordinator.endpoints.workers, context: context,
            curve: .client(keys: stranger, serverKey: server.publicKey), heartbeats: false)
        func joined() async -> Joined? {
            await worker.next(within: .seconds(10)) { if case .joined(let joined) = $0 { joined } else { nil } }
        }
        // On probation HELLO goes nowhere: no WELCOME, no session, no work.
        try await worker.send(.hello(Hello(workerName: "early", slots: 4, encoders: ["libx264"])))
        #expect(await worker.next(within: .seconds(1)) { $0 } == nil, "a key on probation was answered")
        #expect(await coordinator.coordinator.sessions().isEmpty)
        // A JOIN over the probation limit (4 KiB) is dropped too (the padding alone would be ignored)…
        let padded = #"{"protocol":"splice-worker","version":\#(WorkerProtocol.version),"type":"JOIN","body":"#
            + #"{"token":"splj_wrong","workerName":"padded","padding":""# + String(repeating: "x", count: 5000)
            + #""}}"#
        try await worker.endpoint.wire.send([Data(padded.utf8)])
        #expect(await worker.next(within: .seconds(1)) { $0 } == nil, "an oversized JOIN on probation was answered")
        // …and a wrong token is answered with the reason.
        try await worker.send(.join(Join(token: "splj_wrong", workerName: "stranger")))
        let wrong = await joined()
        #expect(wrong?.outcome == .refused && wrong?.reason == "unknown-token", "\(String(describing: wrong))")
        #expect(try await coordinator.repository.worker(publicKey: stranger.publicKey.z85) == nil)

        try await worker.send(.join(Join(token: token, workerName: "stranger")))
        #expect(await joined()?.outcome == .joined)
        #expect(try await worker.hello(slots: 2) != nil, "the joined key was not welcomed on the same session")
        #expect(await coordinator.coordinator.sessions().map(\.identity) == [.key(stranger.publicKey)])
        // Joining again spends nothing.
        try await worker.send(.join(Join(token: token, workerName: "stranger")))
        #expect(await joined()?.outcome == .alreadyEnrolled)
        #expect(try await coordinator.repository.joinTokens().first?.usesLeft == 0)

        // WORKERS_PRUNE: a key enrolled two days ago and never seen since goes; the connected one stays.
        let gone = try CurveKeyPair.generate().publicKey
        _ = try await client.request(.enroll(EnrollWorker(publicKey: gone, name: "gone")))
        try await coordinator.repository.client.query(
            "UPDATE workers SET enrolled_at = now() - interval '2 days' WHERE public_key = \(gone.z85)")
        guard case .workersPruned(let dry) = try await client.request(
            .pruneWorkers(PruneWorkers(notSeenSeconds: 86_400, dryRun: true))) else {
            throw TestFailure("WORKERS_PRUNE did not answer WORKERS_PRUNED")
        }
        #expect(dry.workers.map(\.name) == ["gone"] && dry.dryRun)
        #expect(try await coordinator.repository.worker(publicKey: gone.z85)?.state != .revoked)
        guard case .workersPruned(let pruned) = try await client.request(
            .pruneWorkers(PruneWorkers(notSeenSeconds: 86_400))) else {
            throw TestFailure("WORKERS_PRUNE did not answer WORKERS_PRUNED")
        }
        #expect(pruned.workers.map(\.publicKey) == [gone.z85])
        #expect(try await coordinator.repository.worker(publicKey: gone.z85)?.state == .revoked)
        #expect(await coordinator.coordinator.sessions().map(\.identity) == [.key(stranger.publicKey)])

        await worker.close()
        await client.close()
        try await coordinator.stop()
    }
}
