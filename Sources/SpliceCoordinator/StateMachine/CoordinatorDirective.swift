package import Foundation
package import SpliceCore
package import SpliceJSON
package import SpliceWire
import SpliceDaemon

/// What the coordinator's state machine asks its shell to do. The state machine never performs
/// I/O: it returns directives, and the shell carries them out (send a message, write to the
/// store, wake a loop) and reports each outcome back as another ``CoordinatorEvent``.
package enum CoordinatorDirective: Hashable, Sendable {
    /// Send `message` to `peer` (the return address of `worker`'s latest message). A failed send
    /// comes back as `.sendFailed`.
    case send(CoordinatorMessage, to: WirePeer, worker: WorkerIdentity)
    /// Look the worker up (or, without CURVE, enroll its connection) and record it online;
    /// answer with `.workerRegistered`, `.workerRefused` or `.registrationFailed`.
    case registerWorker(WorkerIdentity, name: String, slots: Int, encoders: [String])
    /// Commit a COMPLETE or FAIL, fenced on its lease token; answer with `.resultCommitted` or
    /// `.resultCommitFailed`.
    case commitResult(WorkerResult)
    /// Extend these leases (ACCEPT, PROGRESS, or the `running` list of a HELLO); answer with
    /// `.leasesExtended` or `.leaseExtensionFailed`.
    case extendLeases([SegmentAttempt], worker: WorkerIdentity, check: LeaseCheck)
    /// Lease segments to these workers, up to each one's free slots, in one store round trip;
    /// answer with `.claimed` or `.claimFailed`.
    case claim([ClaimDemand], generation: UInt64)
    /// Start a backup attempt of `primary` (a straggler) on the demand's worker, fenced on the
    /// primary's token; answer with `.backupClaimed` or `.backupClaimFailed`.
    case claimBackup(of: SegmentAttempt, for: ClaimDemand)
    /// End an attempt that will never run so the segment can be retried, fenced on the token:
    /// a retryable failure that `spendsAttempt` when the worker may have run it (it came back
    /// without it, it never accepted it), or a plain hand-back when it never reached the worker.
    case abandonAttempt(SegmentAttempt, reason: String, spendsAttempt: Bool)
    /// Take back every lease of a worker that said it is leaving.
    case releaseWorker(workerID: UUID, reason: String)
    /// Record that these workers were heard from (`online`) or are gone (`offline`).
    case markWorkers([UUID], online: Bool)
    /// A job has every segment done: stitch it now rather than at the next poll.
    case wakeStitcher
    /// Remove the job's segment files from the spool (it was cancelled or failed).
    case removeJobFiles(JobID)
    /// Something worth a log line.
    case notice(CoordinatorNotice)
}

/// A worker's result for one attempt: what COMPLETE and FAIL carry.
package enum WorkerResult: Hashable, Sendable {
    case complete(Complete)
    case fail(Fail)

    package var attempt: SegmentAttempt {
        switch self {
        case .complete(let complete): complete.attempt
        case .fail(let fail): fail.attempt
        }
    }

    /// The message type an ACK of this result names.
    package var acknowledged: Ack.Acknowledged {
        switch self {
        case .complete: .complete
        case .fail: .fail
        }
    }
}

extension ResultOutcome {
    /// The ACK for the first report of the attempt.
    var ackOutcome: Ack.Outcome {
        switch self {
        case .completed, .recorded: .accepted
        case .alreadyCompleted: .duplicate
        case .staleLease: .stale
        }
    }

    /// The ACK for a report of an attempt already committed (a resend): the same every time.
    var resendAckOutcome: Ack.Outcome {
        self == .staleLease ? .stale : .duplicate
    }

    /// The job failed because of this attempt (the segment ran out of attempts or failed for good).
    var failedJob: Bool {
        if case .recorded(.jobFailed) = self { true } else { false }
    }

    /// When the segment may be claimed again, when it went back to pending.
    var retryAt: Date? {
        if case .recorded(.willRetry(let at)) = self { at } else { nil }
    }
}

