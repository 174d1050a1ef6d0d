import Foundation
import SpliceConcurrency
import SpliceHTTP
import SpliceMedia
import SpliceTestSupport
import SpliceWire
import Testing
import SpliceWorker

/// A real worker daemon against a scripted coordinator over ZeroMQ on loopback, encoding real
/// segments of a generated clip.
@Suite("Worker daemon against a scripted coordinator", .timeLimit(.minutes(2)))
struct WorkerDaemonTests {
    @Test("HELLO, WELCOME, ASSIGN → ACCEPT, PROGRESS, COMPLETE whose checksum is the file's SHA-256; resent until ACKed, then not")
    func segmentLifecycle() async throws {
        try await session(slots: 2) { coordinator, worker, hello in
            #expect(hello.workerName == "test-worker" && hello.slots == 2)
            #expect(hello.encoders.contains("libx264"))
            #expect(hello.running.isEmpty && hello.finished.isEmpty && hello.failed.isEmpty)

            // PROGRESS goes unacknowledged here: a long lease keeps a slow machine's encode alive.
            let assign = try WorkerMedia.assign(try await WorkerMedia.plan(preset: "veryslow"), spool: worker.spool,
                                                token: "life", lease: 120_000, progress: 100)
            try await coordinator.send(.assign(assign))
            let accept = await coordinator.next { $0.asAccept }
            #expect(accept == Accept(attempt: assign.attempt))
            try await coordinator.send(.ack(Ack(attempt: assign.attempt, acknowledges: .accept, outcome: .accepted)))
            let progress = await coordinator.next { $0.asProgress }
            #expect(progress?.attempt == assign.attempt)
            #expect(progress.map { (0...1).contains($0.fraction) } == true)

            let complete = try #require(await coordinator.next { $0.asComplete }, "no COMPLETE")
            #expect(complete.attempt == assign.attempt && complete.outputPath == assign.outputPath)
            #expect(complete.checksum.description == "sha256:" + (try await sha256(assign.outputPath)))
            let size = try FileManager.default.attributesOfItem(atPath: assign.outputPath)[.size] as? Int64
            #expect(complete.sizeBytes == size && complete.sizeBytes > 0)
            #expect(complete.encodeMilliseconds > 0)
            // Not acknowledged: resent (every progress interval) with the same content.
            #expect(await coordinator.next(within: .seconds(10)) { $0.asComplete } == complete)
            try await coordinator.send(.ack(Ack(attempt: assign.attempt, acknowledges: .complete, outcome: .accepted)))
            // Messages already in flight may still arrive; after that, no COMPLETE again.
            _ = await coordinator.collect(for: .milliseconds(200))
            let later = await coordinator.collect(for: .milliseconds(600))
            #expect(later.compactMap(\.asComplete).isEmpty, "COMPLETE resent after its ACK")
            #expect(FileManager.default.fileExists(atPath: assign.outputPath), "an accepted output is kept")

            await worker.daemon.shutdown()
            #expect(await coordinator.next { $0.asDisconnect } == Disconnect(reason: .shutdown, detail: "drained"))
            #expect(await worker.finished())
        }
    }

    @Test("lease extensions never acknowledged: the encode is aborted before the deadline and its output deleted")
    func leaseRunsOut() async throws {
        try await session { coordinator, worker, _ in
            // The coordinator is alive (HEARTBEATs) but acknowledges nothing, as if its database were down.
            // Long enough that the safety margin (lease/4) also covers delivery delays on a loaded machine.
            let lease = 4_000
            let assign = try WorkerMedia.assign(try await WorkerMedia.slowPlan(), spool: worker.spool,
                                                token: "expiring", lease: lease, progress: 100)
            let sent = ContinuousClock.now
            try await coordinator.send(.assign(assign))
            #expect(await coordinator.next { $0.asAccept } != nil)
            // Extensions stop once the worker gives up, which must be before the deadline.
            let window = await coordinator.collectArrivals(for: .milliseconds(lease + 800))
            let extensions = window.filter { $0.message.asProgress != nil }.map(\.at)
            #expect(!extensions.isEmpty, "no PROGRESS at all")
            #expect(window.compactMap(\.message.asComplete).isEmpty && window.compactMap(\.message.asFail).isEmpty)
            #expect(extensions.allSatisfy { $0 - sent < .milliseconds(lease) }, "still extending at the deadline")
            #expect(await eventually(within: .seconds(15)) { files(under: worker.spool).isEmpty }, "left \(files(under: worker.spool))")
            // Asked again, the worker holds nothing for that attempt.
            try await coordinator.send(.disconnect(Disconnect(reason: .reregister)))
            let hello = await coordinator.next { $0.asHello }
            #expect(hello?.running == [] && hello?.finished == [] && hello?.failed == [])
        }
    }

