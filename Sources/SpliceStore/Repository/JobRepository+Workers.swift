public import SpliceCore
public import Foundation

extension JobRepository {
    /// Enrolls a worker's public key, or updates its name, slots and capabilities when the key is
    /// already enrolled. A revoked key cannot enroll again (`StoreError.Code.workerRevoked`).
    @discardableResult
    public func enrollWorker(publicKey: String, name: String, slots: Int,
                             capabilities: PostgresJSON = .emptyObject) async throws -> Worker {
        let rows = try await client.query("""
            INSERT INTO workers (public_key, name, slots, capabilities)
            VALUES (\(publicKey), \(name), \(slots), \(capabilities))
            ON CONFLICT (public_key) DO UPDATE
                SET name = EXCLUDED.name, slots = EXCLUDED.slots, capabilities = EXCLUDED.capabilities
                WHERE workers.state <> 'revoked'
            RETURNING \(Worker.columns)
            """)
        guard let row = rows.first else {
            throw StoreError(.workerRevoked, "worker key \(publicKey) was revoked and cannot enroll again", isRetryable: false)
        }
        return try Worker(row: row)
    }

    /// Revokes a worker for good and takes back its leases in the same transaction. Idempotent.
    @discardableResult
    public func revokeWorker(id workerID: UUID) async throws -> Worker {
        try await client.transaction { connection in
            _ = try await releaseLeases(where: "state = 'leased' AND leased_by = \(workerID)",
                                        failure: SegmentFailure(message: "worker revoked", isRetryable: true),
                                        kind: "segment_lease_released", limit: 100_000,
                                        backups: "backup_leased_by = \(workerID)", on: connection)
            let rows = try await connection.query("""
                UPDATE workers SET state = 'revoked', revoked_at = coalesce(revoked_at, now())
                WHERE id = \(workerID) RETURNING \(Worker.columns)
                """)
            guard let row = rows.first else {
                throw StoreError(.notFound, "worker \(workerID.uuidString.lowercased()) does not exist", isRetryable: false)
            }
            return try Worker(row: row)
        }
    }

    /// Records that a worker was heard from (and its state). Nil when it is unknown or revoked.
    @discardableResult
    public func workerSeen(id workerID: UUID, state: WorkerState = .online) async throws -> Worker? {
        precondition(state != .revoked, "use revokeWorker to revoke")
        return try await client.query("""
            UPDATE workers SET last_seen_at = now(), state = \(state)
            WHERE id = \(workerID) AND state <> 'revoked' RETURNING \(Worker.columns)
            """).first.map(Worker.init(row:))
    }

    /// The worker enrolled with `publicKey`, revoked or not.
    public func worker(publicKey: String) async throws -> Worker? {
        try await client.query("SELECT \(Worker.columns) FROM workers WHERE public_key = \(publicKey)")
            .first.map(Worker.init(row:))
    }

    /// Every enrolled worker (revoked ones included), by name.
    public func workers() async throws -> [Worker] {
        try await client.query("SELECT \(Worker.columns) FROM workers ORDER BY name, id").map(Worker.init(row:))
    }
}
