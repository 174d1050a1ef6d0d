public import SpliceCore
public import SpliceJSON

/// The client API: requests from `splice submit/status/jobs/cancel/workers` (DEALER) to the
/// coordinator's API endpoint (ROUTER), each answered by exactly one reply carrying the same
/// envelope `id`. Times are milliseconds since the Unix epoch (UTC).
public enum ClientAPI {
    public static let name = "splice-api"
    public static let version = 1
}

/// A request to the coordinator's API endpoint.
public enum APIRequest: WireMessage, Hashable {
    case submit(SubmitJob)
    case status(JobStatusQuery)
    case list(ListJobs)
    case cancel(CancelJob)
    case workers(ListWorkers)
    case enroll(EnrollWorker)
    case revoke(RevokeWorker)
    case createToken(CreateToken)
    case tokens(ListTokens)
    case revokeToken(RevokeToken)
    case createJoinToken(CreateJoinToken)
    case joinTokens(ListJoinTokens)
    case revokeJoinToken(RevokeJoinToken)
    case pruneWorkers(PruneWorkers)
    case pruneJobs(PruneJobs)

    public static let protocolName = ClientAPI.name
    public static let protocolVersion = ClientAPI.version
    public static let catalogue = MessageCatalogue<APIRequest>([
        .body(SubmitJob.self, APIRequest.submit),
        .body(JobStatusQuery.self, APIRequest.status),
        .body(ListJobs.self, APIRequest.list),
        .body(CancelJob.self, APIRequest.cancel),
        .body(ListWorkers.self, APIRequest.workers),
        .body(EnrollWorker.self, APIRequest.enroll),
        .body(RevokeWorker.self, APIRequest.revoke),
        .body(CreateToken.self, APIRequest.createToken),
        .body(ListTokens.self, APIRequest.tokens),
        .body(RevokeToken.self, APIRequest.revokeToken),
        .body(CreateJoinToken.self, APIRequest.createJoinToken),
        .body(ListJoinTokens.self, APIRequest.joinTokens),
        .body(RevokeJoinToken.self, APIRequest.revokeJoinToken),
        .body(PruneWorkers.self, APIRequest.pruneWorkers),
        .body(PruneJobs.self, APIRequest.pruneJobs),
    ])

    public var body: any MessageBody {
        switch self {
        case .submit(let body): body
        case .status(let body): body
        case .list(let body): body
        case .cancel(let body): body
        case .workers(let body): body
        case .enroll(let body): body
        case .revoke(let body): body
        case .createToken(let body): body
        case .tokens(let body): body
        case .revokeToken(let body): body
        case .createJoinToken(let body): body
        case .joinTokens(let body): body
        case .revokeJoinToken(let body): body
        case .pruneWorkers(let body): body
        case .pruneJobs(let body): body
        }
    }

    /// The scope a key needs for this request (docs/api.md, Tokens and scopes).
    public var scope: APIScope {
        switch self {
        case .status, .list, .workers: .read
        case .submit: .submit
        case .cancel: .cancel
        case .enroll, .revoke, .createToken, .tokens, .revokeToken, .createJoinToken, .joinTokens, .revokeJoinToken,
             .pruneWorkers, .pruneJobs: .admin
        }
    }
}

/// The coordinator's reply to an `APIRequest`.
public enum APIReply: WireMessage, Hashable {
    case submitted(JobSubmitted)
    case status(JobStatus)
    case jobs(JobList)
    case cancelled(JobCancelled)
    case workers(WorkerList)
    case workerKey(WorkerKeyChanged)
    case token(TokenChanged)
    case tokens(TokenList)
    case joinToken(JoinTokenChanged)
    case joinTokens(JoinTokenList)
    case workersPruned(WorkersPruned)
    case jobsPruned(JobsPruned)
    case error(APIError)

    public static let protocolName = ClientAPI.name
    public static let protocolVersion = ClientAPI.version
    public static let catalogue = MessageCatalogue<APIReply>([
        .body(JobSubmitted.self, APIReply.submitted),
        .body(JobStatus.self, APIReply.status),
        .body(JobList.self, APIReply.jobs),
        .body(JobCancelled.self, APIReply.cancelled),
        .body(WorkerList.self, APIReply.workers),
        .body(WorkerKeyChanged.self, APIReply.workerKey),
        .body(TokenChanged.self, APIReply.token),
        .body(TokenList.self, APIReply.tokens),
        .body(JoinTokenChanged.self, APIReply.joinToken),
        .body(JoinTokenList.self, APIReply.joinTokens),
        .body(WorkersPruned.self, APIReply.workersPruned),
        .body(JobsPruned.self, APIReply.jobsPruned),
        .body(APIError.self, APIReply.error),
    ])

