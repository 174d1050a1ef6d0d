public import Foundation

/// Where a database's schema stands against the migrations in this binary; `description` is the
/// table `splice db status` prints.
public struct MigrationStatus: Sendable, CustomStringConvertible {
    /// One migration, known to the code, to the database, or both.
    public struct Entry: Sendable, Equatable {
        /// How the migration stands.
        public enum State: String, Sendable {
            /// Applied, with the same checksum as the file in this binary.
            case applied
            /// In this binary, not yet in the database.
            case pending
            /// Applied, but the file in this binary has changed since.
            case checksumMismatch = "CHANGED"
            /// In the database, not in this binary: the database is newer than the code.
            case unknownToCode = "UNKNOWN"
        }

        public var version: Int
        public var name: String
        public var state: State
        /// When it was applied, if it was.
        public var appliedAt: Date?
    }

    /// Which server and database (redacted).
    public var database: String
    /// Every migration, by version.
    public var entries: [Entry]

    /// Migrations the database still needs.
    public var pending: [Entry] { entries.filter { $0.state == .pending } }

    /// Whether the database has exactly the migrations this binary carries.
    public var isUpToDate: Bool { entries.allSatisfy { $0.state == .applied } }

    /// What stops `migrate()` (and a coordinator) from running against this database, if anything.
    public var problem: StoreError? {
        if let unknown = entries.first(where: { $0.state == .unknownToCode }) {
            return StoreError(.databaseNewerThanCode, "the database has migration \(unknown.version) (\(unknown.name)) that this "
                                  + "splice binary does not know: the database is newer than the code. "
                                  + "Run a newer splice, or restore a matching database.", isRetryable: false)
        }
        if let changed = entries.first(where: { $0.state == .checksumMismatch }) {
            return StoreError(.migrationChecksumMismatch, "migration \(changed.version) (\(changed.name)) was applied with different "
                                  + "contents than this binary carries: a landed migration file was edited. "
                                  + "Restore the original file and add a new migration instead.", isRetryable: false)
        }
        return nil
    }

    public var description: String {
        var lines = ["database: \(database)", "version  state     applied at                  name"]
        for entry in entries {
            let version = String(format: "%04d", entry.version)
            let state = entry.state.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)
            let applied = (entry.appliedAt.map { PostgresTimestamp($0).text } ?? "-")
                .padding(toLength: 27, withPad: " ", startingAt: 0)
            lines.append("\(version)     \(state) \(applied) \(entry.name)")
        }
        if let problem {
            lines.append("error: \(problem.message)")
        } else if pending.isEmpty {
            lines.append("schema is up to date (\(entries.count) migrations)")
        } else {
            lines.append("\(pending.count) migration(s) pending: run `splice db migrate`")
        }
        return lines.joined(separator: "\n")
    }
}
