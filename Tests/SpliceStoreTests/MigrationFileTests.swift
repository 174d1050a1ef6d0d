import Foundation
import SpliceCore
import Testing
@testable import SpliceStore

@Suite struct MigrationFileTests {
    static let migrationsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Migrations")

    @Test func theBinaryCarriesExactlyTheFilesInMigrations() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.migrationsDirectory.path)
            .filter { $0.hasSuffix(".sql") }.sorted()
        let embedded = try Migration.embedded()
        #expect(embedded.map(\.label) == files.map { String($0.dropLast(4)) })
        for (migration, file) in zip(embedded, files) {
            let bytes = try Data(contentsOf: Self.migrationsDirectory.appending(path: file))
            #expect(migration.checksum == SHA256.hexDigest(of: bytes), "\(file) differs from its embedded copy")
        }
    }

    @Test func sha256MatchesKnownVectors() {
        #expect(SHA256.hexDigest(of: Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hexDigest(of: Data("abc".utf8))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest(of: Data(repeating: UInt8(ascii: "a"), count: 1_000))
            == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    @Test func fileNamesAndNumberingAreChecked() throws {
        let sql = Data("SELECT 1;".utf8)
        let migration = try Migration(fileName: "0007_add_index.sql", contents: sql)
        #expect(migration.version == 7 && migration.name == "add_index" && migration.label == "0007_add_index")
        for bad in ["7_add.sql", "0007-add.sql", "0007_.sql", "0007_add.txt", "abcd_add.sql", "0000_zero.sql"] {
            #expect(throws: StoreError.self, "\(bad)") { try Migration(fileName: bad, contents: sql) }
        }
        let one = try Migration(fileName: "0001_a.sql", contents: sql)
        let three = try Migration(fileName: "0003_c.sql", contents: sql)
        #expect(throws: StoreError.self) { try Migration.validateSequence([one, three]) }
        #expect(throws: StoreError.self) { try Migration.validateSequence([three]) }
        try Migration.validateSequence([one])
    }

    @Test func statusNamesTheProblemAndTheNextStep() throws {
        let sql = Data("SELECT 1;".utf8)
        let migrations = [try Migration(fileName: "0001_a.sql", contents: sql),
                          try Migration(fileName: "0002_b.sql", contents: sql)]
        let migrator = try Migrator(configuration: try ConnectionConfiguration("host=/tmp dbname=x password=pw"),
                                    migrations: migrations)
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let pending = migrator.status(recorded: [.init(version: 1, name: "a", checksum: migrations[0].checksum,
                                                       appliedAt: now)])
        #expect(pending.pending.map(\.version) == [2] && pending.problem == nil && !pending.isUpToDate)
        #expect(pending.description.contains("1 migration(s) pending: run `splice db migrate`"))
        #expect(!pending.description.contains("pw"))

        let edited = migrator.status(recorded: [.init(version: 1, name: "a", checksum: "0000", appliedAt: now)])
        #expect(edited.problem?.code == .migrationChecksumMismatch)
        let newer = migrator.status(recorded: [
            .init(version: 1, name: "a", checksum: migrations[0].checksum, appliedAt: now),
            .init(version: 2, name: "b", checksum: migrations[1].checksum, appliedAt: now),
            .init(version: 3, name: "c", checksum: "x", appliedAt: now),
        ])
        #expect(newer.problem?.code == .databaseNewerThanCode)
        #expect(newer.description.contains("0003     UNKNOWN"))
    }
}
