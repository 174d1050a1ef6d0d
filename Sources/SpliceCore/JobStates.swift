// The states of jobs, segments and workers: one spelling from the database to the API and back
// (the store adds its column conformances; the API and the tools switch over these exhaustively).

/// Where a job is: `queued → planning → running → stitching → succeeded`, or `failed` /
/// `cancelled` from any unfinished state. The raw value is the one spelling everywhere: the
/// database column, the client API, `splice jobs --state`, metrics labels and the status page.
/// Adding a state is a compile-error-guided change: every `switch` over it is exhaustive.
public enum JobState: String, Sendable, CaseIterable, StateName {
    case queued, planning, running, stitching, succeeded, failed, cancelled

    /// Whether the job has finished for good (it then has `finishedAt`).
    public var isTerminal: Bool {
        switch self {
        case .succeeded, .failed, .cancelled: true
        case .queued, .planning, .running, .stitching: false
        }
    }

    /// The states a coordinator resumes after a restart.
    public static let unfinished: [JobState] = allCases.filter { !$0.isTerminal }
}

/// Where a segment is: `pending → leased → done`, back to `pending` after a retryable failure or
/// an expired lease, or `failed` (permanent error), `dead` (out of attempts, or failed on several
/// workers) or `cancelled` (its job failed or was cancelled).
public enum SegmentState: String, Sendable, CaseIterable, StateName {
    case pending, leased, done, failed, dead, cancelled
}

/// A worker's connection state as the coordinator last recorded it.
public enum WorkerState: String, Sendable, CaseIterable, StateName {
    case online, draining, offline, revoked
}

/// A state whose text is its raw value, in JSON as everywhere: decoding anything else is refused
/// with a message that lists the names there are.
public protocol StateName: RawRepresentable, CaseIterable, Codable, Sendable where RawValue == String {}

extension StateName {
    /// Every name, in declaration order, for messages ("queued, planning, …").
    public static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Self(rawValue: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(text.prefix(64))' is not one of \(Self.names)")
        }
        self = value
    }
}