/// Why leases are being extended.
package enum LeaseCheck: Hashable, Sendable {
    /// An ACCEPT: acknowledge it.
    case accept
    /// A PROGRESS: acknowledge it.
    case progress
    /// The `running` list of a HELLO (of the session's `incarnation`): cancel what is no longer
    /// current, then WELCOME.
    case helloRunning(incarnation: UInt64)

    var acknowledged: Ack.Acknowledged? {
        switch self {
        case .accept: .accept
        case .progress: .progress
        case .helloRunning: nil
        }
    }
}

/// One worker's share of a claim: its free slots.
package struct ClaimDemand: Hashable, Sendable {
    package var worker: WorkerIdentity
    /// Its `workers` row.
    package var workerID: UUID
    package var limit: Int
    /// The encoders it has (its HELLO's): it gets no segment of a job that names another.
    package var encoders: [String]

    package init(worker: WorkerIdentity, workerID: UUID, limit: Int, encoders: [String] = []) {
        self.worker = worker
        self.workerID = workerID
        self.limit = limit
        self.encoders = encoders
    }
}

/// One claimed segment, ready to be sent as an ASSIGN.
package struct Assignment: Hashable, Sendable {
    package var attempt: SegmentAttempt
    /// The attempt-unique output path in the shared spool.
    package var outputPath: String
    /// The `SegmentWorkOrder`, encoded.
    package var spec: JSONPayload
    /// The planner's estimate of the segment's work (0: unknown): what the coordinator expects
    /// of its running time, and the weight of its progress.
    package var cost: Int64

    package init(attempt: SegmentAttempt, outputPath: String, spec: JSONPayload, cost: Int64 = 0) {
        self.attempt = attempt
        self.outputPath = outputPath
        self.spec = spec
        self.cost = cost
    }
}

/// A lease the store took back without a result (the reaper, or a worker's release).
package struct TakenBackLease: Hashable, Sendable {
    package var job: JobID
    package var leaseToken: LeaseToken
    /// The segment ran out of attempts and its job failed.
    package var jobFailed: Bool

    package init(job: JobID, leaseToken: LeaseToken, jobFailed: Bool) {
        self.job = job
        self.leaseToken = leaseToken
        self.jobFailed = jobFailed
    }
}

/// Events of the sessions worth a log line.
package enum CoordinatorNotice: Hashable, Sendable {
    case workerRegistering(WorkerIdentity, name: String, slots: Int)
    case workerWelcomed(WorkerIdentity, workerID: UUID, running: Int)
    case workerRefused(WorkerIdentity, reason: String)
    case workerSilent(WorkerIdentity)
    case workerBack(WorkerIdentity)
    case workerForgotten(WorkerIdentity)
    case workerLeft(WorkerIdentity, reason: Disconnect.Reason)
    /// A message other than HELLO from a worker without a session: told to re-register.
    case unknownSession(WorkerIdentity, messageType: String)
    /// A message the wire layer could not accept (already counted in `WireCounters`).
    case dropped(WireRejection, from: WorkerIdentity?)
    /// A HELLO that breaks the protocol (no slots).
    case invalidHello(WorkerIdentity, detail: String)
    /// A HELLO of a worker-protocol version this build does not speak, answered with DISCONNECT
    /// (in that version) naming the versions it does.
    case versionRefused(WorkerIdentity, version: Int)
    /// An ACCEPT or PROGRESS whose lease is gone: the worker is told to stop.
    case leaseLost(WorkerIdentity, SegmentAttempt)
    /// A worker re-registered without an attempt it held.
    case orphanedAttempt(WorkerIdentity, SegmentAttempt)
    /// An ASSIGN (or another message) could not be delivered.
    case undeliverable(WorkerIdentity, messageType: String, error: String)
    /// A worker refused an assignment for a reason of its own: no assignments for `for`.
    case workerQuarantined(WorkerIdentity, for: Duration, reason: String)
    /// An ASSIGN was neither accepted nor answered in time: taken back.
    case notAccepted(WorkerIdentity, SegmentAttempt)
    /// A backup attempt of a straggler (`of`, on another worker) was assigned to this worker.
    case backupStarted(WorkerIdentity, SegmentAttempt, of: SegmentAttempt)
    /// The other attempt of the segment committed first: this one is told to stop (not a failure).
    case attemptSuperseded(WorkerIdentity, SegmentAttempt)
}
