import Foundation
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing
import SpliceCoordinator

// What the coordinator does when a worker is lost or cannot work, with real sockets and a real
// store: leases go back at once instead of at expiry, a worker's own trouble costs the segment
// nothing, and a job nobody can take says why it waits.

@Suite("Lost and refusing workers", .timeLimit(.minutes(4)))
struct CoordinatorLossTests {
    /// Leases of a minute, so a segment that moves on within seconds proves it was not expiry.
    static func longLeases(_ configuration: inout CoordinatorConfiguration) {
        configuration.sessions = CoordinatorPolicy(
            heartbeatInterval: .milliseconds(250), heartbeatLiveness: 20, leaseDuration: .seconds(60),
            forgetAfter: .seconds(90))
        // One of these is crashed and replaced: its successor waits out this lease.
        configuration.leadership = CoordinatorUnderTest.crashLease
    }

    @Test("a worker whose connection dies loses its lease at once: the segment runs elsewhere within seconds")
    func deadConnectionReleases() async throws {
        let source = try await TestMedia.clip(seconds: 1)
        let coordinator = try await CoordinatorUnderTest.start(configure: Self.longLeases)
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let doomed = try await ScriptedWorker.connect(to: coordinator.endpoints.workers, context: context,
                                                      routingID: RoutingID("w:doomed"))
        let job = try await client.submit(source, to: Fixtures.temporaryDirectory("out").appendingPathComponent("o.mp4").path)
        #expect(try await doomed.hello() != nil)
        let first = try #require(await doomed.assignment())
        try await doomed.send(.accept(Accept(attempt: first.attempt)))
        #expect(await doomed.ack(of: first.attempt, .accept)?.outcome == .accepted)

        // The process dies: its connection closes (what SIGKILL does).
        let killed = ContinuousClock.now
        await doomed.close()
        let survivor = try await ScriptedWorker.connect(to: coordinator.endpoints.workers, context: context)
        #expect(try await survivor.hello() != nil)
        let second = try #require(await survivor.assignment(within: .seconds(20)))
        let moved = ContinuousClock.now - killed
        #expect(second.attempt.segment == first.attempt.segment)
        #expect(moved < .seconds(15), "the segment moved after \(moved); the lease is 60 s")
        #expect(try await survivor.complete(try await survivor.acceptAndEncode(second)) == .accepted)
        let status = try await client.wait(for: job, toBe: [.succeeded, .failed])
        #expect(status.state == .succeeded, "\(status.error ?? "")")
        let released = try await coordinator.events("segment_lease_released", of: job)
        #expect(released.count == 1 && released.first?.leaseToken == first.attempt.leaseToken)

        await survivor.close()
        await client.close()
        try await coordinator.stop()
    }

    @Test("a refusal for the worker's own set-up spends no attempt, quarantines that worker, and the job still finishes")
    func strayWorker() async throws {
        let source = try await TestMedia.clip(seconds: 1)
        // One attempt per segment: a refusal that spent it would fail the job.
        let coordinator = try await CoordinatorUnderTest.start { configuration in
            Self.longLeases(&configuration)
            configuration.maxAttempts = 1
        }
        let context = try WireContext()
        let client = try await TestClient.connect(to: coordinator.endpoints.api, context: context)
        let stray = try await ScriptedWorker.connect(to: coordinator.endpoints.workers, context: context)
        let job = try await client.submit(source, to: Fixtures.temporaryDirectory("out").appendingPathComponent("o.mp4").path)
        #expect(try await stray.hello() != nil)
        let refused = try #require(await stray.assignment())
        try await stray.send(.fail(Fail(
            attempt: refused.attempt, code: .outputOutsideSpool,
            reason: "output path is not inside this worker's spool /elsewhere", retryable: true)))
        #expect(await stray.ack(of: refused.attempt, .fail)?.outcome == .accepted)

        // Nobody else yet: the job waits, and says why.
        #expect(try await eventually(within: .seconds(20)) {
            try await client.status(job).waiting?.contains("output-outside-spool") == true
        })
        #expect(try await client.status(job).state == .running)
        guard case .workers(let list) = try await client.request(.workers(ListWorkers())) else {
            Issue.record("WORKERS did not answer")
            return
        }
        let listed = try #require(list.workers.first)
        #expect(listed.quarantineReason?.contains("output-outside-spool") == true)
        #expect((listed.quarantineRemainingMilliseconds ?? 0) > 0)
        #expect(await stray.assignment(within: .seconds(2)) == nil, "quarantined: nothing new for it")

        let healthy = try await ScriptedWorker.connect(to: coordinator.endpoints.workers, context: context)
        #expect(try await healthy.hello() != nil)
        let taken = try #require(await healthy.assignment(within: .seconds(20)))
        #expect(taken.attempt.segment == refused.attempt.segment)
        #expect(taken.attempt.attempt == 1, "the refusal spent no attempt")
        #expect(try await healthy.complete(try await healthy.acceptAndEncode(taken)) == .accepted)
        let status = try await client.wait(for: job, toBe: [.succeeded, .failed])
        #expect(status.state == .succeeded, "\(status.error ?? "")")
        #expect(try await coordinator.events("segment_returned", of: job).count == 1)
        #expect(try await coordinator.events("segment_failed", of: job).isEmpty)

        await stray.close()
        await healthy.close()
        await client.close()
        try await coordinator.stop()
    }

    @Test("a lease claimed before a crash for a worker that never comes back is released after the grace, not the lease")
    func orphanAfterRestart() async throws {
        let source = try await TestMedia.clip(seconds: 1)
        let database = try await TestPostgres.makeDatabase()
        let spool = Fixtures.temporaryDirectory("spool")
        let first = try await CoordinatorUnderTest.start(database: database, spool: spool, configure: Self.longLeases)
        let context = try WireContext()
        let client = try await TestClient.connect(to: first.endpoints.api, context: context)
        let gone = try await ScriptedWorker.connect(to: first.endpoints.workers, context: context)
        let job = try await client.submit(source, to: Fixtures.temporaryDirectory("out").appendingPathComponent("o.mp4").path)
        #expect(try await gone.hello() != nil)
        let lost = try #require(await gone.assignment())
        await gone.close()
        await client.close()
        await first.crash()

        let second = try await CoordinatorUnderTest.start(database: database, spool: spool, configure: Self.longLeases)
        let restarted = ContinuousClock.now
        let survivor = try await ScriptedWorker.connect(to: second.endpoints.workers, context: context)
        #expect(try await survivor.hello() != nil)
        let taken = try #require(await survivor.assignment(within: .seconds(30)))
        let waited = ContinuousClock.now - restarted
        #expect(taken.attempt.segment == lost.attempt.segment)
        #expect(waited < .seconds(20), "released after \(waited); the lease is 60 s")
        #expect(try await survivor.complete(try await survivor.acceptAndEncode(taken)) == .accepted)
        let secondClient = try await TestClient.connect(to: second.endpoints.api, context: context)
        let status = try await secondClient.wait(for: job, toBe: [.succeeded, .failed])
        #expect(status.state == .succeeded, "\(status.error ?? "")")

        await survivor.close()
        await secondClient.close()
        try await second.stop()
    }
}