    @Test("CANCEL stops the encode and deletes the partial file")
    func cancel() async throws {
        try await session { coordinator, worker, _ in
            let assign = try WorkerMedia.assign(try await WorkerMedia.slowPlan(), spool: worker.spool,
                                                token: "cancelled")
            try await coordinator.send(.assign(assign))
            #expect(await coordinator.next { $0.asAccept } != nil)
            // Let it write something first.
            let jobDirectory = URL(fileURLWithPath: assign.outputPath).deletingLastPathComponent()
            #expect(await eventually { !files(under: jobDirectory).isEmpty }, "the encode wrote nothing")
            try await coordinator.send(.cancel(Cancel(attempt: assign.attempt, reason: .jobCancelled)))
            #expect(await eventually(within: .seconds(15)) { files(under: jobDirectory).isEmpty }, "left \(files(under: jobDirectory))")
            try await coordinator.send(.disconnect(Disconnect(reason: .reregister)))
            let hello = await coordinator.next { $0.asHello }
            #expect(hello?.running == [] && hello?.finished == [] && hello?.failed == [])
            #expect(await coordinator.collect(for: .milliseconds(300)).compactMap(\.asComplete).isEmpty)
        }
    }

    @Test("the coordinator goes away and comes back on the same port: the worker's HELLO lists its finished result")
    func coordinatorRestart() async throws {
        var coordinator = try await ScriptedCoordinator.bind()
        let address = coordinator.address
        let worker = try RunningWorker.start(coordinator: address)
        try await coordinator.welcome(heartbeat: .milliseconds(500), liveness: 30)
        // Alive until it is killed, however long the encode takes on a loaded machine.
        coordinator.startHeartbeats(every: .milliseconds(100))
        let assign = try WorkerMedia.assign(try await WorkerMedia.plan(preset: "ultrafast"), spool: worker.spool,
                                            token: "survivor")
        try await coordinator.send(.assign(assign))
        let complete = try #require(await coordinator.next(within: .seconds(60)) { $0.asComplete }, "no COMPLETE")
        await coordinator.close()  // killed between COMPLETE and its ACK

        try await Task.sleep(for: .milliseconds(300))
        coordinator = try await ScriptedCoordinator.bind(address)
        // A restarted coordinator knows no session: anything but HELLO gets DISCONNECT reregister.
        let hello = await coordinator.next(answerOthers: .disconnect(Disconnect(reason: .reregister))) { $0.asHello }
        #expect(hello?.finished == [complete])
        #expect(hello?.running == [])
        try await coordinator.send(.ack(Ack(attempt: assign.attempt, acknowledges: .complete, outcome: .duplicate)))
        try await coordinator.send(.welcome(Welcome(session: "second", heartbeatIntervalMilliseconds: 100,
                                                    heartbeatLiveness: 30)))
        coordinator.startHeartbeats(every: .milliseconds(100))
        _ = await coordinator.collect(for: .milliseconds(200))
        let later = await coordinator.collect(for: .milliseconds(500))
        #expect(later.compactMap(\.asComplete).isEmpty && later.compactMap(\.asHello).isEmpty)
        #expect(FileManager.default.fileExists(atPath: assign.outputPath))
        await worker.stop()
        await coordinator.close()
    }

    @Test("DISCONNECT reregister: a new HELLO at once")
    func reregister() async throws {
        try await session(heartbeat: .seconds(30)) { coordinator, worker, _ in
            try await coordinator.send(.disconnect(Disconnect(reason: .reregister, detail: "unknown session")))
            let hello = await coordinator.next(within: .seconds(10)) { $0.asHello }
            #expect(hello?.workerName == "test-worker")
        }
    }

