import Foundation
import SpliceStore
import SpliceTestSupport

/// A repository on a fresh migrated database, with helpers to make jobs and workers.
struct StoreFixture {
    let configuration: ConnectionConfiguration
    let repository: JobRepository

    init(connections: Int = 4, policy: JobRepository.Policy = StoreFixture.fastPolicy) async throws {
        configuration = try await TestPostgres.makeDatabase()
        repository = JobRepository(client: PostgresClient(configuration: configuration, maxConnections: connections),
                                   policy: policy)
    }

    /// Retries become claimable after a few milliseconds, so tests need not wait.
    static let fastPolicy = JobRepository.Policy(segmentBackoff: Backoff(base: .milliseconds(1), cap: .milliseconds(4)))

    /// Another repository (its own pool) on the same database: a second coordinator, or one restarted.
    func anotherRepository(connections: Int = 4) -> JobRepository {
        JobRepository(client: PostgresClient(configuration: configuration, maxConnections: connections),
                      policy: repository.policy)
    }

    /// A running job with `segments` segments of one second each (timescale 90 kHz), costing
    /// `costs` (0 each when nil).
    @discardableResult
    func makeRunningJob(segments: Int, key: String = UUID().uuidString, priority: Int = 0,
                        maxAttempts: Int = 3, costs: [Int64]? = nil) async throws -> Job {
        let created = try await repository.createJob(JobSubmission(
            idempotencyKey: key, input: "file:///in/\(key).mov", output: "file:///out/\(key).mp4",
            settings: PostgresJSON(#"{"codec":"h264"}"#), priority: priority, maxAttempts: maxAttempts))
        try await repository.startPlanning(jobID: created.job.id)
        let plan = (0..<segments).map {
            PlannedSegment(index: $0, rangeStart: Int64($0) * 90_000, rangeEnd: Int64($0 + 1) * 90_000, timescale: 90_000,
                           cost: costs?[$0] ?? 0)
        }
        return try await repository.recordPlan(jobID: created.job.id, plan: PostgresJSON(#"{"segments":\#(segments)}"#),
                                               segments: plan)
    }

    func makeWorker(_ name: String = "worker-\(UUID().uuidString.prefix(8))") async throws -> Worker {
        try await repository.enrollWorker(publicKey: "key-\(name)", name: name, slots: 4)
    }

    /// Runs a statement directly (for checks the repository API does not offer).
    func query(_ query: PostgresQuery) async throws -> PostgresRows {
        try await repository.client.query(query)
    }
}
