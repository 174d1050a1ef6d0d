import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing
import SpliceCoordinator

@Suite("Coordinator: cancel, poison segments, garbage", .timeLimit(.minutes(5)))
struct CoordinatorFailureTests {
    @Test("cancelling a job sends CANCEL to the workers running it and removes its partial files")
    func cancel() async throws {
        let source = try await TestMedia.clip(seconds: 3)
        let coordinator = try await CoordinatorUnderTest.start()
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let worker = try await ScriptedWorker.connect(to: coordinator.endpoints.workers, context: context)
        let job = try await client.submit(source, to: Fixtures.temporaryDirectory("out").appendingPathComponent("c.mp4").path)
        #expect(try await worker.hello(slots: 2) != nil)

        var running: [Assign] = []
        for _ in 0..<2 {
            let assign = try #require(await worker.assignment())
            let partial = URL(fileURLWithPath: assign.outputPath)
            try FileManager.default.createDirectory(at: partial.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("half a segment".utf8).write(to: partial)
            try await worker.send(.accept(Accept(attempt: assign.attempt)))
            #expect(await worker.ack(of: assign.attempt, .accept)?.outcome == .accepted)
            running.append(assign)
        }
        let jobDirectory = coordinator.spool.appendingPathComponent("jobs/\(job)").path
        #expect(FileManager.default.fileExists(atPath: jobDirectory))

        let cancelled = try await client.request(.cancel(CancelJob(job: job)))
        #expect(cancelled == .cancelled(JobCancelled(job: job, state: .cancelled)))
        for assign in running {
            #expect(await worker.cancel(of: assign.attempt)?.reason == .jobCancelled)
        }
        #expect(await eventually { !FileManager.default.fileExists(atPath: jobDirectory) }, "partial files removed")

        // What the workers still send about the job is stale; nothing new is assigned.
        let late = Complete(attempt: running[0].attempt, outputPath: running[0].outputPath,
                            checksum: .filled(0), sizeBytes: 14, encodeMilliseconds: 1)
        #expect(try await worker.complete(late) == .stale)
        #expect(await worker.assignment(within: .milliseconds(700)) == nil)
        let status = try await client.status(job)
        #expect(status.state == .cancelled && status.finishedAtMilliseconds != nil)
        #expect(try await client.request(.cancel(CancelJob(job: job)))
                == .cancelled(JobCancelled(job: job, state: .cancelled)), "cancelling again changes nothing")
        guard case .error(let error) = try await client.request(.cancel(CancelJob(job: JobID(UUID())))) else {
            Issue.record("cancelling an unknown job did not fail")
            return
        }
        #expect(error.code == .notFound)

        await worker.close()
        await client.close()
        try await coordinator.stop()
    }

    @Test("a poison segment fails the job after max attempts with the decoder's error, retried only after backoff")
    func poison() async throws {
        // Damage inside segment 1 only: its neighbours never read those packets.
        // Four 1 s segments (the planner fills two lanes evenly), the damage inside the second.
        let source = try await TestMedia.poisoned(seconds: 4, damagedFrom: 1.2, to: 1.8)
        let backoff = Backoff(base: .milliseconds(400), cap: .seconds(4))
        let coordinator = try await CoordinatorUnderTest.start { configuration in
            configuration.maxAttempts = 3
            configuration.segmentRetryBackoff = backoff
        }
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let worker = try await ScriptedWorker.connect(to: coordinator.endpoints.workers, context: context)
        let job = try await client.submit(source, to: Fixtures.temporaryDirectory("out").appendingPathComponent("p.mp4").path)
        #expect(try await worker.hello() != nil)

        // A worker that reports every encode failure as retryable: the coordinator must still stop.
        var decoderError = ""
        while try await client.status(job).state != .failed, let assign = await worker.assignment() {
            do {
                #expect(try await worker.complete(try await worker.acceptAndEncode(assign)) == .accepted)
            } catch {
                decoderError = "\(error)"
                let fail = Fail(attempt: assign.attempt, code: Fail.Code(rawValue: "decode-failed"), reason: decoderError, retryable: true)
                try await worker.send(.fail(fail))
                #expect(await worker.ack(of: assign.attempt, .fail)?.outcome == .accepted)
            }
        }
        let status = try await client.status(job)
        #expect(status.state == .failed)
        let message = status.error ?? ""
        #expect(message.contains("segment 1 dead (gave up after 3 attempt(s)"), "\(message)")
        #expect(!decoderError.isEmpty && message.contains(decoderError), "the job says why: \(message)")

        // Exactly three attempts at segment 1, each retry only after its backoff.
        let jobID = job
        let events = try await coordinator.repository.events(ofJob: jobID)
        let segments = try await coordinator.repository.segments(ofJob: jobID)
        let segmentOne = try #require(segments.first { $0.plan.index == 1 })
        let leases = events.filter { $0.kind == "segment_leased" && $0.segmentID == segmentOne.id }
        let failures = events.filter { $0.kind == "segment_failed" && $0.segmentID == segmentOne.id }
        #expect(leases.count == 3 && failures.count == 3)
        for (index, failure) in failures.dropLast().enumerated() {
            let waited = leases[index + 1].at.timeIntervalSince(failure.at)
            let nominal = backoff.nominalDelay(attempt: index + 1) / .seconds(1)
            #expect(waited >= nominal * 0.8 - 0.01, "retry \(index + 1) came after \(waited) s, before its backoff")
        }

        await worker.close()
        await client.close()
        try await coordinator.stop()
    }

