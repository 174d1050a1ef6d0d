public import Foundation
public import SpliceCore
public import SpliceStore

// Repository calls only the tests make: they read what the coordinator never needs to read back
// (the audit log) or exercise the store's statements one at a time.

extension JobRepository {
    /// Pushes one lease's expiry to `duration` from now; the new expiry, or nil when the lease is
    /// no longer current.
    public func extendLease(_ lease: LeaseReference, by duration: Duration) async throws -> Date? {
        try await extendLeases([lease], by: duration)[lease]
    }

    /// Records several results in one transaction, as one batch of the group committer does.
    public func completeSegments(_ completions: [SegmentCompletion]) async throws -> [ResultOutcome] {
        try await Self.writeCompletions(completions, on: client)
    }

    /// A job's audit log, oldest first.
    public func events(ofJob jobID: JobID) async throws -> [JobEvent] {
        try await client.query("SELECT \(JobEvent.columns) FROM job_events WHERE job_id = \(jobID) ORDER BY id")
            .map(JobEvent.init(row:))
    }
}
