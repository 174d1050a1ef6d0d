extension JobRepository {
    /// Records in the audit log of every unfinished job that a coordinator has taken over
    /// (`coordinator_changed`, with `detail` naming it; the event carries the session's epoch): a
    /// job's history shows each change of leader it lived through. A fenced write like every
    /// other — the new epoch's first.
    public func recordCoordinatorChange(detail: String) async throws {
        try await client.query("""
            INSERT INTO job_events (job_id, kind, detail)
            SELECT id, 'coordinator_changed', \(detail) FROM jobs WHERE finished_at IS NULL
            """)
    }
}