    public var body: any MessageBody {
        switch self {
        case .submitted(let body): body
        case .status(let body): body
        case .jobs(let body): body
        case .cancelled(let body): body
        case .workers(let body): body
        case .workerKey(let body): body
        case .token(let body): body
        case .tokens(let body): body
        case .joinToken(let body): body
        case .joinTokens(let body): body
        case .workersPruned(let body): body
        case .jobsPruned(let body): body
        case .error(let body): body
        }
    }
}

// MARK: - Requests

/// SUBMIT: transcode `input` into `output`. Paths are absolute (the CLI resolves them).
public struct SubmitJob: MessageBody, Hashable {
    public static let messageType = "SUBMIT"
    public var input: String
    public var output: String
    /// The export settings (codec, size, bitrate, range, segment length…): the media module's
    /// `TranscodeRequest`, opaque to the wire layer; exact times inside, never floating-point seconds.
    public var export: JSONPayload
    /// Higher runs first; nil is the default priority.
    public var priority: Int?
    /// Makes the submit safe to resend: the client picks it once per job (a UUID) and reuses it
    /// on every retry; the coordinator records it with the job and answers a repeat with the
    /// job it already created.
    public var submissionKey: String?

    public init(
        input: String, output: String, export: JSONPayload, priority: Int? = nil, submissionKey: String? = nil
    ) {
        self.input = input
        self.output = output
        self.export = export
        self.priority = priority
        self.submissionKey = submissionKey
    }
}

/// STATUS: one job's state.
public struct JobStatusQuery: MessageBody, Hashable {
    public static let messageType = "STATUS"
    public var job: JobID
    public init(job: JobID) { self.job = job }
}

/// LIST: recent jobs, newest first.
public struct ListJobs: MessageBody, Hashable {
    public static let messageType = "LIST"
    /// Only jobs in this state; nil for all.
    public var state: JobState?
    public var limit: Int?
    public init(state: JobState? = nil, limit: Int? = nil) {
        self.state = state
        self.limit = limit
    }
}

/// CANCEL: cancel a job; its running segments get CANCEL and their partial files are removed.
public struct CancelJob: MessageBody, Hashable {
    public static let messageType = "CANCEL"
    public var job: JobID
    public init(job: JobID) { self.job = job }
}

/// WORKERS: the enrolled workers and their sessions.
public struct ListWorkers: MessageBody, Hashable {
    public static let messageType = "WORKERS"
    public init() {}
}

/// ENROLL: admit a worker key.
public struct EnrollWorker: MessageBody, Hashable {
    public static let messageType = "ENROLL"
    public var publicKey: CurvePublicKey
    /// A label for `splice workers`.
    public var name: String?
    public init(publicKey: CurvePublicKey, name: String? = nil) {
        self.publicKey = publicKey
        self.name = name
    }
}

/// REVOKE: refuse a worker key from now on and end its live session.
public struct RevokeWorker: MessageBody, Hashable {
    public static let messageType = "REVOKE"
    public var publicKey: CurvePublicKey
    public init(publicKey: CurvePublicKey) { self.publicKey = publicKey }
}

// MARK: - Replies

/// SUBMITTED: the job is recorded.
public struct JobSubmitted: MessageBody, Hashable {
    public static let messageType = "SUBMITTED"
    public var job: JobID
    public init(job: JobID) { self.job = job }
}

/// JOB_STATUS: a job's state and progress.
public struct JobStatus: MessageBody, Hashable {
    public static let messageType = "JOB_STATUS"
    public var job: JobID
    public var state: JobState
    public var input: String
    public var output: String
    public var priority: Int
    /// Known once planning is done.
    public var segmentsTotal: Int?
    public var segmentsDone: Int
    /// 0…1 over the whole job.
    public var fraction: Double
    public var submittedAtMilliseconds: Int64
    public var finishedAtMilliseconds: Int64?
    /// Why the job failed, for people.
    public var error: String?
    /// Why a running job makes no progress, when a worker handed a segment back and nothing has
    /// happened since (every worker refuses it: their spool, their encoders…), for people.
    public var waiting: String?
    /// Backup attempts started for stragglers, and those that finished before the attempt they
    /// backed up; absent while there were none.
    public var backupsStarted: Int?
    public var backupsWon: Int?
    /// Every segment of the plan, by index, with its figures once done (STATUS only; absent in
    /// JOB_LIST, before planning, and from a coordinator that predates them).
    public var segments: [SegmentStatus]?

