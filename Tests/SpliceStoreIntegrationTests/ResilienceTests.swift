import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport
import Synchronization
import Testing

/// Keys whose creation returned success, shared by the writer tasks.
private final class Acknowledged: Sendable {
    let keys = Mutex<[String]>([])
}

@Suite struct ResilienceTests {
    @Test func aRestartedCoordinatorResumesEveryJob() async throws {
        let store = try await StoreFixture()
        let first = store.repository
        let worker = try await store.makeWorker()
        let queued = try await first.createJob(JobSubmission(idempotencyKey: "queued", input: "a", output: "b")).job
        let planning = try await first.createJob(JobSubmission(idempotencyKey: "planning", input: "a", output: "b")).job
        try await first.startPlanning(jobID: planning.id)
        let stitching = try await store.makeRunningJob(segments: 1, key: "stitching")
        let stitchingLease = try await first.claimSegments(for: worker.id, limit: 1, leaseDuration: .seconds(300))[0]
        _ = try await first.completeSegment(stitchingLease.reference, outputPath: "o", checksum: .filled(0xC0))
        let running = try await store.makeRunningJob(segments: 4, key: "running")
        let leases = try await first.claimSegments(for: worker.id, limit: 3, leaseDuration: .seconds(300))
        #expect(leases.map(\.segment.jobID) == [running.id, running.id, running.id])
        _ = try await first.completeSegment(leases[0].reference, outputPath: "o0", checksum: .filled(0xC0))
        await first.client.close() // the coordinator dies

        let second = store.anotherRepository()
        let resumed = try await second.jobs()
        #expect(Set(resumed.map(\.id)) == [queued.id, planning.id, running.id, stitching.id])
        #expect(Dictionary(uniqueKeysWithValues: resumed.map { ($0.id, $0.state) })
            == [queued.id: .queued, planning.id: .planning, running.id: .running, stitching.id: .stitching])
        let segments = try await second.segments(ofJob: running.id)
        #expect(segments.map(\.state) == [.done, .leased, .leased, .pending])
        #expect(segments.filter { $0.leasedBy == worker.id }.map(\.lease) == leases.dropFirst().map(\.reference))

