import Foundation
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing
import SpliceCoordinator

@Suite("Coordinator: jobs end to end over ZeroMQ and Postgres", .timeLimit(.minutes(5)))
struct CoordinatorJobTests {
    @Test("a job is planned, dispatched, encoded by a scripted worker, stitched, and plays like the source")
    func wholeJob() async throws {
        // Four 1 s segments: the planner fills the (at least two) lanes evenly.
        let source = try await TestMedia.clip(seconds: 4)
        let coordinator = try await CoordinatorUnderTest.start()
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let worker = try await ScriptedWorker.connect(to: coordinator.endpoints.workers, context: context)
        let output = Fixtures.temporaryDirectory("out").appendingPathComponent("whole.mp4").path

        let job = try await client.submit(source, to: output)
        #expect(try await worker.hello(slots: 2) != nil)
        var assigned: [SegmentAttempt] = []
        while assigned.count < 4, let assign = await worker.assignment() {
            assigned.append(assign.attempt)
            #expect(assign.outputPath.hasPrefix(coordinator.spool.path + "/jobs/\(job)/"))
            #expect(assign.leaseMilliseconds == 30_000)
            let result = try await worker.acceptAndEncode(assign)
            #expect(try await worker.complete(result) == .accepted)
        }
        #expect(assigned.map(\.segment).sorted() == [0, 1, 2, 3])
        #expect(assigned.allSatisfy { $0.attempt == 1 })

        let status = try await client.wait(for: job, toBe: [.succeeded, .failed])
        #expect(status.state == .succeeded, "\(status.error ?? "")")
        #expect(status.segmentsTotal == 4 && status.segmentsDone == 4 && status.fraction == 1)
        let (written, original) = (try await TestMedia.frames(output), try await TestMedia.frames(source))
        #expect(written == original)
        #expect(await eventually { !FileManager.default.fileExists(atPath: coordinator.spool.path + "/jobs/\(job)") },
                "the job's segment files are removed once it is stitched")
        #expect(try await coordinator.events("segment_done", of: job).count == 4)
        // Each row keeps its planned cost (what claims are ordered by), copied from its spec.
        struct Costed: Decodable { var cost: Int64? }
        let rows = try await coordinator.repository.segments(ofJob: job)
        #expect(rows.count == 4 && rows.allSatisfy { $0.plan.cost > 0 })
        #expect(try rows.map { try $0.plan.spec.decode(Costed.self).cost } == rows.map(\.plan.cost))

        await worker.close()
        await client.close()
        try await coordinator.stop()
    }

    @Test("a duplicate COMPLETE gets duplicate; a late COMPLETE after the segment was re-leased gets stale")
    func duplicateAndStale() async throws {
        let source = try await TestMedia.clip(seconds: 1)
        let coordinator = try await CoordinatorUnderTest.start { configuration in
            // Silent after 2 s, so the hung worker gets nothing new (but its session is kept);
            // leases of 8 s, which the other worker keeps up with PROGRESS every 2 s. Both wide
            // enough that a worker starved for a second or two on a loaded machine (CI runs
            // hundreds of tests on two cores) is not taken for a hung one; no backup attempts,
            // so the only second attempt is the one the lapsed lease makes.
            configuration.sessions = CoordinatorPolicy(
                heartbeatInterval: .milliseconds(500), heartbeatLiveness: 4, leaseDuration: .seconds(8),
                forgetAfter: .seconds(60), backupAfterPercent: 0)
        }
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let slow = try await ScriptedWorker.connect(to: coordinator.endpoints.workers, context: context)
        let job = try await client.submit(source, to: Fixtures.temporaryDirectory("out").appendingPathComponent("d.mp4").path)

        #expect(try await slow.hello() != nil)
        let first = try #require(await slow.assignment())
        // The slow worker hangs after its ACCEPT: silent, it gets nothing new, and its lease runs
        // out; the reaper takes the segment back and tells it. It finishes its encode anyway.
        await slow.stopHeartbeats()
        try await slow.send(.accept(Accept(attempt: first.attempt)))
        let late = try await SegmentEncoder.encode(first)
        let cancel = await slow.cancel(of: first.attempt)
        #expect(cancel?.reason == .leaseLost)

        let fast = try await ScriptedWorker.connect(to: coordinator.endpoints.workers, context: context)
        #expect(try await fast.hello() != nil)
        let second = try #require(await fast.assignment())
        #expect(second.attempt.segment == first.attempt.segment)
        // A fresh attempt (2, or later if a loaded machine let another lease lapse) with its own token.
        #expect(second.attempt.attempt >= 2)
        #expect(second.attempt.leaseToken != first.attempt.leaseToken)
        #expect(second.outputPath != first.outputPath, "every attempt writes its own file")
        let result = try await fast.acceptAndEncode(second)

        #expect(try await slow.complete(late) == .stale, "the late attempt's lease is gone")
        #expect(try await fast.complete(result) == .accepted)
        #expect(try await fast.complete(result) == .duplicate)
        #expect(try await slow.complete(late) == .stale, "a resend gets the same answer")

        let status = try await client.wait(for: job, toBe: [.succeeded, .failed])
        #expect(status.state == .succeeded, "\(status.error ?? "")")
        let done = try await coordinator.events("segment_done", of: job)
        #expect(done.count == 1, "committed exactly once")
        #expect(done.first?.leaseToken == second.attempt.leaseToken)

        await slow.close()
        await fast.close()
        await client.close()
        try await coordinator.stop()
    }
}
