public import SpliceCore
public import SpliceJSON

// The bodies of the worker protocol's messages. Durations are whole milliseconds: workers and
// coordinator do not share a clock, so the protocol never sends absolute deadlines. A worker
// computes its lease deadline on its own clock from when it *sent* an ACCEPT or PROGRESS that the
// coordinator acknowledged (ACK `accepted`): the coordinator extended the lease to at least that
// send time plus `leaseMilliseconds`. See docs/protocol.md, "Leases".

/// HELLO (worker → coordinator): registers or re-registers a worker session. Sent on connect,
/// after a DISCONNECT, and whenever the coordinator answers with DISCONNECT(`reregister`). It
/// lists what the worker still holds so that nothing it did is lost across a coordinator restart.
public struct Hello: MessageBody, Hashable {
    public static let messageType = "HELLO"
    /// A human-readable worker name (host name by default). Not an identity: the authenticated
    /// key is.
    public var workerName: String
    /// How many segments it encodes at once.
    public var slots: Int
    /// The encoders it can run (FFmpeg encoder names: `libx264`, `aac`…).
    public var encoders: [String]
    /// Segments it is still encoding.
    public var running: [SegmentAttempt]
    /// Results it holds and has not had acknowledged (it resends them until ACKed).
    public var finished: [Complete]
    /// Failures it has not had acknowledged.
    public var failed: [Fail]
    /// The Splice version of the worker, for logs.
    public var software: String

    public init(
        workerName: String, slots: Int, encoders: [String], running: [SegmentAttempt] = [], finished: [Complete] = [],
        failed: [Fail] = [], software: String = ""
    ) {
        self.workerName = workerName
        self.slots = slots
        self.encoders = encoders
        self.running = running
        self.finished = finished
        self.failed = failed
        self.software = software
    }
}

/// WELCOME (coordinator → worker): the session is registered.
public struct Welcome: MessageBody, Hashable {
    public static let messageType = "WELCOME"
    /// Identifies this coordinator session (changes when the coordinator restarts), for logs.
    public var session: String
    /// How often each side sends HEARTBEAT when it has nothing else to send.
    public var heartbeatIntervalMilliseconds: Int
    /// After this many intervals of silence a side considers the other gone (the worker then
    /// reconnects and says HELLO again; the coordinator stops assigning to it).
    public var heartbeatLiveness: Int

    public init(session: String, heartbeatIntervalMilliseconds: Int, heartbeatLiveness: Int) {
        self.session = session
        self.heartbeatIntervalMilliseconds = heartbeatIntervalMilliseconds
        self.heartbeatLiveness = heartbeatLiveness
    }
}

/// ASSIGN (coordinator → worker): encode one segment under a lease. Resent ASSIGNs for the same
/// lease token are duplicates the worker answers with ACCEPT again.
public struct Assign: MessageBody, Hashable {
    public static let messageType = "ASSIGN"
    public var attempt: SegmentAttempt
    /// Where to write the output: an attempt-unique path in the shared spool directory.
    public var outputPath: String
    /// How long the lease lasts from when the worker receives this, unless extended by PROGRESS.
    /// A worker that has not been able to extend it for longer than this minus its safety margin
    /// must abort the encode: the segment may be re-leased to someone else.
    public var leaseMilliseconds: Int
    /// How often to send PROGRESS (each one extends the lease).
    public var progressIntervalMilliseconds: Int
    /// The segment's work order (the cluster layer's `SegmentWorkOrder`), opaque to the wire
    /// layer: encoded once by the coordinator, decoded once by the worker
    /// (`spec.decode(SegmentWorkOrder.self)`).
    public var spec: JSONPayload

    public init(
        attempt: SegmentAttempt, outputPath: String, leaseMilliseconds: Int, progressIntervalMilliseconds: Int,
        spec: JSONPayload
    ) {
        self.attempt = attempt
        self.outputPath = outputPath
        self.leaseMilliseconds = leaseMilliseconds
        self.progressIntervalMilliseconds = progressIntervalMilliseconds
        self.spec = spec
    }
}

/// ACCEPT (worker → coordinator): the worker has started the attempt. Extends the lease like
/// PROGRESS and is acknowledged the same way.
public struct Accept: MessageBody, Hashable {
    public static let messageType = "ACCEPT"
    public var attempt: SegmentAttempt

    public init(attempt: SegmentAttempt) { self.attempt = attempt }
}

/// PROGRESS (worker → coordinator): how far the encode is. Also extends the lease: the
/// coordinator answers ACK `accepted` once the extension is committed, or ACK `stale` when the
/// lease is no longer this attempt's (the worker then aborts at once).
public struct Progress: MessageBody, Hashable {
    public static let messageType = "PROGRESS"
    public var attempt: SegmentAttempt
    /// 0…1.
    public var fraction: Double
    /// Frames encoded so far.
    public var frames: Int
    /// Frames expected in total, when known.
    public var totalFrames: Int?

    public init(attempt: SegmentAttempt, fraction: Double, frames: Int, totalFrames: Int? = nil) {
        self.attempt = attempt
        self.fraction = fraction
        self.frames = frames
        self.totalFrames = totalFrames
    }
}

/// COMPLETE (worker → coordinator): the segment is written. Resent until ACKed.
public struct Complete: MessageBody, Hashable {
    public static let messageType = "COMPLETE"
    public var attempt: SegmentAttempt
    /// Where the output is (the ASSIGN's `outputPath`).
    public var outputPath: String
    /// The SHA-256 of the whole output file (`sha256:` + 64 hex digits on the wire).
    public var checksum: SHA256Digest
    /// The output file's size.
    public var sizeBytes: Int64
    /// How long the encode took, for statistics.
    public var encodeMilliseconds: Int

