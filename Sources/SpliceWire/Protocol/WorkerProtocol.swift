public import SpliceCore

/// The worker protocol: the messages between the coordinator's worker endpoint (ROUTER, CURVE
/// server) and the worker daemons (DEALER, CURVE client). See docs/protocol.md.
///
/// Version 3 (this build) adds version negotiation to version 2: HELLO says which versions the
/// worker speaks (`protocolVersions`), a coordinator answers in the version its worker speaks,
/// and one that speaks neither answers DISCONNECT naming its own versions, which every version
/// from 3 on reads. A coordinator of this build accepts workers of version 2 and 3; its workers
/// speak 3 (docs/protocol.md, Versions; docs/deploy.md, Upgrading).
public enum WorkerProtocol {
    public static let name = "splice-worker"
    /// The newest version: what this build's workers speak, and its coordinator's first choice.
    public static let version = 3
    /// The oldest version this build's coordinator still accepts: a worker one release older.
    public static let oldestVersion = 2
    /// What this build's coordinator speaks, as its version refusals say it.
    public static let versions = ProtocolVersions(oldest: oldestVersion, newest: version)
    /// What this build's worker speaks, as its HELLO says it: only the newest version (a worker
    /// is upgraded after its coordinator, docs/deploy.md).
    public static let workerVersions = ProtocolVersions(oldest: version, newest: version)
}

/// A range of worker-protocol versions (HELLO `protocolVersions`, DISCONNECT `versions`).
public struct ProtocolVersions: Hashable, Sendable, Codable, CustomStringConvertible {
    public var oldest: Int
    public var newest: Int

    public init(oldest: Int, newest: Int) {
        self.oldest = oldest
        self.newest = newest
    }

    /// `2…3`, or `3` for one.
    public var description: String { oldest == newest ? "\(newest)" : "\(oldest)…\(newest)" }

    public func contains(_ version: Int) -> Bool { oldest <= version && version <= newest }
}

/// One attempt at one segment. Every worker→coordinator segment message carries it, so the
/// coordinator can fence on the lease token and recognise duplicates and stale attempts.
public struct SegmentAttempt: Hashable, Sendable, Codable, CustomStringConvertible {
    public var job: JobID
    /// The segment's index in the job's plan.
    public var segment: Int
    /// 1 for the first attempt, then 2, 3…
    public var attempt: Int
    public var leaseToken: LeaseToken

    public init(job: JobID, segment: Int, attempt: Int, leaseToken: LeaseToken) {
        self.job = job
        self.segment = segment
        self.attempt = attempt
        self.leaseToken = leaseToken
    }

    public var description: String { "job=\(job) segment=\(segment) attempt=\(attempt)" }
}

// MARK: - The two directions

/// What a worker sends to the coordinator.
public enum WorkerMessage: WireMessage, Hashable {
    case hello(Hello)
    case accept(Accept)
    case progress(Progress)
    case complete(Complete)
    case fail(Fail)
    case heartbeat(Heartbeat)
    case disconnect(Disconnect)
    /// Only from a worker started with a join token, before its HELLO (version 3).
    case join(Join)

    public static let protocolName = WorkerProtocol.name
    public static let protocolVersion = WorkerProtocol.version
    public static let oldestProtocolVersion = WorkerProtocol.oldestVersion
    public static let catalogue = MessageCatalogue<WorkerMessage>([
        .body(Hello.self, WorkerMessage.hello),
        .body(Accept.self, WorkerMessage.accept),
        .body(Progress.self, WorkerMessage.progress),
        .body(Complete.self, WorkerMessage.complete),
        .body(Fail.self, WorkerMessage.fail),
        .body(Heartbeat.self, WorkerMessage.heartbeat),
        .body(Disconnect.self, frozenSince: 3, WorkerMessage.disconnect),
        .body(Join.self, since: 3, WorkerMessage.join),
    ])

    /// What a session admitted on probation (its key not enrolled yet) may send: JOIN alone.
    public static let probationTypes: Set<String> = [Join.messageType]

    public var body: any MessageBody {
        switch self {
        case .join(let body): body
        case .hello(let body): body
        case .accept(let body): body
        case .progress(let body): body
        case .complete(let body): body
        case .fail(let body): body
        case .heartbeat(let body): body
        case .disconnect(let body): body
        }
    }
}

/// What the coordinator sends to a worker.
public enum CoordinatorMessage: WireMessage, Hashable {
    case welcome(Welcome)
    case assign(Assign)
    case cancel(Cancel)
    case ack(Ack)
    case heartbeat(Heartbeat)
    case disconnect(Disconnect)
    /// Only to workers whose HELLO said `standbyAware`.
    case standby(Standby)
    case active(Active)
    /// The answer to JOIN (version 3).
    case joined(Joined)

    public static let protocolName = WorkerProtocol.name
    public static let protocolVersion = WorkerProtocol.version
    public static let oldestProtocolVersion = WorkerProtocol.oldestVersion
    public static let catalogue = MessageCatalogue<CoordinatorMessage>([
        .body(Welcome.self, CoordinatorMessage.welcome),
        .body(Assign.self, CoordinatorMessage.assign),
        .body(Cancel.self, CoordinatorMessage.cancel),
        .body(Ack.self, CoordinatorMessage.ack),
        .body(Heartbeat.self, CoordinatorMessage.heartbeat),
        .body(Disconnect.self, frozenSince: 3, CoordinatorMessage.disconnect),
        .body(Standby.self, CoordinatorMessage.standby),
        .body(Active.self, CoordinatorMessage.active),
        .body(Joined.self, since: 3, CoordinatorMessage.joined),
    ])

    public var body: any MessageBody {
        switch self {
        case .joined(let body): body
        case .standby(let body): body
        case .active(let body): body
        case .welcome(let body): body
        case .assign(let body): body
        case .cancel(let body): body
        case .ack(let body): body
        case .heartbeat(let body): body
        case .disconnect(let body): body
        }
    }
}
