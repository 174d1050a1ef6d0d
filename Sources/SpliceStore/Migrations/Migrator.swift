import Foundation

/// Brings a database's schema up to the migrations this binary carries.
///
/// Each migration runs in its own transaction that first takes a transaction-level advisory lock,
/// so any number of coordinators starting together apply each migration exactly once; the others
/// wait, then find it recorded. The migrator refuses to touch a database that is newer than the
/// code or whose landed migrations were edited.
public struct Migrator: Sendable {
    /// The `pg_advisory_xact_lock` key every Splice migrator serialises on ("SPLICEMG" in ASCII).
    static let advisoryLockKey: Int64 = 0x5350_4C49_4345_4D47

    /// Where to migrate.
    public let configuration: ConnectionConfiguration
    /// The migrations to apply, in order (by default the ones embedded in the binary).
    public let migrations: [Migration]

    /// A migrator for `configuration` with the embedded migrations.
    public init(configuration: ConnectionConfiguration) throws(StoreError) {
        try self.init(configuration: configuration, migrations: Migration.embedded())
    }

    /// A migrator with an explicit list (tests use this to simulate newer and edited schemas).
    public init(configuration: ConnectionConfiguration, migrations: [Migration]) throws(StoreError) {
        try Migration.validateSequence(migrations)
        self.configuration = configuration
        self.migrations = migrations
    }

    /// Applies every pending migration and returns the ones this call applied (empty when the
    /// schema was already current, or another migrator got there first).
    @discardableResult
    public func migrate() async throws -> [Migration] {
        // A migration may change rows of the fenced tables: it writes as a tool, not as a coordinator.
        try await PostgresConnection.withConnection(configuration.unfenced()) { connection in
            var applied: [Migration] = []
            while let migration = try await applyNext(on: connection) {
                applied.append(migration)
            }
            return applied
        }
    }

    /// How the database stands against this binary's migrations. Changes nothing.
    public func status() async throws -> MigrationStatus {
        try await PostgresConnection.withConnection(configuration) { connection in
            let exists = try await connection.query("SELECT to_regclass('splice_schema_migrations') IS NOT NULL")
            let recorded = try await exists[0].decode(Bool.self, at: 0) ? appliedMigrations(on: connection) : []
            return status(recorded: recorded)
        }
    }

    // MARK: - Steps

    /// One transaction: lock, check, apply the first pending migration. Nil when none is pending.
    private func applyNext(on connection: PostgresConnection) async throws -> Migration? {
        try await connection.withTransaction { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Migrator.advisoryLockKey))")
            try await connection.query("""
                CREATE TABLE IF NOT EXISTS splice_schema_migrations (
                    version    integer PRIMARY KEY,
                    name       text NOT NULL,
                    checksum   text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            let status = status(recorded: try await appliedMigrations(on: connection))
            if let problem = status.problem { throw problem }
            guard let next = status.pending.first,
                  let migration = migrations.first(where: { $0.version == next.version })
            else { return nil }
            try await connection.executeScript(migration.sql)
            try await connection.query("""
                INSERT INTO splice_schema_migrations (version, name, checksum)
                VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                """)
            return migration
        }
    }

    struct Recorded {
        var version: Int
        var name: String
        var checksum: String
        var appliedAt: Date
    }

    private func appliedMigrations(on connection: PostgresConnection) async throws -> [Recorded] {
        let rows = try await connection.query(
            "SELECT version, name, checksum, applied_at FROM splice_schema_migrations ORDER BY version")
        return try rows.map { row throws(StoreError) in
            Recorded(version: try row.decode(Int.self, at: 0), name: try row.decode(String.self, at: 1),
                     checksum: try row.decode(String.self, at: 2), appliedAt: try row.decode(Date.self, at: 3))
        }
    }

    func status(recorded: [Recorded]) -> MigrationStatus {
        var entries: [MigrationStatus.Entry] = []
        for migration in migrations {
            if let row = recorded.first(where: { $0.version == migration.version }) {
                let state: MigrationStatus.Entry.State = row.checksum == migration.checksum ? .applied : .checksumMismatch
                entries.append(.init(version: migration.version, name: migration.name, state: state,
                                     appliedAt: row.appliedAt))
            } else {
                entries.append(.init(version: migration.version, name: migration.name, state: .pending, appliedAt: nil))
            }
        }
        for row in recorded where !migrations.contains(where: { $0.version == row.version }) {
            entries.append(.init(version: row.version, name: row.name, state: .unknownToCode, appliedAt: row.appliedAt))
        }
        return MigrationStatus(database: configuration.description, entries: entries.sorted { $0.version < $1.version })
    }
}