    public init(
        attempt: SegmentAttempt, outputPath: String, checksum: SHA256Digest, sizeBytes: Int64, encodeMilliseconds: Int
    ) {
        self.attempt = attempt
        self.outputPath = outputPath
        self.checksum = checksum
        self.sizeBytes = sizeBytes
        self.encodeMilliseconds = encodeMilliseconds
    }
}

/// FAIL (worker → coordinator): the attempt failed (or was handed back on drain). Resent until
/// ACKed.
public struct Fail: MessageBody, Hashable {
    public static let messageType = "FAIL"
    public var attempt: SegmentAttempt
    /// A stable error code (`undecodable-input`, `encoder-missing`, `drained`…).
    public var code: String
    /// What went wrong, for people.
    public var reason: String
    /// Whether another attempt (on any worker) may succeed.
    public var retryable: Bool

    public init(attempt: SegmentAttempt, code: String, reason: String, retryable: Bool) {
        self.attempt = attempt
        self.code = code
        self.reason = reason
        self.retryable = retryable
    }
}

/// ACK (coordinator → worker): an ACCEPT, PROGRESS, COMPLETE or FAIL has been handled — sent
/// only after the database commit. For COMPLETE and FAIL a duplicate gets the same ACK again, so
/// the worker stops resending and drops its copy of the result whatever the outcome. For ACCEPT
/// and PROGRESS it confirms the lease extension (`accepted`) or tells the worker its lease is gone
/// (`stale`).
public struct Ack: MessageBody, Hashable {
    public static let messageType = "ACK"

    /// Which message is acknowledged.
    public enum Acknowledged: String, Sendable, Hashable, Codable {
        case accept = "ACCEPT"
        case progress = "PROGRESS"
        case complete = "COMPLETE"
        case fail = "FAIL"
    }

    /// What the coordinator did with it.
    public enum Outcome: String, Sendable, Hashable, Codable {
        /// Committed now (for ACCEPT and PROGRESS: the lease is extended).
        case accepted
        /// Committed earlier (a resend): nothing changed.
        case duplicate
        /// The lease token is no longer current (the segment was re-leased, the job cancelled):
        /// discarded; the worker stops the encode if it still runs and deletes its output.
        case stale
    }

    public var attempt: SegmentAttempt
    public var acknowledges: Acknowledged
    public var outcome: Outcome

    public init(attempt: SegmentAttempt, acknowledges: Acknowledged, outcome: Outcome) {
        self.attempt = attempt
        self.acknowledges = acknowledges
        self.outcome = outcome
    }
}

/// CANCEL (coordinator → worker): stop an attempt and delete its partial output. Idempotent.
public struct Cancel: MessageBody, Hashable {
    public static let messageType = "CANCEL"

    public enum Reason: String, Sendable, Hashable, Codable {
        /// The job was cancelled.
        case jobCancelled = "job-cancelled"
        /// The lease expired or the segment went to another attempt.
        case leaseLost = "lease-lost"
        /// The job failed (another segment failed for good).
        case jobFailed = "job-failed"
    }

    public var attempt: SegmentAttempt
    public var reason: Reason

    public init(attempt: SegmentAttempt, reason: Reason) {
        self.attempt = attempt
        self.reason = reason
    }
}

/// HEARTBEAT (both ways): I am alive. Sent when a side has sent nothing else for an interval.
public struct Heartbeat: MessageBody, Hashable {
    public static let messageType = "HEARTBEAT"
    public init() {}
}

/// DISCONNECT (both ways): the session ends. A worker receiving `reregister` says HELLO again;
/// `revoked` means its key was revoked: it must stop (it will be refused on reconnect).
public struct Disconnect: MessageBody, Hashable {
    public static let messageType = "DISCONNECT"

    public enum Reason: String, Sendable, Hashable, Codable {
        /// The sender is shutting down.
        case shutdown
        /// The worker's key has been revoked.
        case revoked
        /// The coordinator does not know this session (e.g. it restarted): send HELLO.
        case reregister
        /// The peer broke the protocol (unexpected or malformed message).
        case protocolError = "protocol-error"
    }

    public var reason: Reason
    public var detail: String

    public init(reason: Reason, detail: String = "") {
        self.reason = reason
        self.detail = detail
    }
}

extension Fail {
    /// Whose fault a failed attempt is, read from its `code`. It decides what the attempt costs
    /// (docs/protocol.md, FAIL codes).
    public enum Blame: Sendable, Hashable {
        /// The segment's own (its input, its settings, the encode itself): the attempt is spent,
        /// and a permanent failure fails the job.
        case segment
        /// The worker's set-up (its spool, its encoders, what it can read or write): the segment
        /// goes back at once without spending an attempt, and the worker is quarantined.
        case worker
        /// Nobody's (the worker is leaving, or was not ready for it): the segment goes back at
        /// once without spending an attempt.
        case nobody
    }

    /// Codes a worker uses for refusals caused by its own set-up.
    public static let workerSetupCodes: Set<String> = [
        "output-outside-spool", "spool-unwritable", "spool-full", "encoder-missing", "source-not-found",
    ]
    /// Codes for refusals that are nobody's fault.
    public static let nobodysCodes: Set<String> = ["drained", "not-registered", "no-free-slot"]

    public var blame: Blame {
        if Self.workerSetupCodes.contains(code) { return .worker }
        if Self.nobodysCodes.contains(code) { return .nobody }
        return .segment
    }
}
