import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport
import Testing

@Suite struct LeaseConcurrencyTests {
    struct Claim: Hashable {
        var segmentID: Int64
        var attempt: Int
    }

    @Test func eightConnectionsClaimTenThousandSegmentsEachExactlyOnce() async throws {
        let store = try await StoreFixture(connections: 8)
        for job in 0..<4 { try await store.makeRunningJob(segments: 2_500, key: "bulk-\(job)") }
        var workers: [Worker] = []
        for index in 0..<8 { workers.append(try await store.makeWorker("claimer-\(index)")) }

        let perWorker = try await withThrowingTaskGroup(of: [Claim].self) { group in
            for worker in workers {
                group.addTask {
                    var claims: [Claim] = []
                    while true {
                        let leases = try await store.repository.claimSegments(for: worker.id, limit: 25,
                                                                              leaseDuration: .seconds(300))
                        if leases.isEmpty { return claims }
                        claims += leases.map { Claim(segmentID: $0.segment.id, attempt: $0.segment.attempt) }
                    }
                }
            }
            return try await group.reduce(into: [[Claim]]()) { $0.append($1) }
        }
        let all = perWorker.flatMap { $0 }
        #expect(all.count == 10_000)
        #expect(Set(all).count == 10_000)
        #expect(Set(all.map(\.segmentID)).count == 10_000)
        #expect(perWorker.filter { !$0.isEmpty }.count > 1, "claims should have been spread over several connections")

        let counts = try await store.query("""
            SELECT count(*) FILTER (WHERE state = 'leased' AND attempt = 1),
                   (SELECT count(*) FROM job_events WHERE kind = 'segment_leased'),
                   count(DISTINCT lease_token)
            FROM segments
            """)
        #expect(try counts[0].decode(Int.self, at: 0) == 10_000)
        #expect(try counts[0].decode(Int.self, at: 1) == 10_000)
        #expect(try counts[0].decode(Int.self, at: 2) == 10_000)
    }

    @Test func aStaleLeaseCanNeitherCompleteNorFailNorExtend() async throws {
        let store = try await StoreFixture()
        let slow = try await store.makeWorker("slow")
        let fast = try await store.makeWorker("fast")
        let job = try await store.makeRunningJob(segments: 1)
        let stale = try await store.repository.claimSegments(for: slow.id, limit: 1, leaseDuration: .zero)[0]
        try await Task.sleep(for: .milliseconds(5))
        let reaped = try await store.repository.reapExpiredLeases()
        #expect(reaped.map(\.reference) == [stale.reference])
        try await Task.sleep(for: .milliseconds(10))
        let current = try await store.repository.claimSegments(for: fast.id, limit: 1, leaseDuration: .seconds(300))[0]
        #expect(current.segment.id == stale.segment.id && current.segment.attempt == 2)

        #expect(try await store.repository.completeSegment(stale.reference, outputPath: "stale", checksum: .filled(0xAA))
            == .staleLease)
        #expect(try await store.repository.failSegment(stale.reference, failure: .init(message: "late", isRetryable: false))
            == .staleLease)
        #expect(try await store.repository.extendLease(stale.reference, by: .seconds(60)) == nil)

        let segment = try await store.repository.segments(ofJob: job.id)[0]
        #expect(segment.state == .leased && segment.leaseToken == current.reference.token && segment.leasedBy == fast.id)
        #expect(try await store.repository.job(id: job.id)?.state == .running)

        #expect(try await store.repository.completeSegment(current.reference, outputPath: "good", checksum: .filled(0xBB))
            == .completed(jobReadyToStitch: true))
        #expect(try await store.repository.segments(ofJob: job.id)[0].outputPath == "good")
    }

    @Test func reaperRacingCompletionNeverBothWins() async throws {
        let store = try await StoreFixture(connections: 8)
        let worker = try await store.makeWorker()
        let job = try await store.makeRunningJob(segments: 1_000, maxAttempts: 5)
        // Every lease is already expired, so the reaper may take any of them while it is being completed.
        let leases = try await store.repository.claimSegments(for: worker.id, limit: 1_000, leaseDuration: .zero)
        #expect(leases.count == 1_000)
        try await Task.sleep(for: .milliseconds(5))

        enum Result: Sendable {
            case completion(LeaseReference, ResultOutcome)
            case reaped([ReleasedLease])
        }
        var completed: Set<LeaseReference> = []
        var stale: Set<LeaseReference> = []
        var reaped: [LeaseReference] = []
        try await withThrowingTaskGroup(of: Result.self) { group in
            for (round, lease) in leases.enumerated() {
                if round >= 4 {
                    for _ in 0..<2 { try await record(try await group.next()!) }
                }
                group.addTask {
                    .completion(lease.reference,
                                try await store.repository.completeSegment(lease.reference, outputPath: "o", checksum: .filled(0xC0)))
                }
                group.addTask { .reaped(try await store.repository.reapExpiredLeases(limit: 1)) }
            }
            for try await result in group { try await record(result) }

            func record(_ result: Result) async throws {
                switch result {
                case .completion(let reference, .completed): completed.insert(reference)
                case .completion(let reference, _): stale.insert(reference)
                case .reaped(let released): reaped += released.map(\.reference)
                }
            }
        }
        #expect(Set(reaped).count == reaped.count, "a lease was reaped twice")
        #expect(completed.isDisjoint(with: reaped), "a lease was both completed and reaped")
        #expect(completed.count + reaped.count == 1_000, "every lease ends exactly one way")
        #expect(stale == Set(reaped), "exactly the reaped leases had their completion refused")

        let rows = try await store.query("""
            SELECT count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE state = 'pending'),
                   (SELECT segments_done FROM jobs WHERE id = \(job.id))
            FROM segments WHERE job_id = \(job.id)
            """)
        #expect(try rows[0].decode(Int.self, at: 0) == completed.count)
        #expect(try rows[0].decode(Int.self, at: 1) == reaped.count)
        #expect(try rows[0].decode(Int.self, at: 2) == completed.count)
        let both = try await store.query("""
            SELECT count(*) FROM (
                SELECT lease_token FROM job_events WHERE job_id = \(job.id)
                  AND kind IN ('segment_done', 'segment_lease_expired')
                GROUP BY lease_token HAVING count(*) > 1) twice
            """)
        #expect(try both[0].decode(Int.self, at: 0) == 0)
    }
}

