internal import CLibPQ
internal import CLibPQShims
import Foundation

/// Owns one libpq `PGconn` and frees it in `deinit`.
///
/// Not thread-safe: every method is called on its owner's serial queue (`PostgresConnection`) or
/// on the listener's own thread (`PostgresListener`), never concurrently — hence `@unchecked Sendable`.
final class RawConnection: @unchecked Sendable {
    let configuration: ConnectionConfiguration
    private var handle: OpaquePointer?
    /// Server-side prepared statements of this session: SQL text and parameter types → statement name.
    private var statements: [String: String] = [:]

    init(configuration: ConnectionConfiguration) {
        self.configuration = configuration
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

    /// Whether a session is open and libpq still considers it usable.
    var isHealthy: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// Opens the session (closing any previous one) and sets the session settings the decoders
    /// rely on: UTC and ISO dates.
    func connect() throws(StoreError) {
        close()
        var config = configuration
        if config.value(of: "application_name") == nil { config = config.setting("application_name", "splice") }
        if config.value(of: "connect_timeout") == nil { config = config.setting("connect_timeout", "10") }
        config = config.setting("client_encoding", "UTF8")
        config = config.setting("options", Self.sessionOptions(config))
        // Both arrays end with NULL, as PQconnectdbParams requires.
        let keywords: [String?] = config.parameters.map(\.keyword) + [nil]
        let values: [String?] = config.parameters.map(\.value) + [nil]
        let opened = withCStringArray(keywords) { keywords in
            withCStringArray(values) { values in PQconnectdbParams(keywords, values, 0) }
        }
        // libpq returns a PGconn even on failure (NULL only when out of memory); it is ours to PQfinish.
        guard let opened else {
            throw StoreError(.connectionFailed, "libpq could not allocate a connection")
        }
        guard PQstatus(opened) == CONNECTION_OK else {
            let reason = String(cString: PQerrorMessage(opened))
            PQfinish(opened)
            throw StoreError(.connectionFailed, "cannot connect to PostgreSQL (\(configuration)): "
                                 + redact(reason))
        }
        // Server notices (e.g. "relation already exists, skipping") are not errors; libpq's default
        // receiver would print them to stderr.
        PQsetNoticeProcessor(opened, { _, _ in }, nil)
        handle = opened
        statements = [:]
        try executeScript("SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'")
    }

    /// Server settings for every session, ahead of the operator's own `options` (from the URL,
    /// else PGOPTIONS, which an explicit keyword would otherwise hide) so that theirs win.
    /// Generic plans: the store's statements are prepared once per session and bind arrays whose
    /// sizes a custom plan cannot exploit, so re-planning them on every execution (what `auto`
    /// does first, and keeps doing while the custom plans look cheaper) was wasted server CPU.
    static func sessionOptions(_ configuration: ConnectionConfiguration) -> String {
        let own = configuration.value(of: "options") ?? ProcessInfo.processInfo.environment["PGOPTIONS"]
        return ["-c plan_cache_mode=force_generic_plan", own].compactMap { $0 }.joined(separator: " ")
    }

    /// Ends the session, if any.
    func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        statements = [:]
    }

    // MARK: - Statements

    /// Runs one statement with its values bound as parameters (never spliced into the text).
    /// With `prepare`, the statement is parsed once per session and reused by name.
    func execute(_ query: PostgresQuery, prepare: Bool = true) throws(StoreError) -> PostgresRows {
        let handle = try openHandle()
        let (sql, binds) = query.rendered
        guard binds.count <= Int(UInt16.max) else {
            throw StoreError(.invalidValue, "\(binds.count) parameters: PostgreSQL takes at most 65535; "
                                 + "bind an array instead", isRetryable: false)
        }
        // Bytes, not `String.contains`: that goes through Foundation's locale-aware search.
        for bind in binds where bind.text?.utf8.contains(0) == true {
            throw StoreError(.invalidValue, "a text value contains a NUL byte, which PostgreSQL cannot store", isRetryable: false)
        }
        let types = binds.map { Oid($0.type.oid) }
        let result: OpaquePointer? = try withCStringArray(binds.map(\.text)) { values throws(StoreError) in
            guard prepare else {
                return PQexecParams(handle, sql, Int32(binds.count), types, values, nil, nil, 0)
            }
            let name = try preparedName(for: sql, types: types, on: handle)
            return PQexecPrepared(handle, name, Int32(binds.count), values, nil, nil, 0)
        }
        return try consume(result)
    }

