import Dispatch
import Synchronization

/// One PostgreSQL session. Every libpq call runs on the connection's own serial Dispatch queue,
/// never on Swift's cooperative thread pool; callers `await` the result.
///
/// A connection runs one statement at a time. Use it from one task at a time (the
/// `PostgresClient` pool hands each connection to one borrower); a transaction is only
/// meaningful while you hold the connection.
public final class PostgresConnection: Sendable {
    /// The settings the connection was opened with (its description is redacted).
    public let configuration: ConnectionConfiguration
    private let raw: RawConnection
    private let queue: DispatchQueue
    /// Whether libpq still considered the session usable after the last call (read without a queue hop).
    private let healthy = Atomic<Bool>(true)

    private init(configuration: ConnectionConfiguration, raw: RawConnection, queue: DispatchQueue) {
        self.configuration = configuration
        self.raw = raw
        self.queue = queue
    }

    /// Opens a session.
    public static func connect(_ configuration: ConnectionConfiguration) async throws -> PostgresConnection {
        let raw = RawConnection(configuration: configuration)
        let queue = DispatchQueue(label: "splice.store.connection")
        let connection = PostgresConnection(configuration: configuration, raw: raw, queue: queue)
        try await connection.onQueue { raw throws(StoreError) in try raw.connect() }
        return connection
    }

    /// Opens a session for `body` and closes it afterwards, whether `body` returns or throws.
    public static func withConnection<T: Sendable>(
        _ configuration: ConnectionConfiguration, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await connect(configuration)
        do {
            let value = try await body(connection)
            await connection.close()
            return value
        } catch {
            await connection.close()
            throw error
        }
    }

    /// Runs a statement and returns its rows. Values interpolated into `query` are bound as `$n`
    /// parameters; the statement is prepared once per session and reused.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        try await onQueue { raw throws(StoreError) in try raw.execute(query) }
    }

    /// Runs a statement and returns how many rows it changed.
    @discardableResult
    public func execute(_ query: PostgresQuery) async throws -> Int {
        try await self.query(query).affectedRows
    }

    /// Whether the session was still open after the last call (a broken one is dropped by the pool).
    public var isHealthy: Bool { healthy.load(ordering: .acquiring) }

    /// Ends the session.
    public func close() async {
        try? await onQueue { raw in raw.close() }
    }

    /// Runs trusted multi-statement SQL (a migration) with the simple query protocol.
    func executeScript(_ sql: String) async throws {
        try await onQueue { raw throws(StoreError) in try raw.executeScript(sql) }
    }

    /// Runs `work` on the connection's queue and resumes the caller with its result.
    private func onQueue<T: Sendable>(
        _ work: @escaping @Sendable (RawConnection) throws(StoreError) -> T
    ) async throws(StoreError) -> T {
        let raw = self.raw
        let result: Result<T, StoreError> = await withCheckedContinuation { continuation in
            queue.async {
                let result = Result { () throws(StoreError) in try work(raw) }
                self.healthy.store(raw.isHealthy, ordering: .releasing)
                continuation.resume(returning: result)
            }
        }
        return try result.get()
    }
}

/// How a transaction sees concurrent ones.
public enum IsolationLevel: Sendable {
    case readCommitted, repeatableRead, serializable

    var beginStatement: PostgresQuery {
        switch self {
        case .readCommitted: "BEGIN ISOLATION LEVEL READ COMMITTED"
        case .repeatableRead: "BEGIN ISOLATION LEVEL REPEATABLE READ"
        case .serializable: "BEGIN ISOLATION LEVEL SERIALIZABLE"
        }
    }
}

extension PostgresConnection {
    /// Runs `body` inside BEGIN … COMMIT on this connection, rolling back when it throws.
    /// Does not retry; `PostgresClient.transaction` does.
    public func withTransaction<T: Sendable>(
        isolation: IsolationLevel = .readCommitted,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await query(isolation.beginStatement)
        let value: T
        do {
            value = try await body(self)
        } catch {
            _ = try? await query("ROLLBACK")
            throw error
        }
        // COMMIT of a transaction that already failed answers ROLLBACK rather than an error.
        let commit = try await query("COMMIT")
        guard commit.commandTag == "COMMIT" else {
            throw StoreError(.queryFailed, "the transaction failed and was rolled back", sqlState: "25P02")
        }
        return value
    }
}