    @Test("a poison segment (a range with no decodable frame) fails with retryable=false")
    func poisonSegment() async throws {
        try await session { coordinator, worker, _ in
            var plan = try await WorkerMedia.plan(preset: "ultrafast")
            plan.segments[0].videoStart = MediaTime(seconds: 100)
            plan.segments[0].videoEnd = MediaTime(seconds: 101)
            let assign = try WorkerMedia.assign(plan, spool: worker.spool, token: "poison")
            try await coordinator.send(.assign(assign))
            let fail = try #require(await coordinator.next { $0.asReportedFail }, "no FAIL")
            #expect(fail.attempt == assign.attempt)
            #expect(fail.code == .undecodableInput)
            #expect(!fail.retryable)
            #expect(!fail.reason.isEmpty)
            #expect(files(under: worker.spool).isEmpty)
            try await coordinator.send(.ack(Ack(attempt: assign.attempt, acknowledges: .fail, outcome: .accepted)))
        }
    }

    @Test("garbage from the coordinator side is counted on /metrics and dropped; the session goes on")
    func garbage() async throws {
        try await session(configure: { $0.metricsEndpoint = HTTPAddress(parsing: "127.0.0.1:0") }) { coordinator, worker, hello in
            let codec = WireCodec()
            let json = { (text: String) in [Data(text.utf8)] }
            let garbage: [([Data], WireRejection.Reason)] = [
                ([Data([0xDE, 0xAD, 0xBE, 0xEF])], .garbled),
                (json(#"{"protocol": "splice-worker", "version": 2, "type": "ASSI"#), .garbled),
                (json(#"{"protocol": "splice-api", "version": 1, "type": "STATUS", "body": {}}"#), .wrongProtocol),
                (json(#"{"protocol": "splice-worker", "version": 7, "type": "ASSIGN", "body": {}}"#), .unsupportedVersion),
                (try codec.encode(WorkerMessage.hello(Hello(workerName: "me", slots: 1, encoders: []))), .unknownType),
                (json(#"{"protocol": "splice-worker", "version": 2, "type": "ASSIGN", "body": {"attempt": 3}}"#), .invalidBody),
                ([Data("a".utf8), Data("b".utf8)], .tooManyFrames),
                // Once stopped the worker with "Overflow in *" (interval × liveness).
                (try codec.encode(CoordinatorMessage.welcome(Welcome(
                    session: "s", heartbeatIntervalMilliseconds: 1 << 62, heartbeatLiveness: 1 << 62))), .outOfRange),
            ]
            for (frames, _) in garbage { try await coordinator.sendRaw(frames) }
            // Still working: a real ASSIGN is accepted and completed.
            let assign = try WorkerMedia.assign(try await WorkerMedia.plan(preset: "ultrafast"), spool: worker.spool,
                                                token: "after-garbage")
            try await coordinator.send(.assign(assign))
            #expect(await coordinator.next { $0.asComplete }?.attempt == assign.attempt)
            // What an operator sees: the worker's /metrics counts each drop under its reason.
            let address = try #require(hello.metricsEndpoint, "the HELLO names no operations endpoint")
            let scraped = try #require(await HTTPFetch.get(address, "/metrics"), "no answer from \(address)")
            let metrics = MetricsText(scraped.body)
            for (reason, count) in Dictionary(garbage.map { ($0.1, 1) }, uniquingKeysWith: +) {
                #expect(metrics.value("splice_messages_dropped_total", ["endpoint": "coordinator", "reason": reason.rawValue])
                    == Double(count), "\(reason)")
            }
            #expect((metrics.value("splice_messages_received_total", ["endpoint": "coordinator"]) ?? 0)
                >= Double(garbage.count + 2))
        }
    }

    @Test("DISCONNECT revoked stops the worker with an error that says to make a new key, not to enroll this one")
    func revoked() async throws {
        try await session { coordinator, worker, _ in
            try await coordinator.send(.disconnect(Disconnect(reason: .revoked, detail: "key revoked")))
            let outcome = await withDeadline(.seconds(20)) { () -> Result<Void, any Error>? in
                do {
                    try await worker.task.value
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
            guard case .failure(let error as WorkerError)? = outcome else {
                Issue.record("run() did not stop with a WorkerError: \(String(describing: outcome))")
                return
            }
            #expect(error.code == .revoked)
            // A revoked key cannot be enrolled again: the advice must be a new key pair.
            #expect(error.message.contains("splice keys generate"))
            #expect(error.message.contains("cannot be enrolled again"))
        }
    }

    @Test("drain: after the drain timeout a running segment is handed back with FAIL drained, then run() returns")
    func drainHandsBack() async throws {
        try await session(drainTimeout: .milliseconds(300)) { coordinator, worker, _ in
            let assign = try WorkerMedia.assign(try await WorkerMedia.slowPlan(), spool: worker.spool,
                                                token: "handed-back")
            // Planned before the drain starts: on a loaded machine planning can outlast the drain
            // timeout plus the flush window, and the worker would be gone before the ASSIGN.
            let refused = try WorkerMedia.assign(try await WorkerMedia.plan(preset: "ultrafast"), spool: worker.spool,
                                                 token: "refused")
            try await coordinator.send(.assign(assign))
            #expect(await coordinator.next { $0.asAccept } != nil)
            await worker.daemon.shutdown()
            // No new work while draining.
            try await coordinator.send(.assign(refused))
            let fails = LockedBox<[Fail]>([])
            _ = await coordinator.next { message -> Bool? in
                guard let fail = message.asFail, !fails.value.contains(fail) else { return nil }
                fails.value.append(fail)
                return fails.value.count == 2 ? true : nil
            }
            #expect(Set(fails.value.map(\.attempt.leaseToken)) == [assign.attempt.leaseToken, refused.attempt.leaseToken])
            #expect(fails.value.allSatisfy { $0.code == .drained && $0.retryable })
            for fail in fails.value {
                try await coordinator.send(.ack(Ack(attempt: fail.attempt, acknowledges: .fail, outcome: .accepted)))
            }
            #expect(await coordinator.next { $0.asDisconnect }?.reason == .shutdown)
            #expect(await worker.finished())
            #expect(files(under: worker.spool).isEmpty)
        }
    }

    @Test("a spool that is missing or not a directory is refused before anything connects")
    func spoolRefused() throws {
        let missing = Fixtures.temporaryDirectory("gone").appendingPathComponent("not-there")
        let file = Fixtures.temporaryDirectory("file").appendingPathComponent("plain")
        _ = FileManager.default.createFile(atPath: file.path, contents: Data())
        for spool in [missing, file] {
            #expect(throws: WorkerError.self) {
                _ = try WorkerDaemon(configuration: WorkerConfiguration(spool: spool))
            }
            do {
                _ = try WorkerDaemon(configuration: WorkerConfiguration(spool: spool))
            } catch {
                #expect(error.code == .spoolUnusable && error.message.contains(spool.path))
            }
        }
    }

    @Test("over CURVE the coordinator sees the worker's key and its routing id follows the key")
    func curve() async throws {
        let context = try WireContext()
        let workerKeys = try CurveKeyPair.generate()
        let serverKeys = try CurveKeyPair.generate()
        let zap = try await ZAPHandler.start(context: context, authorizer: EnrolledKeys([workerKeys.publicKey]))
        let coordinator = try await ScriptedCoordinator.bind(context: context, curve: .server(keys: serverKeys))
        let worker = try RunningWorker.start(coordinator: coordinator.address) {
            $0.curve = (keys: workerKeys, serverKey: serverKeys.publicKey)
        }
        let hello = await withDeadline(.seconds(10)) { await coordinator.endpoint.receiveMessage() }
        #expect(hello?.1.publicKey == workerKeys.publicKey)
        #expect(hello?.1.routingID == RoutingID("w:" + workerKeys.publicKey.z85))
        await worker.stop()
        await coordinator.close(terminateContext: false)
        await zap.close()
        await context.terminate()
    }

    /// Binds a scripted coordinator, starts a worker against it, completes HELLO/WELCOME, runs
    /// `body`, and stops both whatever happens.
    func session(slots: Int = 1, drainTimeout: Duration = .seconds(30), heartbeat: Duration = .seconds(1),
                 configure: (inout WorkerConfiguration) -> Void = { _ in },
                 _ body: (ScriptedCoordinator, RunningWorker, Hello) async throws -> Void) async throws {
        let coordinator = try await ScriptedCoordinator.bind()
        let worker = try RunningWorker.start(coordinator: coordinator.address, slots: slots, drainTimeout: drainTimeout,
                                             configure: configure)
        do {
            let hello = try await coordinator.welcome(heartbeat: heartbeat)
            try await body(coordinator, worker, hello)
        } catch {
            await worker.stop()
            await coordinator.close()
            throw error
        }
        await worker.stop()
        await coordinator.close()
    }
}
