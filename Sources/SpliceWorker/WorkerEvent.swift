package import SpliceCore
package import SpliceWire

/// Something that happened to a worker, fed to ``WorkerStateMachine/handle(_:at:)`` with the time
/// it is handled on the worker's own monotonic clock.
package enum WorkerEvent: Sendable, Hashable {
    /// The daemon is up: say HELLO.
    case start
    /// Time passed: resend HELLO, send PROGRESS and HEARTBEAT, resend results, check leases,
    /// check the coordinator's liveness and the drain. The shell ticks a few times per second.
    case tick
    /// A well-formed message from coordinator `from` (its index in the worker's list; rejected
    /// ones never reach the machine).
    case received(CoordinatorMessage, from: Int = 0)
    /// The connection to coordinator `index` is up: its handshake completed (again).
    case connected(Int)
    /// The connection to coordinator `index` was lost (libzmq reconnects on its own).
    case disconnected(Int)
    /// A send the machine asked for failed before leaving this process (no connection with
    /// `immediate` on, queue full, socket closed), so no ACK can ever answer it.
    case sendFailed(WorkerMessage)
    /// The encoder of an attempt reports how far it is.
    case encodeProgress(LeaseToken, fraction: Double, frames: Int)
    /// The encoder of an attempt returned (finished, failed, or stopped after an abort).
    case encodeFinished(LeaseToken, EncodeOutcome)
    /// SIGTERM: take no new segments, let the running ones finish (or hand them back after the
    /// drain timeout), get every result acknowledged, then stop.
    case drain
}

/// How one encode ended, as the shell reports it.
package enum EncodeOutcome: Sendable, Hashable {
    /// The output file is complete at the ASSIGN's `outputPath`, with this digest; `videoFrames`
    /// the frames written, `figures` what its video came to (nil without video).
    case completed(checksum: SHA256Digest, sizeBytes: Int64, encodeMilliseconds: Int, videoFrames: Int,
                   figures: SegmentFigures?)
    /// The encode failed; `retryable` comes from the error (`MediaError.isRetryable`).
    case failed(code: Fail.Code, reason: String, retryable: Bool)
    /// The encode stopped because the shell cancelled it (after an ``WorkerDirective/abortEncode(_:because:)``).
    case cancelled
}
