package import Foundation
package import SpliceCore
package import SpliceWire

/// Something that happened to the coordinator, fed to ``CoordinatorStateMachine/handle(_:at:)``
/// with the time it is handled on the coordinator's monotonic clock: a worker's message, the
/// answer to a directive, the timer, a step of shutdown.
package enum CoordinatorEvent: Sendable {
    /// A decoded message from a worker.
    case received(WorkerMessage, from: WirePeer)
    /// A message the endpoint dropped (garbled, wrong protocol, unknown type…). It is already
    /// counted in `WireCounters`; here it only becomes a log line.
    case rejected(WireRejection, from: WirePeer)
    /// The store knows the worker (row `workerID`): commit what its HELLO holds, check what it
    /// runs, and WELCOME it once that is done.
    case workerRegistered(WorkerIdentity, workerID: UUID)
    /// The worker may not register (its key is unknown or revoked): tell it and forget it.
    case workerRefused(WorkerIdentity, reason: String)
    /// Registering failed (the store was unreachable): forget the session; the worker resends
    /// HELLO until it is welcomed.
    case registrationFailed(WorkerIdentity)
    /// The key was revoked; the shell has already cut off its connections.
    case workerRevoked(WorkerIdentity)
    /// The result is committed: ACK every report of it that waited, then act on the outcome.
    case resultCommitted(WorkerResult, ResultOutcome)
    /// The commit failed (the store stayed unreachable): no ACK, so the worker resends.
    case resultCommitFailed(WorkerResult)
    /// Extensions committed: `current` holds the tokens the store extended; the others are gone.
    case leasesExtended([SegmentAttempt], worker: WorkerIdentity, check: LeaseCheck, current: Set<LeaseToken>)
    /// The extension could not be committed: no ACK (the worker keeps its own deadline and sends
    /// PROGRESS again); a HELLO's running attempts stay counted as running.
    case leaseExtensionFailed([SegmentAttempt], worker: WorkerIdentity, check: LeaseCheck)
    /// The store took leases back (expired, or released): the worker holding one, if any, is
    /// told to stop; a job that failed because of it cancels its other attempts.
    case leasesTakenBack([TakenBackLease])
    /// A job was cancelled or failed: every attempt of it still running anywhere gets CANCEL, and
    /// its segment files are removed.
    case jobEnded(JobID, Cancel.Reason)
    /// Something may be claimable: a plan was recorded, a lease was taken back, a backoff ended,
    /// or the poll timer fired.
    case workAvailable
    /// A claim came back with these segments per worker: ASSIGN each. Fewer than asked means
    /// nothing else is claimable right now.
    case claimed([WorkerIdentity: [Assignment]], demands: [ClaimDemand], generation: UInt64)
    /// A backup attempt of `of` was claimed for the demand's worker (`nil`: the store refused it —
    /// the primary ended, the job has segments to claim again, or the segment had its backup).
    case backupClaimed(Assignment?, of: SegmentAttempt, demand: ClaimDemand)
    /// The backup claim failed (the store was unreachable): the slot is free again.
    case backupClaimFailed(of: SegmentAttempt, demand: ClaimDemand)
    /// The claim failed (the store was unreachable): the slots are free again, and claiming stops
    /// until the next `.workAvailable` (the poll timer), so an unreachable store is not hammered.
    case claimFailed([ClaimDemand])
    /// A send failed (ROUTER_MANDATORY says why).
    case sendFailed(CoordinatorMessage, to: WirePeer, worker: WorkerIdentity, error: WireError)
    /// Time passed: heartbeats, liveness, assignments not accepted in time.
    case tick
    /// A graceful shutdown began: no more claims.
    case drainStarted
    /// The store work in flight is answered: every worker is told the coordinator is leaving.
    case drained
}
