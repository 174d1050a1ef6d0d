package import SpliceWire

/// What the worker's state machine asks its shell to do, in order.
package enum WorkerDirective: Sendable, Hashable {
    /// To whom a message goes.
    package enum Recipient: Sendable, Hashable {
        /// The coordinator at this index of the worker's list (the one the session is with).
        case coordinator(Int)
        /// Every coordinator the worker knows (HELLO while it looks for the active one).
        case everyCoordinator
    }

    /// Send a message. If a send to one coordinator fails, report ``WorkerEvent/sendFailed(_:)``.
    case send(WorkerMessage, to: Recipient)
    /// Start encoding this assignment into its `outputPath`; report progress and the outcome.
    case startEncode(Assign)
    /// Stop this attempt's encode now. Its outcome is still reported; the machine then asks for
    /// its output to be deleted.
    case abortEncode(SegmentAttempt, because: AbortReason)
    /// Delete this output file (an aborted attempt's, or a result the coordinator called stale).
    /// Never asked for a result the coordinator may have committed.
    case deleteOutput(path: String, attempt: SegmentAttempt)
    /// Something worth a log line.
    case notice(WorkerNotice)
    /// The worker is done: stop once the encodes still in flight have ended.
    case stop(WorkerStopReason)
}

/// Why an encode is aborted.
package enum AbortReason: String, Sendable, Hashable {
    /// The coordinator sent CANCEL.
    case cancelled
    /// The coordinator answered an ACCEPT or PROGRESS with ACK `stale`: the lease is gone.
    case stale
    /// The lease could not be extended: its deadline (on this worker's clock, less the safety
    /// margin) has passed, after which the segment may be leased to someone else.
    case leaseExpiring = "lease-expiring"
    /// The drain timeout passed; the attempt is handed back with FAIL `drained`.
    case drained
    /// The coordinator revoked this worker's key.
    case revoked
}

/// Why the worker stops.
package enum WorkerStopReason: String, Sendable, Hashable {
    /// A drain (SIGTERM) completed.
    case drained
    /// The coordinator revoked this worker's key (DISCONNECT `revoked`).
    case revoked
}

/// Events of the session worth telling an operator about.
package enum WorkerNotice: Sendable, Hashable {
    /// WELCOME arrived: the session is registered with coordinator `coordinator` (an index), at
    /// `epoch` (nil: a coordinator that says none).
    case registered(session: String, coordinator: Int, epoch: Int64?)
    /// The connection to the session's coordinator stayed lost this long: looking again.
    case coordinatorLost(after: Duration)
    /// The session's coordinator is no longer the active one (STANDBY); `active` the active one's
    /// worker endpoint, when it said.
    case coordinatorStoodDown(active: String?)
    /// Nothing was heard from the coordinator for `heartbeatLiveness` intervals; saying HELLO again.
    case coordinatorSilent(after: Duration)
    /// The coordinator ended the session (DISCONNECT); saying HELLO again unless it was `revoked`.
    case disconnected(Disconnect.Reason, detail: String)
    /// A coordinator does not speak this worker's protocol version (it speaks `coordinator`):
    /// the worker waits, and says HELLO again after `retryIn`.
    case versionRefused(coordinator: ProtocolVersions, detail: String, retryIn: Duration)
    /// No coordinator has answered HELLO for this long (down, unreachable, or of a release that
    /// does not answer this worker's version).
    case helloUnanswered(after: Duration)
    /// An ASSIGN was refused with a FAIL of this code.
    case refused(SegmentAttempt, code: Fail.Code)
    /// The coordinator acknowledged a result; it is forgotten.
    case resultAcknowledged(SegmentAttempt, Ack.Acknowledged, Ack.Outcome)
    /// The drain began; the running attempts are handed back at `deadline` if not done by then.
    case draining(running: Int, timeout: Duration)
    /// The drain ended with results the coordinator never acknowledged (it was unreachable).
    case unacknowledgedAtStop(Int)
}
