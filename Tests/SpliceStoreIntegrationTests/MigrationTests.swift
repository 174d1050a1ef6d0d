import Foundation
import SpliceCore
import SpliceStore
import SpliceTestSupport
import Testing

@Suite struct MigrationTests {
    /// The real migrations plus one more, so that "applied twice" would fail loudly (CREATE TABLE).
    static func migrationsWithExtra() throws -> [Migration] {
        try Migration.embedded() + [Migration(
            fileName: String(format: "%04d_extra.sql", try Migration.embedded().count + 1),
            contents: Data("CREATE TABLE extra_table (id integer PRIMARY KEY);".utf8))]
    }

    @Test func migratesAnEmptyDatabaseThenReRunsAsANoOp() async throws {
        let database = try await TestPostgres.makeDatabase(migrated: false)
        let migrator = try Migrator(configuration: database)
        let before = try await migrator.status()
        #expect(before.entries.allSatisfy { $0.state == .pending } && !before.isUpToDate)

        let applied = try await migrator.migrate()
        #expect(applied.map(\.version) == migrator.migrations.map(\.version))
        #expect(try await migrator.migrate().isEmpty)

        let after = try await migrator.status()
        #expect(after.isUpToDate && after.problem == nil)
        #expect(after.description.contains("schema is up to date"))
        let tables = try await PostgresClient(configuration: database).query("""
            SELECT count(*) FROM pg_tables WHERE tablename IN ('jobs', 'segments', 'workers', 'job_events')
            """)
        #expect(try tables[0].decode(Int.self, at: 0) == 4)
    }

    @Test("migration 0006 renames a finished job's `completed` to `succeeded`, the API's spelling")
    func finishedJobsBecomeSucceeded() async throws {
        let database = try await TestPostgres.makeDatabase(migrated: false)
        let all = try Migration.embedded()
        let before = try #require(all.firstIndex { $0.version == 6 })
        try await Migrator(configuration: database, migrations: Array(all.prefix(before))).migrate()
        let client = PostgresClient(configuration: database)
        try await client.query("""
            INSERT INTO jobs (idempotency_key, source_url, output_url, settings, plan, state, segments_total,
                              segments_done, finished_at)
            VALUES ('old', '/in.mov', '/out.mp4', '{}', '{}', 'completed', 2, 2, now())
            """)
        try await Migrator(configuration: database).migrate()
        let rows = try await client.query("SELECT state FROM jobs WHERE idempotency_key = 'old'")
        #expect(try rows[0].decode(JobState.self, column: "state") == .succeeded)
        // The old spelling is refused from now on.
        await #expect(throws: (any Error).self) {
            try await client.query("UPDATE jobs SET state = 'completed' WHERE idempotency_key = 'old'")
        }
        await client.close()
    }

    @Test func threeConcurrentMigratorsApplyEachMigrationOnce() async throws {
        let database = try await TestPostgres.makeDatabase(migrated: false)
        let migrations = try Self.migrationsWithExtra()
        async let a = Migrator(configuration: database, migrations: migrations).migrate()
        async let b = Migrator(configuration: database, migrations: migrations).migrate()
        async let c = Migrator(configuration: database, migrations: migrations).migrate()
        let applied = try await [a, b, c].flatMap { $0 }.map(\.version).sorted()
        #expect(applied == migrations.map(\.version))
        let recorded = try await PostgresClient(configuration: database)
            .query("SELECT count(*) FROM splice_schema_migrations")
        #expect(try recorded[0].decode(Int.self, at: 0) == migrations.count)
    }

    @Test func refusesADatabaseNewerThanTheCode() async throws {
        let database = try await TestPostgres.makeDatabase(migrated: false)
        try await Migrator(configuration: database, migrations: try Self.migrationsWithExtra()).migrate()
        let older = try Migrator(configuration: database)
        let error = await #expect(throws: StoreError.self) { try await older.migrate() }
        #expect(error?.code == .databaseNewerThanCode)
        let status = try await older.status()
        #expect(status.entries.last?.state == .unknownToCode && status.problem?.code == .databaseNewerThanCode)
        #expect(status.description.contains("UNKNOWN"))
    }

    @Test func refusesAnEditedLandedMigration() async throws {
        let database = try await TestPostgres.makeDatabase(migrated: false)
        let original = try Self.migrationsWithExtra()
        try await Migrator(configuration: database, migrations: original).migrate()
        var edited = original
        edited[edited.count - 1] = try Migration(fileName: String(format: "%04d_extra.sql", original.count),
                                                 contents: Data("CREATE TABLE extra_table (id bigint);".utf8))
        let error = await #expect(throws: StoreError.self) {
            try await Migrator(configuration: database, migrations: edited).migrate()
        }
        #expect(error?.code == .migrationChecksumMismatch)
    }

    @Test func aFailingMigrationLeavesNoTrace() async throws {
        let database = try await TestPostgres.makeDatabase()
        let broken = try Migration.embedded() + [Migration(
            fileName: String(format: "%04d_broken.sql", try Migration.embedded().count + 1),
            contents: Data("CREATE TABLE half_done (id integer); SELECT * FROM no_such_table;".utf8))]
        await #expect(throws: StoreError.self) { try await Migrator(configuration: database, migrations: broken).migrate() }
        let client = PostgresClient(configuration: database)
        let leftovers = try await client.query("SELECT to_regclass('half_done') IS NULL")
        #expect(try leftovers[0].decode(Bool.self, at: 0))
        #expect(try await Migrator(configuration: database).status().isUpToDate)
    }
}
