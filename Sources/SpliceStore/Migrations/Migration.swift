public import Foundation
import SpliceCore

/// One schema change: the file `Migrations/NNNN_name.sql`, carried inside the binary by the
/// EmbedMigrations build-tool plugin.
public struct Migration: Sendable, Equatable, CustomStringConvertible {
    /// The number the file name starts with; migrations apply in increasing order.
    public let version: Int
    /// The rest of the file name (`job_store` for `0001_job_store.sql`).
    public let name: String
    /// The SQL, run as one script inside the migration's transaction.
    public let sql: String
    /// SHA-256 of the file's bytes in hex (what `sha256sum` prints).
    public let checksum: String

    /// Builds a migration from a file name of the form `NNNN_name.sql` and its contents.
    public init(fileName: String, contents: Data) throws(StoreError) {
        let digits = fileName.prefix(while: \.isNumber)
        guard digits.count == 4, let version = Int(digits), version > 0, fileName.hasSuffix(".sql"),
              fileName.dropFirst(4).hasPrefix("_"), fileName.count > "0000_.sql".count
        else {
            throw StoreError(.invalidMigration, "\(fileName): a migration file must be named NNNN_name.sql", isRetryable: false)
        }
        guard let sql = String(data: contents, encoding: .utf8) else {
            throw StoreError(.invalidMigration, "\(fileName) is not UTF-8", isRetryable: false)
        }
        self.version = version
        self.name = String(fileName.dropFirst(5).dropLast(4))
        self.sql = sql
        self.checksum = SHA256.hexDigest(of: contents)
    }

    /// The migrations compiled into this binary, checked to be numbered 1, 2, 3, … without gaps.
    public static func embedded() throws(StoreError) -> [Migration] {
        var migrations: [Migration] = []
        for file in embeddedFiles {
            guard let contents = Data(base64Encoded: file.base64) else {
                throw StoreError(.invalidMigration, "\(file.fileName): corrupt embedded copy", isRetryable: false)
            }
            migrations.append(try Migration(fileName: file.fileName, contents: contents))
        }
        try validateSequence(migrations)
        return migrations
    }

    /// Checks that `migrations` are numbered 1, 2, 3, … in order.
    static func validateSequence(_ migrations: [Migration]) throws(StoreError) {
        for (offset, migration) in migrations.enumerated() where migration.version != offset + 1 {
            throw StoreError(.invalidMigration, "migration \(migration.label) is out of sequence: expected version \(offset + 1)", isRetryable: false)
        }
    }

    /// `0001_job_store`.
    public var label: String {
        let digits = String(version)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "_" + name
    }

    public var description: String { label }
}
