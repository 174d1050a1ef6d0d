public import Foundation

/// What recording a worker's report of an attempt did — `completeSegment` (a result),
/// `failSegment` (a failure), `returnSegment` (a hand-back). The coordinator acts on it as it is:
/// it decides the ACK, whether the job is ready to stitch or has failed, and when the segment may
/// be claimed again.
public enum ResultOutcome: Sendable, Hashable {
    /// The result is recorded. `jobReadyToStitch` is true when this was the job's last segment
    /// (the job is now `stitching`).
    case completed(jobReadyToStitch: Bool)
    /// This very attempt had already completed: a duplicate report, acknowledged again, changing nothing.
    case alreadyCompleted
    /// The attempt ended without a result (a failure, a hand-back) and that is recorded: what
    /// became of the segment.
    case recorded(AttemptOutcome)
    /// The token is not the segment's current lease (taken back, re-leased, cancelled, or the
    /// failure was already recorded): no effect.
    case staleLease
}

/// What happened to a segment whose attempt ended without a result (failure, expired or released
/// lease, hand-back).
public enum AttemptOutcome: Sendable, Hashable {
    /// Back to `pending`, claimable again from `at`.
    case willRetry(at: Date)
    /// The segment is `failed` or `dead`, and its job has failed.
    case jobFailed(segmentState: SegmentState)
    /// The segment's backup attempt carries on in the ended attempt's place: still `leased`, now
    /// under the backup's token.
    case carriedOnByBackup
    /// The attempt was a segment's backup: it is over, and the segment's leased attempt carries on.
    case backupEnded
}
