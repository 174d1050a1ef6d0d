import Foundation
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing

#if canImport(Glibc)
import Glibc
import SpliceCoordinator
#endif

@Suite("Coordinator: kill -9 and restart", .timeLimit(.minutes(5)))
struct CoordinatorRestartTests {
    @Test("kill -9 mid-job, start a new coordinator on the same database: the job completes, nothing lost or doubled")
    func killedMidJob() async throws {
        // Four 1 s segments (the planner fills two lanes evenly).
        let source = try await TestMedia.clip(seconds: 4)
        let database = try await TestPostgres.makeDatabase()
        let spool = Fixtures.temporaryDirectory("spool")
        let output = Fixtures.temporaryDirectory("out").appendingPathComponent("killed.mp4").path
        // Long leases: the attempt running across the restart must still be valid afterwards.
        let first = try await ChildCoordinator.start(database: database, spool: spool, extra: ["--lease-seconds", "30"])
        let context = try WireContext()
        let client = try await TestClient.connect(to: first.api, context: context)
        let worker = try await ScriptedWorker.connect(to: first.workers, context: context)

        let job = try await client.submit(source, to: output)
        #expect(try await worker.hello() != nil)
        let zero = try #require(await worker.assignment())
        #expect(try await worker.complete(try await worker.acceptAndEncode(zero)) == .accepted)
        let one = try #require(await worker.assignment())
        let finished = try await worker.acceptAndEncode(one)

        // The coordinator dies while the worker holds a finished, unreported segment.
        first.signal(SIGKILL)
        let killed = await first.exitStatus()
        #expect(killed?.signalled == true && killed?.status == SIGKILL)

        let second = try await ChildCoordinator.start(
            database: database, spool: spool, workers: first.workers, api: first.api, extra: ["--lease-seconds", "30"])
        // The worker reports to whoever listens now; the new coordinator does not know its session.
        try await worker.send(.complete(finished))
        #expect(await worker.disconnect(.reregister) != nil, "told to say HELLO again")
        #expect(try await worker.hello(finished: [finished]) != nil)
        #expect(await worker.ack(of: finished.attempt, .complete)?.outcome == .accepted,
                "the dead coordinator's lease was still valid and its result is committed now")
        var remaining: Set<Int> = [2, 3]
        while !remaining.isEmpty, let next = await worker.assignment() {
            #expect(remaining.remove(next.attempt.segment) != nil, "segment \(next.attempt.segment) again")
            #expect(try await worker.complete(try await worker.acceptAndEncode(next)) == .accepted)
        }
        #expect(remaining.isEmpty)

        let status = try await client.wait(for: job, toBe: [.succeeded, .failed])
        #expect(status.state == .succeeded, "\(status.error ?? "")")
        let (written, original) = (try await TestMedia.frames(output), try await TestMedia.frames(source))
        #expect(written == original)
        let repository = JobRepository(client: PostgresClient(configuration: database, maxConnections: 1))
        let done = try await repository.events(ofJob: job).filter { $0.kind == "segment_done" }
        #expect(done.count == 4, "each segment committed exactly once")
        #expect(Set(done.compactMap(\.segmentID)).count == 4)

        // SIGTERM: the workers are told, and the process exits 0.
        second.signal(SIGTERM)
        #expect(await worker.disconnect(.shutdown) != nil)
        let stopped = await second.exitStatus()
        #expect(stopped?.signalled == false && stopped?.status == 0, "\(second.output)")

        await worker.close()
        await client.close()
    }

    @Test("an in-process coordinator stopped abruptly: its successor resumes dispatch of the planned job")
    func crashedInProcess() async throws {
        let source = try await TestMedia.clip(seconds: 2)
        let first = try await CoordinatorUnderTest.start { $0.leadership = CoordinatorUnderTest.crashLease }
        let context = try WireContext()
        let client = try await TestClient.connect(to: first.endpoints.api, context: context)
        let output = Fixtures.temporaryDirectory("out").appendingPathComponent("crashed.mp4").path
        let job = try await client.submit(source, to: output)
        _ = try await client.wait(for: job, toBe: [.running])
        await first.crash()
        await client.close()

        // Nothing but the database and the spool carries over.
        let second = try await CoordinatorUnderTest.start(database: first.database, spool: first.spool) {
            $0.leadership = CoordinatorUnderTest.crashLease
        }
        let worker = try await ScriptedWorker.connect(to: second.endpoints.workers, context: context)
        #expect(try await worker.hello(slots: 2) != nil)
        for _ in 0..<2 {
            let assign = try #require(await worker.assignment())
            #expect(try await worker.complete(try await worker.acceptAndEncode(assign)) == .accepted)
        }
        let fresh = try await TestClient.connect(to: second.endpoints.api, context: context)
        let status = try await fresh.wait(for: job, toBe: [.succeeded, .failed])
        #expect(status.state == .succeeded, "\(status.error ?? "")")
        let (written, original) = (try await TestMedia.frames(output), try await TestMedia.frames(source))
        #expect(written == original)

        await worker.close()
        await fresh.close()
        try await second.stop()
    }
}
