import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport
import Testing

@Suite struct JobLifecycleTests {
    @Test func jobRunsFromQueuedToCompleted() async throws {
        let store = try await StoreFixture()
        let worker = try await store.makeWorker()
        let job = try await store.makeRunningJob(segments: 3)
        #expect(job.state == .running && job.segmentsTotal == 3 && job.startedAt != nil)

        let leases = try await store.repository.claimSegments(for: worker.id, limit: 10, leaseDuration: .seconds(30))
        #expect(leases.map(\.segment.plan.index) == [0, 1, 2])
        #expect(Set(leases.map(\.reference.token)).count == 3)
        #expect(leases.allSatisfy { $0.segment.attempt == 1 && $0.segment.state == .leased })

        for lease in leases.dropLast() {
            #expect(try await store.repository.completeSegment(lease.reference, outputPath: "o", checksum: .filled(0xC0))
                == .completed(jobReadyToStitch: false))
        }
        #expect(try await store.repository.completeSegment(leases[2].reference, outputPath: "o", checksum: .filled(0xC0))
            == .completed(jobReadyToStitch: true))
        #expect(try await store.repository.job(id: job.id)?.state == .stitching)
        #expect(try await store.repository.completeSegment(leases[2].reference, outputPath: "o", checksum: .filled(0xC0))
            == .alreadyCompleted)

        let completed = try await store.repository.completeJob(jobID: job.id)
        #expect(completed.state == .succeeded && completed.finishedAt != nil && completed.segmentsDone == 3)
        let kinds = try await store.repository.events(ofJob: job.id).map(\.kind)
        #expect(kinds.first == "job_created" && kinds.last == "job_succeeded")
        #expect(kinds.filter { $0 == "segment_done" }.count == 3)
        #expect(kinds.contains("job_stitching"))
    }

    @Test func retryableFailureBacksOffThenExhaustsAndFailsTheJob() async throws {
        let store = try await StoreFixture()
        let worker = try await store.makeWorker()
        let job = try await store.makeRunningJob(segments: 2, maxAttempts: 2)
        let failure = SegmentFailure(message: "encoder crashed", isRetryable: true)

        let first = try await store.repository.claimSegments(for: worker.id, limit: 1, leaseDuration: .seconds(30))[0]
        guard case .recorded(.willRetry) = try await store.repository.failSegment(first.reference, failure: failure)
        else { Issue.record("first failure should retry"); return }
        let retried = try await store.repository.segments(ofJob: job.id)[0]
        #expect(retried.state == .pending && retried.lastError == "encoder crashed" && retried.nextAttemptAt > Date.distantPast)

        try await Task.sleep(for: .milliseconds(20))
        let second = try await store.repository.claimSegments(for: worker.id, limit: 1, leaseDuration: .seconds(30))[0]
        #expect(second.segment.id == first.segment.id && second.segment.attempt == 2)
        #expect(second.reference.token != first.reference.token)
        #expect(try await store.repository.failSegment(second.reference, failure: failure)
            == .recorded(.jobFailed(segmentState: .dead)))

        let failed = try await store.repository.job(id: job.id)
        #expect(failed?.state == .failed && failed?.finishedAt != nil && failed?.error?.contains("encoder crashed") == true)
        let states = try await store.repository.segments(ofJob: job.id).map(\.state)
        #expect(states == [.dead, .cancelled])
    }

    @Test func permanentFailureFailsTheJobAtOnce() async throws {
        let store = try await StoreFixture()
        let worker = try await store.makeWorker()
        let job = try await store.makeRunningJob(segments: 3, maxAttempts: 5)
        let leases = try await store.repository.claimSegments(for: worker.id, limit: 2, leaseDuration: .seconds(30))
        let outcome = try await store.repository.failSegment(
            leases[0].reference, failure: SegmentFailure(message: "moov atom not found", isRetryable: false))
        #expect(outcome == .recorded(.jobFailed(segmentState: .failed)))
        #expect(try await store.repository.segments(ofJob: job.id).map(\.state) == [.failed, .cancelled, .cancelled])
        // The other worker's lease was cancelled with the job: its result is refused.
        #expect(try await store.repository.completeSegment(leases[1].reference, outputPath: "o", checksum: .filled(0xC0))
            == .staleLease)
    }

    @Test func aReturnedSegmentSpendsNoAttemptAndCountsNoWorker() async throws {
        let store = try await StoreFixture()
        let worker = try await store.makeWorker()
        let job = try await store.makeRunningJob(segments: 1, maxAttempts: 1)
        // With one attempt allowed, three refusals in a row still leave the segment claimable.
        for round in 1...3 {
            let lease = try await store.repository.claimSegments(for: worker.id, limit: 1, leaseDuration: .seconds(30))
            try #require(lease.count == 1, "round \(round)")
            #expect(lease[0].segment.attempt == 1)
            guard case .recorded(.willRetry) = try await store.repository.returnSegment(
                lease[0].reference, reason: "refused by worker: spool-unwritable: read-only") else {
                Issue.record("not returned")
                return
            }
            // Fenced: the same token again is stale.
            #expect(try await store.repository.returnSegment(lease[0].reference, reason: "again") == .staleLease)
            #expect(try await store.repository.completeSegment(lease[0].reference, outputPath: "o", checksum: .filled(0xC0))
                == .staleLease)
        }
        let segment = try await store.repository.segments(ofJob: job.id)[0]
        #expect(segment.state == .pending && segment.attempt == 0 && segment.failedWorkers.isEmpty)
        #expect(try await store.repository.waitingReason(ofJob: job.id)
            == "refused by worker: spool-unwritable: read-only")
        let events = try await store.repository.events(ofJob: job.id).filter { $0.kind == "segment_returned" }
        #expect(events.count == 3 && events.allSatisfy { $0.workerID == worker.id && $0.attempt == 1 })

        // Once a worker takes it, the job is no longer waiting.
        let taken = try await store.repository.claimSegments(for: worker.id, limit: 1, leaseDuration: .seconds(30))
        #expect(try await store.repository.waitingReason(ofJob: job.id) == nil)
        #expect(try await store.repository.completeSegment(taken[0].reference, outputPath: "o", checksum: .filled(0xC0))
            == .completed(jobReadyToStitch: true))
    }

    @Test func orphanedLeasesAreReleasedUnlessHeldOrRecentlyExtended() async throws {
        let store = try await StoreFixture()
        let worker = try await store.makeWorker()
        let job = try await store.makeRunningJob(segments: 3)
        let leases = try await store.repository.claimSegments(for: worker.id, limit: 3, leaseDuration: .seconds(600))
        // All three were claimed an hour ago (as far as the store can tell) …
        try await store.query("UPDATE segments SET heartbeat_at = now() - interval '1 hour' WHERE job_id = \(job.id)")
        // … segment 1 was extended just now (its worker is alive somewhere); segment 0 is held by a session.
        _ = try await store.repository.extendLease(leases[1].reference, by: .seconds(600))
        let released = try await store.repository.releaseOrphanedLeases(
            held: [leases[0].reference.token], idle: .seconds(60))
        #expect(released.map(\.reference) == [leases[2].reference])
        let states = try await store.repository.segments(ofJob: job.id).map(\.state)
        #expect(states == [.leased, .leased, .pending])
        // A late result of the released attempt is refused.
        #expect(try await store.repository.completeSegment(leases[2].reference, outputPath: "o", checksum: .filled(0xC0))
            == .staleLease)
    }

    @Test func failuresOnSeveralWorkersMakeASegmentDead() async throws {
        let store = try await StoreFixture(policy: JobRepository.Policy(
            segmentBackoff: Backoff(base: .milliseconds(1), cap: .milliseconds(1)), deadAfterDistinctWorkers: 2))
        let job = try await store.makeRunningJob(segments: 1, maxAttempts: 10)
        let failure = SegmentFailure(message: "segfault", isRetryable: true)
        var outcomes: [ResultOutcome] = []
        for name in ["a", "b"] {
            let worker = try await store.makeWorker(name)
            try await Task.sleep(for: .milliseconds(5))
            let lease = try await store.repository.claimSegments(for: worker.id, limit: 1, leaseDuration: .seconds(30))
            outcomes.append(try await store.repository.failSegment(lease[0].reference, failure: failure))
        }
        #expect(outcomes.last == .recorded(.jobFailed(segmentState: .dead)))
        #expect(try await store.repository.job(id: job.id)?.state == .failed)
    }

    @Test func cancellingAJobCancelsItsSegmentsAndRejectsLateResults() async throws {
        let store = try await StoreFixture()
        let worker = try await store.makeWorker()
        let job = try await store.makeRunningJob(segments: 3)
        let lease = try await store.repository.claimSegments(for: worker.id, limit: 1, leaseDuration: .seconds(30))[0]
        let cancelled = try await store.repository.cancelJob(jobID: job.id, reason: "user asked")
        #expect(cancelled.state == .cancelled && cancelled.error == "user asked" && cancelled.finishedAt != nil)
        #expect(try await store.repository.segments(ofJob: job.id).allSatisfy { $0.state == .cancelled })
        #expect(try await store.repository.completeSegment(lease.reference, outputPath: "o", checksum: .filled(0xC0)) == .staleLease)
        #expect(try await store.repository.claimSegments(for: worker.id, limit: 5, leaseDuration: .seconds(30)).isEmpty)
        // Cancelling again is a no-op; completing a cancelled job is refused.
        #expect(try await store.repository.cancelJob(jobID: job.id, reason: "again").error == "user asked")
        await #expect(throws: StoreError.self) { try await store.repository.completeJob(jobID: job.id) }
    }

    @Test("a cancel that waited on the job's row while another transaction moved it (planning → running) still cancels it")
    func cancellingAJobThatMovesUnderTheCancel() async throws {
        let store = try await StoreFixture()
        let created = try await store.repository.createJob(JobSubmission(
            idempotencyKey: "moving", input: "file:///in.mov", output: "file:///out.mp4",
            settings: PostgresJSON(#"{"codec":"h264"}"#)))
        let job = try await store.repository.startPlanning(jobID: created.job.id)
        #expect(job.state == .planning)
        // A second coordinator's transaction moves the job on and holds its row until told to commit.
        let other = PostgresClient(configuration: store.configuration, maxConnections: 1)
        let (locked, lockedNow) = AsyncStream.makeStream(of: Void.self)
        let (release, releaseNow) = AsyncStream.makeStream(of: Void.self)
        let mover = Task {
            defer { lockedNow.finish() }
            try await other.transaction { connection in
                try await connection.query("""
                    UPDATE jobs SET state = 'running', plan = '{}', segments_total = 1 WHERE id = \(job.id)
                    """)
                lockedNow.yield()
                for await _ in release { break }
            }
        }
        for await _ in locked { break }
        let cancel = Task { try await store.repository.cancelJob(jobID: job.id, reason: "user asked") }
        // Let the cancel take its snapshot and block on the row lock, then commit the move.
        try await Task.sleep(for: .milliseconds(500))
        releaseNow.yield()
        try await mover.value
        let cancelled = try await cancel.value
        #expect(cancelled.state == .cancelled)
        #expect(try await store.repository.job(id: job.id)?.state == .cancelled)
    }

    @Test func claimOrderIsPriorityThenAge() async throws {
        let store = try await StoreFixture()
        let worker = try await store.makeWorker()
        let old = try await store.makeRunningJob(segments: 2, key: "old")
        let urgent = try await store.makeRunningJob(segments: 1, key: "urgent", priority: 10)
        let young = try await store.makeRunningJob(segments: 1, key: "young")
        let claimed = try await store.repository.claimSegments(for: worker.id, limit: 10, leaseDuration: .seconds(30))
        #expect(claimed.map(\.segment.jobID) == [urgent.id, old.id, old.id, young.id])
    }

    @Test func withinAJobTheMostExpensiveSegmentsAreClaimedFirst() async throws {
        let store = try await StoreFixture()
        let worker = try await store.makeWorker()
        let old = try await store.makeRunningJob(segments: 4, key: "old", costs: [10, 30, 20, 30])
        let urgent = try await store.makeRunningJob(segments: 2, key: "urgent", priority: 10, costs: [5, 50])
        // The costs are kept with the segments.
        #expect(try await store.repository.segments(ofJob: old.id).map(\.plan.cost) == [10, 30, 20, 30])
        let first = try await store.repository.claimSegments(for: worker.id, limit: 3, leaseDuration: .seconds(30))
        // Priority and age still come first; within a job, cost descending, plan order among equals.
        #expect(first.map { [$0.segment.jobID, $0.segment.plan.index] as [AnyHashable] }
            == [[urgent.id, 1], [urgent.id, 0], [old.id, 1]])
        // A segment that comes back is claimed again in its cost's place, not after the others.
        try #require(try await store.repository.returnSegment(first[2].reference, reason: "refused") != .staleLease)
        let rest = try await store.repository.claimSegments(for: worker.id, limit: 10, leaseDuration: .seconds(30))
        #expect(rest.map(\.segment.plan.index) == [1, 3, 2, 0])
    }

    @Test func revokedWorkersLoseTheirLeasesAndCannotClaimOrEnroll() async throws {
        let store = try await StoreFixture()
        let worker = try await store.makeWorker("doomed")
        let job = try await store.makeRunningJob(segments: 2)
        let leases = try await store.repository.claimSegments(for: worker.id, limit: 2, leaseDuration: .seconds(30))
        #expect(try await store.repository.workerSeen(id: worker.id)?.lastSeenAt != nil)
        let revoked = try await store.repository.revokeWorker(id: worker.id)
        #expect(revoked.state == .revoked && revoked.revokedAt != nil)
        #expect(try await store.repository.segments(ofJob: job.id).allSatisfy { $0.state == .pending })
        #expect(try await store.repository.completeSegment(leases[0].reference, outputPath: "o", checksum: .filled(0xC0))
            == .staleLease)
        #expect(try await store.repository.claimSegments(for: worker.id, limit: 2, leaseDuration: .seconds(30)).isEmpty)
        #expect(try await store.repository.workerSeen(id: worker.id) == nil)
        let error = await #expect(throws: StoreError.self) {
            try await store.repository.enrollWorker(publicKey: "key-doomed", name: "doomed", slots: 1)
        }
        #expect(error?.code == .workerRevoked)
    }

    @Test func extendingALeaseNeedsTheCurrentToken() async throws {
        let store = try await StoreFixture()
        let worker = try await store.makeWorker()
        try await store.makeRunningJob(segments: 1)
        let lease = try await store.repository.claimSegments(for: worker.id, limit: 1, leaseDuration: .seconds(1))[0]
        let extended = try #require(try await store.repository.extendLease(lease.reference, by: .seconds(600)))
        #expect(extended.timeIntervalSince(lease.expiresAt) > 500)
        let forged = LeaseReference(job: lease.reference.job, segment: lease.reference.segment, token: LeaseToken(UUID()))
        #expect(try await store.repository.extendLease(forged, by: .seconds(600)) == nil)
    }

    @Test func eventsAreAppendOnly() async throws {
        let store = try await StoreFixture()
        let job = try await store.makeRunningJob(segments: 1)
        let error = await #expect(throws: StoreError.self) {
            try await store.query("DELETE FROM job_events WHERE job_id = \(job.id)")
        }
        #expect(error?.sqlState == "23001")
        #expect(try await store.repository.events(ofJob: job.id).count == 3)
    }
}
