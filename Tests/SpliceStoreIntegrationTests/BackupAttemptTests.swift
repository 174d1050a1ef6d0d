import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport
import Testing

/// Backup attempts (docs/store.md, Backup attempts): a second fenced attempt of a leased segment;
/// the first result committed wins, the other attempt is stale and nothing is counted against it.
@Suite struct BackupAttemptTests {
    /// A job of one segment leased to `primary`'s worker, and a second worker.
    private func leasedSegment(_ store: StoreFixture) async throws -> (job: Job, lease: SegmentLease, other: Worker) {
        let worker = try await store.makeWorker()
        let other = try await store.makeWorker()
        let job = try await store.makeRunningJob(segments: 1, costs: [7])
        let lease = try #require(
            try await store.repository.claimSegments(for: worker.id, limit: 1, leaseDuration: .seconds(30)).first)
        return (job, lease, other)
    }

    @Test func theBackupWinsWhenItCommitsFirstAndThePrimaryIsStale() async throws {
        let store = try await StoreFixture()
        let (job, primary, other) = try await leasedSegment(store)
        let repository = store.repository

        // Not on the worker already running it; once on another; never twice.
        #expect(try await repository.claimBackup(of: primary.reference, for: primary.segment.leasedBy!,
                                                 leaseDuration: .seconds(30)) == nil)
        let backup = try #require(try await repository.claimBackup(of: primary.reference, for: other.id,
                                                                   leaseDuration: .seconds(30)))
        #expect(backup.reference.token != primary.reference.token && backup.segment.attempt == primary.segment.attempt)
        #expect(backup.segment.backupLeasedBy == other.id && backup.segment.backups == 1)
        #expect(try await repository.claimBackup(of: primary.reference, for: other.id, leaseDuration: .seconds(30)) == nil)

        // Both attempts are extended, each under its own token, in one batch.
        let extended = try await repository.extendLeases([primary.reference, backup.reference], by: .seconds(600))
        #expect(Set(extended.keys) == [primary.reference, backup.reference])

        #expect(try await repository.completeSegment(backup.reference, outputPath: "backup", checksum: .filled(0xB0))
            == .completed(jobReadyToStitch: true))
        #expect(try await repository.completeSegment(backup.reference, outputPath: "backup", checksum: .filled(0xB0))
            == .alreadyCompleted)
        #expect(try await repository.completeSegment(primary.reference, outputPath: "primary", checksum: .filled(0xA0))
            == .staleLease)
        #expect(try await repository.failSegment(primary.reference, failure: SegmentFailure(message: "x", isRetryable: true))
            == .staleLease)

        let segment = try #require(try await repository.segments(ofJob: job.id).first)
        #expect(segment.state == .done && segment.outputPath == "backup" && segment.leaseToken == backup.reference.token)
        #expect(segment.attempt == 1 && segment.failedWorkers.isEmpty && segment.backupToken == nil)
        #expect(try await repository.job(id: job.id)?.state == .stitching)
        let kinds = try await repository.events(ofJob: job.id).map(\.kind)
        #expect(kinds.filter { $0.hasPrefix("segment_backup") || $0.hasPrefix("segment_primary") }
            == ["segment_backup_started", "segment_backup_won"])
        let summary = try #require(try await repository.jobSummaries().first { $0.id == job.id.uuid })
        #expect(summary.failedAttempts == 0 && summary.progress.backupsStarted == 1 && summary.progress.backupsWon == 1)
    }

    @Test func thePrimaryWinsWhenItCommitsFirstAndTheBackupIsStale() async throws {
        let store = try await StoreFixture()
        let (job, primary, other) = try await leasedSegment(store)
        let backup = try #require(try await store.repository.claimBackup(of: primary.reference, for: other.id,
                                                                         leaseDuration: .seconds(30)))
        #expect(try await store.repository.completeSegment(primary.reference, outputPath: "primary", checksum: .filled(0xA0))
            == .completed(jobReadyToStitch: true))
        #expect(try await store.repository.completeSegment(backup.reference, outputPath: "backup", checksum: .filled(0xB0))
            == .staleLease)
        #expect(try await store.repository.extendLeases([backup.reference], by: .seconds(60)).isEmpty)
        let segment = try #require(try await store.repository.segments(ofJob: job.id).first)
        #expect(segment.outputPath == "primary" && segment.leaseToken == primary.reference.token)
        let summary = try #require(try await store.repository.jobSummaries().first { $0.id == job.id.uuid })
        #expect(summary.failedAttempts == 0 && summary.progress.backupsStarted == 1 && summary.progress.backupsWon == 0)
        #expect(try await store.repository.events(ofJob: job.id).map(\.kind).contains("segment_primary_won"))
    }

    @Test func noBackupWhileTheJobStillHasSegmentsToClaim() async throws {
        let store = try await StoreFixture()
        let worker = try await store.makeWorker()
        let other = try await store.makeWorker()
        try await store.makeRunningJob(segments: 2)
        let primary = try await store.repository.claimSegments(for: worker.id, limit: 1, leaseDuration: .seconds(30))[0]
        #expect(try await store.repository.claimBackup(of: primary.reference, for: other.id,
                                                       leaseDuration: .seconds(30)) == nil)
        _ = try await store.repository.claimSegments(for: worker.id, limit: 1, leaseDuration: .seconds(30))
        #expect(try await store.repository.claimBackup(of: primary.reference, for: other.id,
                                                       leaseDuration: .seconds(30)) != nil)
    }

    @Test func whenThePrimaryFailsTheBackupCarriesOnAsTheSegmentsAttempt() async throws {
        let store = try await StoreFixture()
        let (job, primary, other) = try await leasedSegment(store)
        let backup = try #require(try await store.repository.claimBackup(of: primary.reference, for: other.id,
                                                                         leaseDuration: .seconds(30)))
        let failure = SegmentFailure(message: "encoder crashed", isRetryable: true)
        #expect(try await store.repository.failSegment(primary.reference, failure: failure)
            == .recorded(.carriedOnByBackup))
        let segment = try #require(try await store.repository.segments(ofJob: job.id).first)
        #expect(segment.state == .leased && segment.leaseToken == backup.reference.token && segment.leasedBy == other.id)
        #expect(segment.backupToken == nil && segment.attempt == 1 && segment.failedWorkers == [primary.segment.leasedBy!])
        #expect(try await store.repository.completeSegment(backup.reference, outputPath: "backup", checksum: .filled(0xB0))
            == .completed(jobReadyToStitch: true))
    }

    @Test func aFailedExpiredOrReleasedBackupEndsAloneAndCountsNothing() async throws {
        let store = try await StoreFixture()
        let (job, primary, other) = try await leasedSegment(store)
        let repository = store.repository
        let backup = try #require(try await repository.claimBackup(of: primary.reference, for: other.id,
                                                                   leaseDuration: .milliseconds(1)))
        try await Task.sleep(for: .milliseconds(20))
        let reaped = try await repository.reapExpiredLeases()
        #expect(reaped.map(\.reference) == [backup.reference] && reaped.map(\.workerID) == [other.id])
        #expect(reaped.map(\.outcome) == [.backupEnded])
        var segment = try #require(try await repository.segments(ofJob: job.id).first)
        #expect(segment.state == .leased && segment.leaseToken == primary.reference.token && segment.backupToken == nil)
        #expect(segment.backups == 1 && segment.failedWorkers.isEmpty)
        // One backup per segment, ever.
        #expect(try await repository.claimBackup(of: primary.reference, for: other.id, leaseDuration: .seconds(30)) == nil)
        #expect(try await repository.failSegment(backup.reference, failure: SegmentFailure(message: "x", isRetryable: true))
            == .staleLease)

        // A second job: the backup's worker fails it, then another's worker is released.
        let (job2, primary2, other2) = try await leasedSegment(store)
        let backup2 = try #require(try await repository.claimBackup(of: primary2.reference, for: other2.id,
                                                                    leaseDuration: .seconds(30)))
        #expect(try await repository.failSegment(backup2.reference, failure: SegmentFailure(message: "oom", isRetryable: true))
            == .recorded(.backupEnded))
        segment = try #require(try await repository.segments(ofJob: job2.id).first)
        #expect(segment.state == .leased && segment.leaseToken == primary2.reference.token && segment.attempt == 1)
        #expect(segment.failedWorkers.isEmpty)
        let summary = try #require(try await repository.jobSummaries().first { $0.id == job2.id.uuid })
        #expect(summary.failedAttempts == 0 && summary.progress.backupsStarted == 1 && summary.progress.backupsWon == 0)
        #expect(try await repository.completeSegment(primary2.reference, outputPath: "p", checksum: .filled(0xA0))
            == .completed(jobReadyToStitch: true))

        let (job3, primary3, other3) = try await leasedSegment(store)
        let backup3 = try #require(try await repository.claimBackup(of: primary3.reference, for: other3.id,
                                                                    leaseDuration: .seconds(30)))
        let released = try await repository.releaseLeases(ofWorker: other3.id, reason: "the worker disconnected")
        #expect(released.map(\.reference) == [backup3.reference] && released.map(\.outcome) == [.backupEnded])
        #expect(try await repository.segments(ofJob: job3.id).first?.leaseToken == primary3.reference.token)

        // Cancelling a job ends both attempts.
        let (job4, primary4, other4) = try await leasedSegment(store)
        #expect(try await repository.claimBackup(of: primary4.reference, for: other4.id, leaseDuration: .seconds(30)) != nil)
        _ = try await repository.cancelJob(jobID: job4.id, reason: "user asked")
        segment = try #require(try await repository.segments(ofJob: job4.id).first)
        #expect(segment.state == .cancelled && segment.backupToken == nil)
    }
}