    public init(
        job: JobID, state: JobState, input: String, output: String, priority: Int, segmentsTotal: Int?,
        segmentsDone: Int, fraction: Double, submittedAtMilliseconds: Int64, finishedAtMilliseconds: Int64? = nil,
        error: String? = nil, waiting: String? = nil, backupsStarted: Int? = nil, backupsWon: Int? = nil,
        segments: [SegmentStatus]? = nil
    ) {
        self.job = job
        self.state = state
        self.input = input
        self.output = output
        self.priority = priority
        self.segmentsTotal = segmentsTotal
        self.segmentsDone = segmentsDone
        self.fraction = fraction
        self.submittedAtMilliseconds = submittedAtMilliseconds
        self.finishedAtMilliseconds = finishedAtMilliseconds
        self.error = error
        self.waiting = waiting
        self.backupsStarted = backupsStarted
        self.backupsWon = backupsWon
        self.segments = segments
    }
}

/// One segment in JOB_STATUS: its index in the plan, its state and, once done, what its video came
/// to — so a starved segment shows. Audio segments have no figures.
public struct SegmentStatus: Codable, Sendable, Hashable {
    public var index: Int
    public var state: SegmentState
    public var figures: SegmentFigures?

    public init(index: Int, state: SegmentState, figures: SegmentFigures? = nil) {
        self.index = index
        self.state = state
        self.figures = figures
    }
}

/// JOB_LIST: the answer to LIST.
public struct JobList: MessageBody, Hashable {
    public static let messageType = "JOB_LIST"
    public var jobs: [JobStatus]
    public init(jobs: [JobStatus]) { self.jobs = jobs }
}

/// CANCELLED: the job's state after the cancel (already finished jobs keep their state).
public struct JobCancelled: MessageBody, Hashable {
    public static let messageType = "CANCELLED"
    public var job: JobID
    public var state: JobState
    public init(job: JobID, state: JobState) {
        self.job = job
        self.state = state
    }
}

/// One worker as `splice workers` shows it.
public struct WorkerInfo: Codable, Sendable, Hashable {
    public var publicKey: CurvePublicKey
    public var name: String?
    /// False once revoked.
    public var enrolled: Bool
    public var connected: Bool
    public var slots: Int?
    public var running: Int
    public var lastSeenAtMilliseconds: Int64?
    /// How much longer it gets no assignments, after refusing one for a reason of its own.
    public var quarantineRemainingMilliseconds: Int?
    /// The refusal that put it in quarantine.
    public var quarantineReason: String?
    /// How its current session reaches media (nil: not connected, or an older coordinator).
    public var storage: WorkerStorage?
    /// Transfer mode: source excerpts it fetched from the coordinator and results the coordinator
    /// fetched from it, in bytes, since the coordinator started.
    public var bytesIn: Int64?
    public var bytesOut: Int64?
    /// What its current session's HELLO said (nil: not connected, or an older worker or
    /// coordinator): the cores it may use (CPU affinity capped by its cgroup's CPU limit), encoder
    /// threads per slot while every slot is busy, and its operations endpoint (`HOST:PORT`).
    public var usableCores: Int?
    public var threadsPerSlot: Int?
    public var metricsEndpoint: String?
    /// The worker-protocol version its current session speaks (2: a worker one release older than
    /// a coordinator of version 3); nil when not connected, or from an older coordinator.
    public var protocolVersion: Int?

    public init(
        publicKey: CurvePublicKey, name: String?, enrolled: Bool, connected: Bool, slots: Int?, running: Int,
        lastSeenAtMilliseconds: Int64?, quarantineRemainingMilliseconds: Int? = nil, quarantineReason: String? = nil,
        storage: WorkerStorage? = nil, bytesIn: Int64? = nil, bytesOut: Int64? = nil, usableCores: Int? = nil,
        threadsPerSlot: Int? = nil, metricsEndpoint: String? = nil, protocolVersion: Int? = nil
    ) {
        self.protocolVersion = protocolVersion
        self.publicKey = publicKey
        self.name = name
        self.enrolled = enrolled
        self.connected = connected
        self.slots = slots
        self.running = running
        self.lastSeenAtMilliseconds = lastSeenAtMilliseconds
        self.quarantineRemainingMilliseconds = quarantineRemainingMilliseconds
        self.quarantineReason = quarantineReason
        self.storage = storage
        self.bytesIn = bytesIn
        self.bytesOut = bytesOut
        self.usableCores = usableCores
        self.threadsPerSlot = threadsPerSlot
        self.metricsEndpoint = metricsEndpoint
    }
}