    /// Runs SQL text that may hold several statements (a migration file) with the simple query
    /// protocol. Internal only: the text is trusted, it comes from the binary itself.
    func executeScript(_ sql: String) throws(StoreError) {
        let handle = try openHandle()
        _ = try consume(PQexec(handle, sql))
    }

    private func preparedName(for sql: String, types: [Oid], on handle: OpaquePointer) throws(StoreError) -> String {
        let key = types.map(String.init).joined(separator: ",") + "|" + sql
        if let name = statements[key] { return name }
        let name = "splice_\(statements.count + 1)"
        _ = try consume(PQprepare(handle, name, sql, Int32(types.count), types))
        statements[key] = name
        return name
    }

    private func openHandle() throws(StoreError) -> OpaquePointer {
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            throw StoreError(.connectionLost, "the connection to PostgreSQL is closed")
        }
        return handle
    }

    /// Turns a PGresult into rows or a `StoreError`, and frees it.
    private func consume(_ result: OpaquePointer?) throws(StoreError) -> PostgresRows {
        guard let result else {
            throw connectionLost(nil)
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY, PGRES_TUPLES_OK:
            return rows(of: result)
        default:
            throw serverError(result)
        }
    }

    private func rows(of result: OpaquePointer) -> PostgresRows {
        let columnCount = PQnfields(result)
        let rowCount = PQntuples(result)
        let columns = (0..<columnCount).map { String(cString: PQfname(result, $0)) }
        var values: [[String?]] = []
        values.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            values.append((0..<columnCount).map { column in
                PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
            })
        }
        let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        let tag = String(cString: PQcmdStatus(result))
        return PostgresRows(columns: columns, values: values, affectedRows: affected, commandTag: tag)
    }

    private func serverError(_ result: OpaquePointer) -> StoreError {
        func field(_ code: Int32) -> String? {
            PQresultErrorField(result, code).map { String(cString: $0) }
        }
        guard let sqlState = field(splice_PG_DIAG_SQLSTATE()) else {
            // No SQLSTATE: libpq made this error itself, which (parameters being checked before
            // sending) means the session failed. After a failed *write* libpq still reports
            // CONNECTION_OK for a while, so the status alone cannot be trusted.
            return connectionLost(String(cString: PQresultErrorMessage(result)))
        }
        var message = field(splice_PG_DIAG_MESSAGE_PRIMARY()) ?? String(cString: PQresultErrorMessage(result))
        if let detail = field(splice_PG_DIAG_MESSAGE_DETAIL()) { message += " (\(detail))" }
        if let constraint = field(splice_PG_DIAG_CONSTRAINT_NAME()) { message += " [constraint \(constraint)]" }
        if sqlState.hasPrefix("57P") || sqlState.hasPrefix("08") {
            // The server is going away (shutdown, crash): this session is finished.
            close()
        }
        if sqlState == SQLState.fenced {
            return StoreError(.fenced, redact(message), sqlState: sqlState, isRetryable: false)
        }
        return StoreError(.queryFailed, redact(message), sqlState: sqlState)
    }

    /// The session is unusable: close it and say why (`reason` is libpq's message, if any).
    private func connectionLost(_ reason: String?) -> StoreError {
        let message = reason ?? handle.map { String(cString: PQerrorMessage($0)) } ?? ""
        close()
        return StoreError(.connectionLost, "lost the connection to PostgreSQL: "
                              + redact(message.isEmpty ? "no reason given" : message))
    }

    private func redact(_ text: String) -> String {
        configuration.redactor.redact(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    // MARK: - Notifications (used by PostgresListener on its own thread)

    /// The session's socket, for `poll`.
    var socket: Int32 { handle.map { PQsocket($0) } ?? -1 }

    /// Reads whatever the server sent and returns the channels of the notifications received.
    func takeNotifications() throws(StoreError) -> [String] {
        let handle = try openHandle()
        guard PQconsumeInput(handle) == 1 else {
            throw connectionLost(nil)
        }
        var channels: [String] = []
        while let notification = PQnotifies(handle) {
            channels.append(String(cString: notification.pointee.relname))
            PQfreemem(notification)
        }
        return channels
    }
}

/// Calls `body` with NUL-terminated copies of `strings` (nil stays NULL), freed afterwards.
private func withCStringArray<R, E: Error>(
    _ strings: [String?], _ body: ([UnsafePointer<CChar>?]) throws(E) -> R
) throws(E) -> R {
    let copies: [UnsafeMutablePointer<CChar>?] = strings.map { $0.flatMap { strdup($0) } }
    defer { copies.forEach { free($0) } }
    return try body(copies.map { $0.map { UnsafePointer($0) } })
}
