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
    /// Where the worker's inputs and outputs live. Optional: a worker that predates transfer mode
    /// leaves it out and is a shared-spool worker.
    public var storage: WorkerStorage?
    /// The cores the worker process may use (its CPU affinity, capped by its cgroup's CPU limit),
    /// for `splice workers`. Optional: older workers leave it out.
    public var usableCores: Int?
    /// Encoder threads each slot gets while every slot is busy (usable cores ÷ slots, or
    /// `--codec-threads`), for `splice workers`. Optional: older workers leave it out.
    public var threadsPerSlot: Int?
    /// Where the worker's operations endpoint (`/metrics`) listens as bound, `HOST:PORT`, for
    /// `splice workers` (a second worker on a host moves off the default port). Optional: absent
    /// when it has none, and from older workers.
    public var metricsEndpoint: String?
    /// True from a worker that understands STANDBY and ACTIVE (it may know several coordinators
    /// and follows the active one): a standby coordinator answers its HELLO with STANDBY, and tells
    /// it ACTIVE once it takes over. Absent from older workers, which a standby leaves unanswered
    /// (they say HELLO again until the coordinator they know is active).
    public var standbyAware: Bool?
    /// The worker-protocol versions the worker speaks (version 3 on; absent from a version-2
    /// worker, which speaks only 2). The HELLO goes in the newest of them; the coordinator answers
    /// in the newest both speak, or refuses with DISCONNECT `unsupported-version`.
    public var protocolVersions: ProtocolVersions?

    public init(
        workerName: String, slots: Int, encoders: [String], running: [SegmentAttempt] = [], finished: [Complete] = [],
        failed: [Fail] = [], software: String = "", storage: WorkerStorage? = nil, usableCores: Int? = nil,
        threadsPerSlot: Int? = nil, metricsEndpoint: String? = nil, standbyAware: Bool? = nil,
        protocolVersions: ProtocolVersions? = nil
    ) {
        self.protocolVersions = protocolVersions
        self.standbyAware = standbyAware
        self.workerName = workerName
        self.slots = slots
        self.encoders = encoders
        self.running = running
        self.finished = finished
        self.failed = failed
        self.software = software
        self.storage = storage
        self.usableCores = usableCores
        self.threadsPerSlot = threadsPerSlot
        self.metricsEndpoint = metricsEndpoint
    }
}

/// How a worker reaches a segment's input and hands back its output (HELLO's `storage`).
public enum WorkerStorage: String, Sendable, Codable, Hashable {
    /// It sees the sources and the coordinator's spool at the same paths (NFS, a SAN).
    case spool
    /// It sees none of the coordinator's files: each ASSIGN names a source excerpt to fetch from
    /// the coordinator's data endpoint, and the result is fetched back from the worker's
    /// (`r-<lease token>`) before its COMPLETE is committed.
    case transfer
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
    /// The leadership epoch of the coordinator that welcomes (docs/coordinator.md, Standby
    /// coordinators): a worker that knows several coordinators follows the highest epoch it hears
    /// of. Absent from older coordinators (taken as 0).
    public var epoch: Int64?