    @Test("a coordinator that cannot bind its port stops the embedded PostgreSQL it started")
    func bindFailureStopsEmbeddedPostgres() async throws {
        let occupant = try await CoordinatorUnderTest.start()
        let directory = "/tmp/splice-test-pg-\(getpid())-bind-failure"
        try? FileManager.default.removeItem(atPath: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = CoordinatorConfiguration(
            database: .embedded(directory: directory + "/postgres"), spool: Fixtures.temporaryDirectory("spool"),
            workersEndpoint: occupant.endpoints.workers, apiEndpoint: "tcp://127.0.0.1:*", logger: testLogger)
        configuration.databaseConnections = 2
        let coordinator = Coordinator(configuration: configuration)
        await #expect(throws: (any Error).self) { try await coordinator.run() }
        // The server it started is gone: no postmaster.pid, nothing answering on its socket.
        #expect(!FileManager.default.fileExists(atPath: directory + "/postgres/data/postmaster.pid"))
        #expect(FileManager.default.fileExists(atPath: directory + "/postgres/data/PG_VERSION"), "it did start one")
        try await occupant.stop()
    }

    @Test("garbage on both endpoints is counted and dropped while the coordinator keeps working")
    func garbage() async throws {
        let coordinator = try await CoordinatorUnderTest.start()
        let context = try WireContext()
        // The same kinds of junk for each endpoint, in its own protocol's terms.
        func junk(_ name: String, version: Int, replyType: String, invalidBody: String, outOfRange: String)
            -> [(frames: [Data], reason: WireRejection.Reason)]
        {
            let text = { (text: String) in [Data(text.utf8)] }
            return [
                (text("not json at all"), .garbled),
                (text("{\"protocol\":\"\(name)\",\"version\":\(version),\"ty"), .garbled),
                ([Data()], .garbled),
                (text(#"{"protocol":"http","version":1,"type":"GET","body":{}}"#), .wrongProtocol),
                (text("{\"protocol\":\"\(name)\",\"version\":99,\"type\":\"HELLO\",\"body\":{}}"), .unsupportedVersion),
                (text("{\"protocol\":\"\(name)\",\"version\":\(version),\"type\":\"\(replyType)\",\"body\":{}}"), .unknownType),
                (text("{\"protocol\":\"\(name)\",\"version\":\(version),\(invalidBody)}"), .invalidBody),
                (text("{\"protocol\":\"\(name)\",\"version\":\(version),\(outOfRange)}"), .outOfRange),
                ([Data("{}".utf8), Data("{}".utf8)], .tooManyFrames),
            ]
        }
        // A HELLO offering 2^63−1 slots used to reach Postgres ("integer out of range").
        let workerJunk = junk(
            "splice-worker", version: WorkerProtocol.version, replyType: "ASSIGN", invalidBody: #""type":"HELLO","body":{"slots":"many"}"#,
            outOfRange: #""type":"HELLO","body":{"workerName":"w","slots":9223372036854775807,"encoders":[],"#
                + #""running":[],"finished":[],"failed":[],"software":""}"#)
        let apiJunk = junk(
            "splice-api", version: ClientAPI.version, replyType: "SUBMITTED", invalidBody: #""type":"STATUS","body":{"job":5}"#,
            outOfRange: #""type":"SUBMIT","body":{"input":"/a","output":"/b","export":{},"priority":4611686018427387904}"#)
        let raw = try await WireEndpoint.connect(
            coordinator.endpoints.workers, type: .dealer, context: context, options: .dealer(immediate: false))
        let rawAPI = try await WireEndpoint.connect(
            coordinator.endpoints.api, type: .dealer, context: context, options: .dealer(immediate: false))
        for item in workerJunk { try await raw.send(item.frames) }
        for item in apiJunk { try await rawAPI.send(item.frames) }
        #expect(await eventually {
            guard let counters = coordinator.coordinator.counters else { return false }
            return counters.workers.totalDropped >= workerJunk.count && counters.api.totalDropped >= apiJunk.count
        })
        let counters = try #require(coordinator.coordinator.counters)
        for reason in WireRejection.Reason.allCases {
            #expect(counters.workers.dropped(reason) == workerJunk.filter { $0.reason == reason }.count, "workers \(reason)")
            #expect(counters.api.dropped(reason) == apiJunk.filter { $0.reason == reason }.count, "api \(reason)")
        }

        // Still serving both sides.
        let worker = try await ScriptedWorker.connect(to: coordinator.endpoints.workers, context: context)
        #expect(try await worker.hello() != nil)
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        guard case .jobs(let list) = try await client.request(.list(ListJobs())) else {
            Issue.record("LIST did not answer JOB_LIST")
            return
        }
        #expect(list.jobs.isEmpty)

        await raw.close(linger: .zero)
        await rawAPI.close(linger: .zero)
        await worker.close()
        await client.close()
        try await coordinator.stop()
    }
}

extension TestMedia {
    /// A clip whose video packets presented in `[from, to)` seconds are overwritten with zeros:
    /// it probes and plans, but the segment covering that range cannot be decoded.
    static func poisoned(seconds: Int, damagedFrom from: Double, to: Double) async throws -> String {
        let clean = try await clip(seconds: seconds)
        return try await offPool { try damage(clean, from: from, to: to) }
    }

    private static func damage(_ clean: String, from: Double, to: Double) throws -> String {
        let packets = try ExternalTool.checkBlocking("ffprobe", [
            "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time,size,pos", "-of", "csv=p=0", clean,
        ]).text
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: clean)))
        for line in packets.split(separator: "\n") {
            let fields = line.split(separator: ",")
            guard fields.count == 3, let time = Double(fields[0]), let size = Int(fields[1]), let position = Int(fields[2]),
                  time >= from, time < to else { continue }
            for offset in position..<(position + size) { bytes[offset] = 0 }
        }
        let damaged = Fixtures.temporaryDirectory("poison").appendingPathComponent("poisoned.mp4")
        try Data(bytes).write(to: damaged)
        return damaged.path
    }
}
