import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport
import Testing

/// The store's batched claim, which the coordinator's dispatcher relies on: one statement for
/// every worker with free slots.
@Suite("Coordinator: batched claims", .timeLimit(.minutes(5)))
struct CoordinatorBatchClaimTests {
    /// A repository on a fresh database with one running job of `segments` segments.
    private func store(segments: Int) async throws -> (JobRepository, JobID) {
        let repository = JobRepository(client: PostgresClient(configuration: try await TestPostgres.makeDatabase()))
        let job = try await repository.createJob(JobSubmission(
            idempotencyKey: UUID().uuidString, input: "/in.mp4", output: "/out.mp4")).job
        try await repository.startPlanning(jobID: job.id)
        try await repository.recordPlan(jobID: job.id, plan: .emptyObject, segments: (0..<segments).map {
            PlannedSegment(index: $0, rangeStart: Int64($0) * 90_000, rangeEnd: Int64($0 + 1) * 90_000, timescale: 90_000)
        })
        return (repository, job.id)
    }

    private func enroll(_ repository: JobRepository, _ name: String) async throws -> UUID {
        try await repository.enrollWorker(publicKey: "key-\(name)-\(UUID().uuidString)", name: name, slots: 4).id
    }

    @Test("segments are dealt out slot by slot, in claim order; a revoked worker gets none")
    func dealt() async throws {
        let (repository, _) = try await store(segments: 4)
        let (a, b, c, revoked) = (try await enroll(repository, "a"), try await enroll(repository, "b"),
                                  try await enroll(repository, "c"), try await enroll(repository, "r"))
        try await repository.revokeWorker(id: revoked)
        let leases = try await repository.claimSegments(forWorkers: [
            .init(workerID: a, limit: 3), .init(workerID: revoked, limit: 5), .init(workerID: b, limit: 1),
            .init(workerID: c, limit: 2),
        ], leaseDuration: .seconds(30))
        #expect(leases[a]?.map(\.segment.plan.index) == [0, 3])
        #expect(leases[b]?.map(\.segment.plan.index) == [1])
        #expect(leases[c]?.map(\.segment.plan.index) == [2])
        #expect(leases[revoked] == nil)
        let all = leases.values.flatMap { $0 }
        #expect(all.allSatisfy { $0.segment.state == .leased && $0.segment.attempt == 1 })
        #expect(Set(all.map(\.reference.token)).count == 4, "a fresh token per lease")
        #expect(try await repository.claimSegments(forWorkers: [.init(workerID: a, limit: 1)], leaseDuration: .seconds(30))
                .isEmpty)
    }

    @Test("a job that names its encoder is claimed only for workers that have it; others still get the rest")
    func requiredEncoder() async throws {
        let repository = JobRepository(client: PostgresClient(configuration: try await TestPostgres.makeDatabase()))
        func job(_ name: String, encoder: String?) async throws -> JobID {
            let job = try await repository.createJob(JobSubmission(
                idempotencyKey: UUID().uuidString, input: "/\(name).mp4", output: "/\(name)-out.mp4")).job
            try await repository.startPlanning(jobID: job.id)
            try await repository.recordPlan(jobID: job.id, plan: .emptyObject, segments: (0..<3).map {
                PlannedSegment(index: $0, rangeStart: Int64($0) * 90_000, rangeEnd: Int64($0 + 1) * 90_000, timescale: 90_000)
            }, requiredEncoder: encoder)
            return job.id
        }
        // The older job names libaom-av1, so it comes first in claim order.
        let aom = try await job("aom", encoder: "libaom-av1")
        let any = try await job("any", encoder: nil)
        let x264Only = try await enroll(repository, "x264-only")
        // While no online worker offers libaom, the job says so.
        let waiting = try await repository.waitingReason(ofJob: aom)
        #expect(waiting?.contains("no online worker offers the libaom-av1 encoder") == true, "\(waiting ?? "nil")")
        #expect(try await repository.waitingReason(ofJob: any) == nil)
        let full = try await repository.enrollWorker(
            publicKey: "key-full-\(UUID().uuidString)", name: "full", slots: 2,
            capabilities: try PostgresJSON(encoding: ["encoders": ["libx264", "libaom-av1"]])).id
        _ = try await repository.workerSeen(id: full, state: .online)
        #expect(try await repository.waitingReason(ofJob: aom) == nil)
        let leases = try await repository.claimSegments(forWorkers: [
            .init(workerID: x264Only, limit: 3, encoders: ["libx264", "aac"]),
            .init(workerID: full, limit: 2, encoders: ["libx264", "libsvtav1", "libaom-av1", "aac"]),
        ], leaseDuration: .seconds(30))
        #expect(leases[x264Only]?.allSatisfy { $0.segment.jobID == any } == true, "\(leases)")
        #expect(leases[x264Only]?.count == 3)
        #expect(leases[full]?.map(\.segment.jobID) == [aom, aom])
        // The last libaom segment waits for a worker that has it, whoever else is free.
        #expect(try await repository.claimSegments(forWorkers: [.init(workerID: x264Only, limit: 4, encoders: ["libx264"])],
                                                   leaseDuration: .seconds(30)).isEmpty)
        let last = try await repository.claimSegments(forWorkers: [.init(workerID: full, limit: 4, encoders: ["libaom-av1"])],
                                                      leaseDuration: .seconds(30))
        #expect(last[full]?.map(\.segment.plan.index) == [2])
        #expect(last[full]?.first?.segment.jobID == aom)
    }

    @Test("concurrent batched claims never lease one segment twice")
    func concurrent() async throws {
        let (repository, job) = try await store(segments: 300)
        var workers: [UUID] = []
        for index in 0..<6 { workers.append(try await enroll(repository, "w\(index)")) }
        let batches = try await withThrowingTaskGroup(of: [SegmentLease].self) { group in
            for round in 0..<12 {
                let demands = workers.map { JobRepository.ClaimDemand(workerID: $0, limit: 1 + (round % 3)) }
                group.addTask {
                    try await repository.claimSegments(forWorkers: demands, leaseDuration: .seconds(30)).values.flatMap { $0 }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(batches.count == Set(batches.map(\.segment.id)).count, "no segment leased twice")
        let leased = try await repository.segments(ofJob: job).filter { $0.state == .leased }
        #expect(leased.count == batches.count)
        #expect(Set(leased.map(\.id)) == Set(batches.map(\.segment.id)))
    }
}
