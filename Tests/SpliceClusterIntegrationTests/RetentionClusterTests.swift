import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing

/// Retention on a running coordinator (docs/deploy.md, Retention): `--retention` prunes old
/// finished jobs when its term starts (and hourly), `splice jobs prune` (JOBS_PRUNE) on request,
/// with their spool files; running and young jobs stay.
@Suite("Retention on the coordinator", .timeLimit(.minutes(3)))
struct RetentionClusterTests {
    /// A job recorded straight in the store (before the coordinator runs, so its planner never
    /// sees it queued): planned with two segments, then cancelled `finishedDaysAgo` days ago, or
    /// left running when nil.
    private static func job(_ repository: JobRepository, finishedDaysAgo: Int?) async throws -> JobID {
        let key = UUID().uuidString
        let created = try await repository.createJob(JobSubmission(
            idempotencyKey: key, input: "file:///in/\(key).mov", output: "file:///out/\(key).mp4",
            settings: PostgresJSON(#"{"codec":"h264"}"#)))
        let id = created.job.id
        _ = try await repository.startPlanning(jobID: id)
        _ = try await repository.recordPlan(jobID: id, plan: PostgresJSON(#"{"segments":2}"#), segments: (0..<2).map {
            PlannedSegment(index: $0, rangeStart: Int64($0) * 90_000, rangeEnd: Int64($0 + 1) * 90_000,
                           timescale: 90_000, cost: 0)
        })
        try await repository.client.query("""
            UPDATE jobs SET created_at = now() - interval '60 days' WHERE id = \(id.uuid)
            """)
        guard let days = finishedDaysAgo else { return id }
        _ = try await repository.cancelJob(jobID: id, reason: "test")
        try await repository.client.query("""
            UPDATE jobs SET finished_at = now() - make_interval(days => \(Int32(days))) WHERE id = \(id.uuid)
            """)
        return id
    }

    @Test("--retention prunes old finished jobs when the term starts; JOBS_PRUNE removes rows and spool files")
    func retention() async throws {
        let database = try await TestPostgres.makeDatabase()
        let setup = JobRepository(client: PostgresClient(configuration: database, maxConnections: 2))
        let old = [try await Self.job(setup, finishedDaysAgo: 40), try await Self.job(setup, finishedDaysAgo: 45)]
        let young = try await Self.job(setup, finishedDaysAgo: 2)
        let running = try await Self.job(setup, finishedDaysAgo: nil)
        await setup.client.close()

        let spool = Fixtures.temporaryDirectory("retention-spool")
        let coordinator = try await CoordinatorUnderTest.start(database: database, spool: spool) { configuration in
            configuration.retention = .seconds(30 * 86_400)
            configuration.janitorInterval = .seconds(3600)  // only the prune removes spool files here
        }
        let repository = coordinator.repository
        let pruned = try await eventually(within: .seconds(30)) {
            let first = try await repository.job(id: old[0])
            let second = try await repository.job(id: old[1])
            return first == nil && second == nil
        }
        #expect(pruned, "the old finished jobs were not pruned")
        #expect(try await repository.events(ofJob: old[0]).isEmpty)
        #expect(try await repository.job(id: young)?.state == .cancelled)
        #expect(try await repository.job(id: running)?.state == .running)
        #expect(try await repository.segments(ofJob: running).count == 2)

        // The young job ages past the cutoff; its spool files go with it on request.
        try await repository.client.query("""
            UPDATE jobs SET finished_at = now() - interval '31 days' WHERE id = \(young.uuid)
            """)
        let files = spool.appendingPathComponent("jobs").appendingPathComponent(young.description)
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        try Data("segment".utf8).write(to: files.appendingPathComponent("s-0.mp4"))
        let client = try await TestClient.connect(to: coordinator.endpoints.api)
        guard case .jobsPruned(let dry) = try await client.request(
            .pruneJobs(PruneJobs(finishedBeforeSeconds: 30 * 86_400, dryRun: true))) else {
            throw TestFailure("JOBS_PRUNE did not answer JOBS_PRUNED")
        }
        #expect(dry.jobs == 1 && dry.segments == 2 && dry.events > 0 && dry.dryRun)
        #expect(FileManager.default.fileExists(atPath: files.path), "a dry run removes nothing")
        guard case .jobsPruned(let answer) = try await client.request(
            .pruneJobs(PruneJobs(finishedBeforeSeconds: 30 * 86_400))) else {
            throw TestFailure("JOBS_PRUNE did not answer JOBS_PRUNED")
        }
        #expect(answer.jobs == 1 && answer.segments == 2 && answer.events == dry.events && !answer.dryRun)
        #expect(try await repository.job(id: young) == nil)
        #expect(!FileManager.default.fileExists(atPath: files.path), "the job's spool files were left behind")
        #expect(try await repository.job(id: running)?.state == .running)

        await client.close()
        try await coordinator.stop()
    }
}
