import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport
import Testing

/// `splice jobs prune` / `--retention` in the store: old finished jobs go with everything of
/// theirs, in batches; running and young jobs stay whole.
@Suite struct RetentionTests {
    /// A job that ran to `state` and finished `daysAgo` days ago.
    private func finishedJob(_ store: StoreFixture, _ state: JobState, daysAgo: Int) async throws -> JobID {
        let job = try await store.makeRunningJob(segments: 2)
        switch state {
        case .failed: _ = try await store.repository.failJob(jobID: job.id, error: "test")
        case .cancelled: _ = try await store.repository.cancelJob(jobID: job.id, reason: "test")
        default:
            let worker = try await store.makeWorker()
            let leases = try await store.repository.claimSegments(for: worker.id, limit: 10,
                                                                  leaseDuration: .seconds(30))
            for lease in leases {
                _ = try await store.repository.completeSegment(lease.reference, outputPath: "o",
                                                               checksum: .filled(0xC0))
            }
            _ = try await store.repository.completeJob(jobID: job.id)
        }
        try await store.query("""
            UPDATE jobs SET finished_at = now() - make_interval(days => \(Int32(daysAgo))) WHERE id = \(job.id.uuid)
            """)
        return job.id
    }

    private func count(_ store: StoreFixture, _ table: String, job: JobID) async throws -> Int64 {
        let query: PostgresQuery = switch table {
        case "segments": "SELECT count(*) AS n FROM segments WHERE job_id = \(job.uuid)"
        case "job_events": "SELECT count(*) AS n FROM job_events WHERE job_id = \(job.uuid)"
        default: "SELECT count(*) AS n FROM jobs WHERE id = \(job.uuid)"
        }
        return try await store.query(query).first?.decode(Int64.self, column: "n") ?? -1
    }

    @Test func oldFinishedJobsGoWithTheirRowsInBatchesAndNothingElseDoes() async throws {
        let store = try await StoreFixture()
        var old: [JobID] = []
        for state in [JobState.succeeded, .failed, .cancelled, .succeeded, .failed] {
            old.append(try await finishedJob(store, state, daysAgo: 40))
        }
        let young = try await finishedJob(store, .succeeded, daysAgo: 2)
        let running = try await store.makeRunningJob(segments: 3).id
        try await store.query("UPDATE jobs SET created_at = now() - interval '60 days' WHERE id = \(running.uuid)")

        let dry = try await store.repository.pruneJobs(finishedBefore: .seconds(30 * 86_400), dryRun: true)
        #expect(Set(dry.jobs) == Set(old) && dry.segments == 10 && dry.events > 0)
        #expect(try await count(store, "jobs", job: old[0]) == 1, "a dry run deletes nothing")

        let heard = LockedBox<[[JobID]]>([])
        let report = try await store.repository.pruneJobs(finishedBefore: .seconds(30 * 86_400), batchSize: 2) { jobs in
            heard.value.append(jobs)
        }
        #expect(Set(report.jobs) == Set(old) && report.segments == 10 && report.events == dry.events)
        #expect(report.transactions == 3 && heard.value.map(\.count) == [2, 2, 1])
        for job in old {
            #expect(try await count(store, "jobs", job: job) == 0)
            #expect(try await count(store, "segments", job: job) == 0)
            #expect(try await count(store, "job_events", job: job) == 0)
        }
        for job in [young, running] {
            #expect(try await count(store, "jobs", job: job) == 1)
            #expect(try await count(store, "segments", job: job) > 0)
            #expect(try await count(store, "job_events", job: job) > 0)
        }
        #expect(try await store.repository.pruneJobs(finishedBefore: .seconds(30 * 86_400)).jobs.isEmpty)
    }

    @Test func eventsStayAppendOnlyOutsideAPrune() async throws {
        let store = try await StoreFixture()
        let job = try await finishedJob(store, .cancelled, daysAgo: 40)
        await #expect(throws: StoreError.self) {
            try await store.query("DELETE FROM job_events WHERE job_id = \(job.uuid)")
        }
        #expect(try await count(store, "job_events", job: job) > 0)
    }
}