    public init(session: String, heartbeatIntervalMilliseconds: Int, heartbeatLiveness: Int, epoch: Int64? = nil) {
        self.epoch = epoch
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
    /// For a transfer-mode worker: the segment's source excerpt, offered to this worker's key on
    /// the coordinator's data endpoint (`x-<lease token>`), with its size and SHA-256. Absent for
    /// a shared-spool worker.
    public var excerpt: Offer?
    /// For a shared-spool worker whose job's source it must not open itself (an object in
    /// storage, which only the coordinator has credentials for): the segment's source excerpt,
    /// cut by the coordinator into the shared spool, to encode from instead of the source. Absent
    /// otherwise (and for transfer-mode workers, which get `excerpt`).
    public var excerptPath: String?

    public init(
        attempt: SegmentAttempt, outputPath: String, leaseMilliseconds: Int, progressIntervalMilliseconds: Int,
        spec: JSONPayload, excerpt: Offer? = nil, excerptPath: String? = nil
    ) {
        self.attempt = attempt
        self.outputPath = outputPath
        self.leaseMilliseconds = leaseMilliseconds
        self.progressIntervalMilliseconds = progressIntervalMilliseconds
        self.spec = spec
        self.excerpt = excerpt
        self.excerptPath = excerptPath
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
    /// Video frames written, for statistics (the coordinator's frames per second). Optional: a
    /// worker that predates it leaves it out.
    public var videoFrames: Int?
    /// The segment's video figures (bytes, bit rate, mean QP), kept with the segment for
    /// `splice status`. Absent for a segment without video and from a worker that predates them.
    public var figures: SegmentFigures?

    public init(
        attempt: SegmentAttempt, outputPath: String, checksum: SHA256Digest, sizeBytes: Int64, encodeMilliseconds: Int,
        videoFrames: Int? = nil, figures: SegmentFigures? = nil
    ) {
        self.attempt = attempt
        self.outputPath = outputPath
        self.checksum = checksum
        self.sizeBytes = sizeBytes
        self.encodeMilliseconds = encodeMilliseconds
        self.videoFrames = videoFrames
        self.figures = figures
    }
}

/// FAIL (worker → coordinator): the attempt failed (or was handed back on drain). Resent until
/// ACKed.
public struct Fail: MessageBody, Hashable {
    public static let messageType = "FAIL"
    public var attempt: SegmentAttempt
    /// A stable code (`undecodable-input`, `encoder-missing`, `drained`…) and so whose fault it is.
    public var code: Code
    /// What went wrong, for people.
    public var reason: String
    /// Whether another attempt (on any worker) may succeed.
    public var retryable: Bool

    public init(attempt: SegmentAttempt, code: Code, reason: String, retryable: Bool) {
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
/// `revoked` means its key was revoked: it must stop (it will be refused on reconnect);
/// `unsupported-version` that the coordinator does not speak the worker's version: it waits and
/// says HELLO again now and then (one side is being upgraded). Its shape is frozen from version 3
/// on: every later version reads a DISCONNECT of any version from 3 up.
public struct Disconnect: MessageBody, Hashable {
    public static let messageType = "DISCONNECT"

    public enum Reason: String, Sendable, Hashable, Codable {
        /// The sender is shutting down.
        case shutdown
        /// The worker's key has been revoked.
        case revoked
        /// The coordinator does not know this session (e.g. it restarted): send HELLO.
        case reregister
        /// The peer broke the protocol (unexpected or malformed message). Also the reason a
        /// coordinator gives a worker too old to know `unsupported-version` (version 2 and older).
        case protocolError = "protocol-error"
        /// The coordinator does not speak the worker's protocol version; `versions` says which it
        /// does (version 3 on).
        case unsupportedVersion = "unsupported-version"
    }

    public var reason: Reason
    public var detail: String
    /// With `unsupported-version` (and the `protocol-error` that stands for it to older workers):
    /// the versions the coordinator speaks.
    public var versions: ProtocolVersions?

    public init(reason: Reason, detail: String = "", versions: ProtocolVersions? = nil) {
        self.reason = reason
        self.detail = detail
        self.versions = versions
    }
}

/// STANDBY (coordinator → worker): this coordinator is not the active one. The answer of a
/// standby to the HELLO of a worker that says it is `standbyAware`, and what an active coordinator
/// that lost its lease tells the sessions it had. Sent only to workers that said `standbyAware`.
public struct Standby: MessageBody, Hashable {
    public static let messageType = "STANDBY"
    /// The epoch of the active coordinator as this one last read it (absent when no coordinator is
    /// active, or the database could not be read): a worker registered under a lower epoch knows
    /// its coordinator was deposed.
    public var epoch: Int64?
    /// The active coordinator's worker endpoint as it advertises it, when one is active.
    public var active: String?

    public init(epoch: Int64? = nil, active: String? = nil) {
        self.epoch = epoch
        self.active = active
    }
}

/// ACTIVE (coordinator → worker): this coordinator has just become the active one, at `epoch`:
/// say HELLO here. Sent to the `standbyAware` workers it heard from while it stood by.
public struct Active: MessageBody, Hashable {
    public static let messageType = "ACTIVE"
    public var epoch: Int64

    public init(epoch: Int64) {
        self.epoch = epoch
    }
}

extension Fail {
    /// A FAIL's stable code: kebab-case text on the wire, defined here once with whose fault it
    /// is (`blame`). The set is open — a newer worker may send a code this build does not know,
    /// which counts as the segment's — so it is a struct of constants, not an enum; the codes this
    /// build knows are the enum ``Known``, from which every constant, `allCases` (the metric
    /// labels) and `blame` (an exhaustive switch) are made, so a code cannot be added to one and
    /// missed by the others.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible, CaseIterable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The codes this build knows, each documented at its constant below.
        public enum Known: String, Sendable, Hashable, CaseIterable {
            case outputOutsideSpool = "output-outside-spool"
            case spoolUnwritable = "spool-unwritable"
            case spoolFull = "spool-full"
            case encoderMissing = "encoder-missing"
            case sourceNotFound = "source-not-found"
            case transferFailed = "transfer-failed"
            case scratchFull = "scratch-full"
            case drained
            case notRegistered = "not-registered"
            case noFreeSlot = "no-free-slot"
            case invalidAssign = "invalid-assign"
            case invalidSpec = "invalid-spec"
            case invalidSettings = "invalid-settings"
            case invalidMedia = "invalid-media"
            case noUsableTrack = "no-usable-track"
            case undecodableInput = "undecodable-input"
            case encodeFailed = "encode-failed"
            case writeFailed = "write-failed"
            case outputExists = "output-exists"
            case incompatibleSegments = "incompatible-segments"
            case cancelled
            case internalError = "internal-error"
        }

        public init(_ known: Known) { rawValue = known.rawValue }

        /// The code as one this build knows; nil for a newer worker's code.
        public var known: Known? { Known(rawValue: rawValue) }

        /// Every code this build knows.
        public static var allCases: [Code] { Known.allCases.map(Code.init) }

        // MARK: The worker's set-up (`Blame.worker`)

        /// The ASSIGN's output path is not inside this worker's spool.
        public static let outputOutsideSpool = Code(.outputOutsideSpool)
        /// The worker cannot create the job's directory in its spool.
        public static let spoolUnwritable = Code(.spoolUnwritable)
        /// The spool (or the worker's quota on it) is full.
        public static let spoolFull = Code(.spoolFull)
        /// The worker has no encoder for the settings.
        public static let encoderMissing = Code(.encoderMissing)
        /// The worker cannot open the source at its path.
        public static let sourceNotFound = Code(.sourceNotFound)
        /// A transfer-mode worker could not fetch the segment's source excerpt (the data endpoint
        /// is unreachable, the transfer stalled or arrived damaged), or its scratch is full.
        public static let transferFailed = Code(.transferFailed)
        /// A transfer-mode worker's scratch (its `--scratch-limit`) has no room for the segment's
        /// source excerpt beside what it already holds.
        public static let scratchFull = Code(.scratchFull)

        // MARK: Nobody's (`Blame.nobody`)

        /// The worker is shutting down (or handed the attempt back at its drain timeout).
        public static let drained = Code(.drained)
        /// The ASSIGN reached the worker before its WELCOME.
        public static let notRegistered = Code(.notRegistered)
        /// The worker was already encoding as many segments as it has slots.
        public static let noFreeSlot = Code(.noFreeSlot)

        // MARK: The segment's (`Blame.segment`)

        /// The ASSIGN's lease or progress interval is not positive.
        public static let invalidAssign = Code(.invalidAssign)
        /// The ASSIGN's spec is not a valid work order.
        public static let invalidSpec = Code(.invalidSpec)
        /// The export settings cannot be used.
        public static let invalidSettings = Code(.invalidSettings)
        /// The source is not media the decoder can read.
        public static let invalidMedia = Code(.invalidMedia)
        /// The source has no track of a kind the segment needs.
        public static let noUsableTrack = Code(.noUsableTrack)
        /// The segment's range could not be decoded.
        public static let undecodableInput = Code(.undecodableInput)
        /// The encoder failed.
        public static let encodeFailed = Code(.encodeFailed)
        /// Writing the output failed for a reason other than a full spool.
        public static let writeFailed = Code(.writeFailed)
        /// A file was already where the output goes.
        public static let outputExists = Code(.outputExists)
        /// Segments do not belong together.
        public static let incompatibleSegments = Code(.incompatibleSegments)
        /// The encode stopped without being asked to.
        public static let cancelled = Code(.cancelled)
        /// Something the worker did not expect.
        public static let internalError = Code(.internalError)

        /// Whose fault a failure with this code is; a code this build does not know is the segment's.
        public var blame: Blame {
            guard let known else { return .segment }
            switch known {
            case .outputOutsideSpool, .spoolUnwritable, .encoderMissing, .sourceNotFound, .transferFailed, .scratchFull:
                return .worker
            case .drained, .notRegistered, .noFreeSlot:
                return .nobody
            case .spoolFull, .invalidAssign, .invalidSpec, .invalidSettings, .invalidMedia, .noUsableTrack,
                 .undecodableInput, .encodeFailed, .writeFailed, .outputExists, .incompatibleSegments, .cancelled,
                 .internalError:
                return .segment
            }
        }
    }

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

    public var blame: Blame { code.blame }
}
