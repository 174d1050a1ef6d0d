// The states of jobs, segments and workers: one spelling from the database to the API and back
// (the store adds its column conformances; the API and the tools switch over these exhaustively).

/// Where a job is: `queued → planning → running → stitching → completed`, or `failed` /
/// `cancelled` from any unfinished state.
public enum JobState: String, Sendable, CaseIterable {
    case queued, planning, running, stitching, completed, failed, cancelled

    /// Whether the job has finished for good (it then has `finishedAt`).
    public var isTerminal: Bool { self == .completed || self == .failed || self == .cancelled }
    /// The states a coordinator resumes after a restart.
    public static let unfinished: [JobState] = [.queued, .planning, .running, .stitching]
}

/// Where a segment is: `pending → leased → done`, back to `pending` after a retryable failure or
/// an expired lease, or `failed` (permanent error), `dead` (out of attempts, or failed on several
/// workers) or `cancelled` (its job failed or was cancelled).
public enum SegmentState: String, Sendable, CaseIterable {
    case pending, leased, done, failed, dead, cancelled
}

/// A worker's connection state as the coordinator last recorded it.
public enum WorkerState: String, Sendable, CaseIterable {
    case online, draining, offline, revoked
}
