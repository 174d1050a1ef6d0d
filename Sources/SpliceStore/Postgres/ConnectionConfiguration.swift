internal import CLibPQ
import Foundation

/// Where and how to connect to PostgreSQL: parsed from a `postgresql://` URL or a libpq
/// `key=value` connection string (TCP or Unix socket, user, password, sslmode, …).
///
/// Its `description` names the server, user and database but never the password.
public struct ConnectionConfiguration: Sendable, Equatable, CustomStringConvertible {
    /// One libpq connection keyword and its value.
    struct Parameter: Sendable, Equatable {
        var keyword: String
        var value: String
    }

    private(set) var parameters: [Parameter]
    /// Exact strings that must never reach a log or an error (password, original string).
    private(set) var secrets: [String]

    /// Parses a `postgresql://user:password@host:port/db?sslmode=require` URL or a
    /// `host=/run/splice port=5432 user=splice dbname=splice` connection string.
    public init(_ connectionString: String) throws(StoreError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &errorMessage) else {
            let reason = errorMessage.map { String(cString: $0) } ?? "out of memory"
            PQfreemem(errorMessage)
            // libpq quotes the piece it choked on, and that piece can be the password (a bad
            // percent-escape in it, say): drop every quoted piece rather than guess.
            let unquoted = reason.trimmingCharacters(in: .whitespacesAndNewlines)
                .replacing(#/"[^"]*"/#, with: "\"…\"")
            throw StoreError(.invalidConfiguration, "cannot parse the database URL: " + Redactor(secrets: [connectionString])
                                 .redact(unquoted) + ". Expected postgresql://user:password@host:port/database "
                                 + "or key=value pairs.", isRetryable: false)
        }
        defer { PQconninfoFree(options) }
        var parameters: [Parameter] = []
        var index = 0
        while let keyword = options[index].keyword {
            if let value = options[index].val {
                parameters.append(Parameter(keyword: String(cString: keyword), value: String(cString: value)))
            }
            index += 1
        }
        self.parameters = parameters
        self.secrets = [connectionString]
        self.secrets += parameters.filter { $0.keyword == "password" }.map(\.value)
    }

    /// A server reached through the Unix socket in `socketDirectory` (how `EmbeddedPostgres` listens).
    public init(socketDirectory: String, port: Int = 5432, user: String, database: String) {
        parameters = [
            Parameter(keyword: "host", value: socketDirectory),
            Parameter(keyword: "port", value: String(port)),
            Parameter(keyword: "user", value: user),
            Parameter(keyword: "dbname", value: database),
        ]
        secrets = []
    }

    /// The database name, when the string names one.
    public var database: String? { value(of: "dbname") }

    /// The same server and credentials, another database.
    public func with(database: String) -> ConnectionConfiguration {
        var copy = self
        copy.set("dbname", database)
        return copy
    }

    /// The same settings with one libpq keyword set (e.g. `connect_timeout`, `application_name`).
    public func setting(_ keyword: String, _ value: String) -> ConnectionConfiguration {
        var copy = self
        copy.set(keyword, value)
        return copy
    }

    /// The same settings with `options` (server settings for the session, `-c name=value …`)
    /// extended by `more`: later settings win, so these override the URL's own.
    public func addingOptions(_ more: String) -> ConnectionConfiguration {
        setting("options", (value(of: "options").map { $0 + " " } ?? "") + more)
    }

    /// A session of the coordinator holding `epoch`: every write it makes is fenced by that epoch
    /// (Migrations/0008_coordinator_leadership.sql) and refused once another coordinator has taken
    /// over. Its `application_name` names the epoch, so the sessions of a deposed epoch are known.
    public func fenced(epoch: Int64) -> ConnectionConfiguration {
        addingOptions("-c splice.fence=on -c splice.epoch=\(epoch)")
            .setting("application_name", "splice-epoch-\(epoch)")
    }

    /// A session that writes without holding a coordinator epoch — tests, a repair by hand:
    /// the fence lets it through (`splice.fence = off`). No coordinator uses one.
    public func unfenced() -> ConnectionConfiguration {
        addingOptions("-c splice.fence=off")
    }

    /// A session that only reads (a standby's answers): read-only transactions, and no epoch, so
    /// even a write that slipped through would meet the fence.
    public func readOnly(applicationName: String) -> ConnectionConfiguration {
        addingOptions("-c default_transaction_read_only=on -c splice.fence=on")
            .setting("application_name", applicationName)
    }

    /// Whether the string sets `keyword` (`connect_timeout`, `keepalives_idle`…).
    public func has(_ keyword: String) -> Bool {
        value(of: keyword) != nil
    }

    func value(of keyword: String) -> String? {
        parameters.last { $0.keyword == keyword }?.value
    }

    private mutating func set(_ keyword: String, _ value: String) {
        parameters.removeAll { $0.keyword == keyword }
        parameters.append(Parameter(keyword: keyword, value: value))
    }

    var redactor: Redactor { Redactor(secrets: secrets) }

    /// `host=… port=… user=… dbname=…`, plus `sslmode` when set; the password is only said to exist.
    public var description: String {
        var parts: [String] = []
        for keyword in ["host", "hostaddr", "port", "user", "dbname", "sslmode"] {
            if let value = value(of: keyword) { parts.append("\(keyword)=\(value)") }
        }
        if value(of: "password") != nil { parts.append("password=***") }
        return redactor.redact(parts.isEmpty ? "(libpq defaults)" : parts.joined(separator: " "))
    }
}