/// WORKER_LIST: the answer to WORKERS.
public struct WorkerList: MessageBody, Hashable {
    public static let messageType = "WORKER_LIST"
    public var workers: [WorkerInfo]
    public init(workers: [WorkerInfo]) { self.workers = workers }
}

/// WORKER_KEY: the answer to ENROLL and REVOKE.
public struct WorkerKeyChanged: MessageBody, Hashable {
    public static let messageType = "WORKER_KEY"
    public var publicKey: CurvePublicKey
    /// Whether the key is now admitted.
    public var enrolled: Bool
    /// Live sessions ended (REVOKE).
    public var sessionsClosed: Int
    public init(publicKey: CurvePublicKey, enrolled: Bool, sessionsClosed: Int = 0) {
        self.publicKey = publicKey
        self.enrolled = enrolled
        self.sessionsClosed = sessionsClosed
    }
}

/// ERROR: the request failed — the API's error, of the shape every Splice error has.
public struct APIError: MessageBody, Hashable, SpliceError {
    public static let messageType = "ERROR"

    /// A stable code, kebab-case on the wire. Open: a newer coordinator may answer with a code
    /// this client does not know.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// No such job or worker key.
        public static let notFound = Code(rawValue: "not-found")
        /// The request can never succeed as it is (a relative path, invalid settings, an unknown
        /// state, a revoked key enrolled again…).
        public static let invalidRequest = Code(rawValue: "invalid-request")
        /// The coordinator cannot answer now (its store is unreachable); try again.
        public static let unavailable = Code(rawValue: "unavailable")
        /// The coordinator failed in a way it did not expect.
        public static let `internal` = Code(rawValue: "internal")
        /// The request was larger than the coordinator reads (docs/protocol.md, Limits).
        public static let tooLarge = Code(rawValue: "too-large")
        /// The envelope's `version` is not the one the coordinator speaks.
        public static let unsupportedVersion = Code(rawValue: "unsupported-version")
        /// The SUBMIT's `submissionKey` already created a job from a different request.
        public static let conflict = Code(rawValue: "conflict")
        /// The SUBMIT's output exists and `export.overwrite` is false.
        public static let outputExists = Code(rawValue: "output-exists")
        /// This coordinator is a standby: it answers reads, and writes go to the active one,
        /// named in `active` when there is one (a client sends the request there).
        public static let notActive = Code(rawValue: "not-active")
        /// The client's key lacks the scope the request needs (`--admin-keys` lines may limit a key
        /// to some scopes), or a path lies outside what its credential may name.
        public static let forbidden = Code(rawValue: "forbidden")
    }

    public var code: Code
    /// What went wrong and what to do, for people.
    public var message: String
    /// Whether sending the same request later may succeed (`retryable` on the wire).
    public var isRetryable: Bool
    /// With `not-active`: the active coordinator's API endpoint as it advertises it, when one is
    /// active. Absent otherwise (and from older coordinators).
    public var active: String?

    public init(_ code: Code, _ message: String, isRetryable: Bool = false, active: String? = nil) {
        self.code = code
        self.message = message
        self.isRetryable = isRetryable
        self.active = active
    }

    public var description: String { message }

    private enum CodingKeys: String, CodingKey {
        case code, message, active
        case isRetryable = "retryable"
    }

    /// The answer to a request the endpoint refused before it reached the handler (its request id
    /// could be read): `too-large`, `unsupported-version`, or `invalid-request` naming the field.
    public init(refusing rejection: WireRejection) {
        switch rejection.reason {
        case .oversized:
            self.init(.tooLarge, "the request is \(rejection.detail) (docs/protocol.md, Limits)")
        case .unsupportedVersion:
            self.init(.unsupportedVersion, "unsupported envelope: \(rejection.detail)")
        default:
            self.init(.invalidRequest, "invalid request: \(rejection.detail)")
        }
    }
}