@Suite struct GroupCommitTests {
    @Test func aBatchAnswersEachCompletionAndStitchesOnce() async throws {
        let store = try await StoreFixture()
        let worker = try await store.makeWorker()
        let job = try await store.makeRunningJob(segments: 3)
        let leases = try await store.repository.claimSegments(for: worker.id, limit: 3, leaseDuration: .seconds(60))
        let forged = LeaseReference(job: leases[0].reference.job, segment: leases[0].reference.segment, token: LeaseToken(UUID()))
        func completion(_ reference: LeaseReference) -> SegmentCompletion {
            SegmentCompletion(lease: reference, outputPath: "out-\(reference.segment)", checksum: .filled(0xC0))
        }
        let outcomes = try await store.repository.completeSegments([
            completion(leases[0].reference), completion(forged), completion(leases[1].reference),
            completion(leases[0].reference), completion(leases[2].reference),
        ])
        #expect(outcomes == [.completed(jobReadyToStitch: false), .staleLease, .completed(jobReadyToStitch: false),
                             .alreadyCompleted, .completed(jobReadyToStitch: true)])
        let stored = try #require(try await store.repository.job(id: job.id))
        #expect(stored.state == .stitching && stored.segmentsDone == 3)
        #expect(try await store.repository.completeSegments([completion(leases[1].reference)]) == [.alreadyCompleted])
    }

    /// Figures ride in the same statement as the results: each segment keeps its own, a result
    /// without any leaves the columns NULL, and a resend with other figures changes nothing.
    @Test func aBatchKeepsEachResultsFigures() async throws {
        let store = try await StoreFixture()
        let worker = try await store.makeWorker()
        let job = try await store.makeRunningJob(segments: 4)
        let leases = try await store.repository.claimSegments(for: worker.id, limit: 3, leaseDuration: .seconds(60))
        let figures: [SegmentFigures?] = [
            SegmentFigures(videoBytes: 150_001, videoBitsPerSecond: 1_200_008, meanQP: 27.43),
            nil,
            SegmentFigures(videoBytes: 0, meanQP: 51),
        ]
        let completions = zip(leases, figures).map { lease, figures in
            SegmentCompletion(lease: lease.reference, outputPath: "out", checksum: .filled(0xC0), figures: figures)
        }
        let outcomes = try await store.repository.completeSegments(completions)
        #expect(outcomes == Array(repeating: .completed(jobReadyToStitch: false), count: 3))
        var resend = completions[0]
        resend.figures = SegmentFigures(videoBytes: 1)
        #expect(try await store.repository.completeSegments([resend]) == [.alreadyCompleted])

        let reports = try await store.repository.segmentReports(ofJob: job.id)
        #expect(reports == [
            SegmentReport(index: 0, state: .done, figures: figures[0]),
            SegmentReport(index: 1, state: .done),
            SegmentReport(index: 2, state: .done, figures: figures[2]),
            SegmentReport(index: 3, state: .pending),
        ])
        #expect(try await store.repository.segments(ofJob: job.id).map(\.figures) == figures + [nil])
    }

    /// A measured segment's quality, CRF and encodes (migration 0007) are stored with its result
    /// and read back whole; the job's summary (the status page) combines the measured segments:
    /// PSNR of their frames' mean squared error, SSIM weighted by frames, the unmeasured ignored.
    @Test func measuredQualityIsKeptPerSegmentAndCombinedPerJob() async throws {
        let store = try await StoreFixture()
        let worker = try await store.makeWorker()
        let job = try await store.makeRunningJob(segments: 3)
        let leases = try await store.repository.claimSegments(for: worker.id, limit: 3, leaseDuration: .seconds(60))
        // 30 frames at 40 dB (MSE 0.0001 of the peak²) and 10 at 30 dB (0.001): 40 frames at
        // (30 × 0.0001 + 10 × 0.001) / 40 = 0.000325, 34.881 dB; SSIM (30 × 0.99 + 10 × 0.95) / 40 = 0.98.
        let measured = [
            SegmentQuality(frames: 30, psnrY: 40, psnr: 41.5, ssimY: 0.99, ssim: 0.992, minPSNRY: 38.25, minSSIMY: 0.981,
                           worstSecondPSNRY: 39.5, worstSecondStartMilliseconds: 0),
            SegmentQuality(frames: 10, psnrY: 30, psnr: 31, ssimY: 0.95, ssim: 0.96, minPSNRY: 29.125, minSSIMY: 0.94,
                           worstSecondPSNRY: 30, worstSecondStartMilliseconds: 1000),
        ]
        let figures: [SegmentFigures?] = [
            SegmentFigures(videoBytes: 40_000, videoBitsPerSecond: 320_000, meanQP: 24.5, crf: 23.5, quality: measured[0],
                           encodes: 1),
            SegmentFigures(videoBytes: 9_000, meanQP: 33, crf: 31, quality: measured[1], encodes: 2),
            SegmentFigures(videoBytes: 12_000, meanQP: 28),
        ]
        let completions = zip(leases, figures).map { lease, figures in
            SegmentCompletion(lease: lease.reference, outputPath: "out", checksum: .filled(0xC0), figures: figures)
        }
        #expect(try await store.repository.completeSegments(completions).count == 3)
        #expect(try await store.repository.segments(ofJob: job.id).map(\.figures) == figures)
        #expect(try await store.repository.segmentReports(ofJob: job.id).map(\.figures) == figures)

        let summary = try #require(try await store.repository.jobSummaries().first { $0.id == job.id.uuid })
        let psnr = try #require(summary.psnrY), ssim = try #require(summary.ssimY)
        #expect(abs(psnr - -10 * log10(0.000325)) < 1e-9, "\(psnr)")
        #expect(abs(ssim - 0.98) < 1e-12, "\(ssim)")
        let combined = try #require(SegmentQuality.combined(measured))
        #expect(combined.psnrY == 34.881 && combined.ssimY == 0.98 && combined.frames == 40, "\(combined)")
        #expect(combined.minPSNRY == 29.125 && combined.worstSecondStartMilliseconds == 1000)

        // A job with no measured segment shows none.
        let plain = try await store.makeRunningJob(segments: 1)
        let other = try #require(try await store.repository.jobSummaries().first { $0.id == plain.id.uuid })
        #expect(other.psnrY == nil && other.ssimY == nil)
    }

    @Test func concurrentSingleCompletionsShareCommitsAndStitchOnce() async throws {
        let store = try await StoreFixture(connections: 8)
        let worker = try await store.makeWorker()
        let job = try await store.makeRunningJob(segments: 200)
        let leases = try await store.repository.claimSegments(for: worker.id, limit: 200, leaseDuration: .seconds(60))
        let outcomes = try await withThrowingTaskGroup(of: ResultOutcome.self) { group in
            for lease in leases {
                group.addTask {
                    try await store.repository.completeSegment(lease.reference, outputPath: "o", checksum: .filled(0xC0))
                }
            }
            return try await group.reduce(into: [ResultOutcome]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == .completed(jobReadyToStitch: true) }.count == 1)
        #expect(outcomes.filter { $0 == .completed(jobReadyToStitch: false) }.count == 199)
        let events = try await store.repository.events(ofJob: job.id)
        #expect(events.filter { $0.kind == "job_stitching" }.count == 1)
        #expect(events.filter { $0.kind == "segment_done" }.count == 200)
    }
}