        // Workers resend their results to the new coordinator with the tokens the old one issued.
        #expect(try await second.completeSegment(leases[0].reference, outputPath: "o0", checksum: .filled(0xC0)) == .alreadyCompleted)
        for lease in leases.dropFirst() {
            _ = try await second.completeSegment(lease.reference, outputPath: "o", checksum: .filled(0xC0))
        }
        let last = try await second.claimSegments(for: worker.id, limit: 5, leaseDuration: .seconds(300))
        #expect(last.map(\.segment.plan.index) == [3])
        #expect(try await second.completeSegment(last[0].reference, outputPath: "o", checksum: .filled(0xC0))
            == .completed(jobReadyToStitch: true))
        try await second.startPlanning(jobID: planning.id) // planning again after the restart is allowed
        try await second.recordPlan(jobID: planning.id, plan: PostgresJSON("{}"),
                                    segments: [PlannedSegment(index: 0, rangeStart: 0, rangeEnd: 1, timescale: 1)])
        for job in [running, stitching] { try await second.completeJob(jobID: job.id) }
        #expect(Set(try await second.jobs(in: [.succeeded]).map(\.id)) == [running.id, stitching.id])
    }

    @Test func concurrentSubmitsOfOneKeyCreateOneJob() async throws {
        let store = try await StoreFixture(connections: 8)
        let other = store.anotherRepository(connections: 8)
        let submission = JobSubmission(idempotencyKey: "same-key", input: "s3://in/a.mov", output: "s3://out/a.mp4")
        let results = try await withThrowingTaskGroup(of: JobCreation.self) { group in
            for index in 0..<32 {
                let repository = index.isMultiple(of: 2) ? store.repository : other
                group.addTask { try await repository.createJob(submission) }
            }
            return try await group.reduce(into: [JobCreation]()) { $0.append($1) }
        }
        #expect(results.filter(\.created).count == 1)
        #expect(Set(results.map(\.job.id)).count == 1)
        let rows = try await store.query("""
            SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM job_events WHERE kind = 'job_created')
            """)
        #expect(try rows[0].decode(Int.self, at: 0) == 1 && rows[0].decode(Int.self, at: 1) == 1)
    }

    @Test func aSubmissionKeepsItsFingerprintBesideItsKey() async throws {
        let store = try await StoreFixture()
        let fingerprint = try #require(SHA256Digest("sha256:" + String(repeating: "7c", count: 32)))
        let first = try await store.repository.createJob(JobSubmission(
            idempotencyKey: "keyed", fingerprint: fingerprint, input: "a", output: "b"))
        #expect(first.created && first.job.submissionFingerprint == fingerprint)
        // A second create with the key returns the first job with the first fingerprint: the
        // coordinator compares it with the new request's.
        let other = try #require(SHA256Digest("sha256:" + String(repeating: "0d", count: 32)))
        let again = try await store.repository.createJob(JobSubmission(
            idempotencyKey: "keyed", fingerprint: other, input: "c", output: "d"))
        #expect(!again.created && again.job.id == first.job.id && again.job.submissionFingerprint == fingerprint)
        #expect(try await store.repository.job(idempotencyKey: "keyed")?.submissionFingerprint == fingerprint)
        let unkeyed = try await store.repository.createJob(JobSubmission(idempotencyKey: "old", input: "a", output: "b"))
        #expect(unkeyed.job.submissionFingerprint == nil)
        // Only a SHA-256 in its text form fits the column.
        await #expect(throws: StoreError.self) {
            try await store.query("UPDATE jobs SET submission_fingerprint = 'md5:1234' WHERE idempotency_key = 'old'")
        }
    }

    @Test func valuesFullOfQuotesAndSQLAreStoredVerbatim() async throws {
        let store = try await StoreFixture()
        let nasty = [
            "'; DROP TABLE jobs; --",
            #"Robert"); DELETE FROM segments WHERE ('1'='1"#,
            "$1 $2 \\x00 \\' \\\\ E'\\n' $$dollar$$ $tag$ %s %n",
            "line\nbreak\ttab\r\u{7}",
            "unicode: ñ 漢字 🎬 \u{202E}",
        ]
        for (index, text) in nasty.enumerated() {
            let settings = try PostgresJSON(encoding: ["note": text])
            let created = try await store.repository.createJob(JobSubmission(
                idempotencyKey: text, input: text + "/src", output: "out-\(index)-" + text, settings: settings))
            let read = try #require(try await store.repository.job(idempotencyKey: text))
            #expect(read.id == created.job.id)
            #expect(read.input == text + "/src" && read.output == "out-\(index)-" + text)
            #expect(try read.settings.decode([String: String].self) == ["note": text])
            let failed = try await store.repository.failJob(jobID: read.id, error: text)
            #expect(failed.error == text)
            let worker = try await store.repository.enrollWorker(publicKey: text, name: text, slots: 1)
            #expect(try await store.repository.worker(publicKey: text) == worker && worker.name == text)
        }
        let counts = try await store.query("SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM workers)")
        #expect(try counts[0].decode(Int.self, at: 0) == nasty.count && counts[0].decode(Int.self, at: 1) == nasty.count)
        let error = await #expect(throws: StoreError.self) {
            try await store.repository.createJob(JobSubmission(idempotencyKey: "nul\0byte", input: "a", output: "b"))
        }
        #expect(error?.code == .invalidValue)
    }

    @Test func storeRidesOutAServerCrashAndLosesNoCommittedWrite() async throws {
        let server = try await TestPostgres.makePrivateServer()
        let database = try await server.createDatabase("crash").unfenced()
        try await Migrator(configuration: database).migrate()
        let repository = JobRepository(client: PostgresClient(configuration: database, maxConnections: 4))

        let acknowledged = Acknowledged()
        let writers = (0..<3).map { writer in
            Task {
                for index in 0..<120 {
                    let key = "w\(writer)-\(index)"
                    _ = try await repository.createJob(JobSubmission(idempotencyKey: key, input: "a", output: "b"))
                    acknowledged.keys.withLock { $0.append(key) }
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
        }
        // Crash once writes are flowing (connecting can take a while on a loaded machine), well
        // before the writers are through.
        let flowing = ContinuousClock.now + .seconds(60)
        while acknowledged.keys.withLock({ $0.count }) < 15, ContinuousClock.now < flowing {
            try await Task.sleep(for: .milliseconds(10))
        }
        try await server.stop(mode: .immediate) // a crash: no checkpoint, WAL replay on start
        let ackedBeforeCrash = acknowledged.keys.withLock { $0.count }
        try await Task.sleep(for: .milliseconds(500))
        try await server.start()
        for writer in writers { try await writer.value }

        let keys = acknowledged.keys.withLock { $0 }
        #expect(ackedBeforeCrash > 0 && ackedBeforeCrash < keys.count, "the crash happened while writes were going on")
        #expect(keys.count == 360)
        let stored = try await repository.client.query("SELECT idempotency_key FROM jobs")
        let storedKeys = Set(try stored.map { row throws(StoreError) in try row.decode(String.self, at: 0) })
        #expect(Set(keys).isSubset(of: storedKeys), "an acknowledged write was lost")
        #expect(storedKeys.count == 360)
        try await server.stop()
    }
}
