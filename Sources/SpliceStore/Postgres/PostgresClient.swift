public import SpliceConcurrency
import Synchronization

/// A pool of PostgreSQL connections that retries work the server says may succeed if tried again.
///
/// `withConnection` and `transaction` run their body again — on a fresh connection when the old
/// one broke — after a lost connection, a server restart, a serialization failure (40001) or a
/// deadlock (40P01), backing off with jitter, until the retry policy runs out. Bodies must
/// therefore be safe to run twice: a COMMIT whose answer was lost may have been applied.
public final class PostgresClient: Sendable {
    /// How often and how long to retry.
    public struct RetryPolicy: Sendable {
        /// Attempts in all, the first included.
        public var maxAttempts: Int
        /// No new attempt starts after this long.
        public var maxElapsed: Duration
        /// The wait between attempts.
        public var backoff: Backoff

        public init(maxAttempts: Int, maxElapsed: Duration, backoff: Backoff = .transactionRetry) {
            self.maxAttempts = maxAttempts
            self.maxElapsed = maxElapsed
            self.backoff = backoff
        }

        /// Rides out about a minute of server restart or network trouble.
        public static let standard = RetryPolicy(maxAttempts: 100, maxElapsed: .seconds(60))
        /// Never retries.
        public static let never = RetryPolicy(maxAttempts: 1, maxElapsed: .zero)
    }

    /// Where to connect (redacted in descriptions).
    public let configuration: ConnectionConfiguration
    /// The most connections open at once.
    public let maxConnections: Int
    /// What `withConnection` and `transaction` retry.
    public let retryPolicy: RetryPolicy

    private enum Grant: Sendable {
        case connection(PostgresConnection)
        case permitToOpen
    }

    private struct PoolState {
        var idle: [PostgresConnection] = []
        var open = 0
        var waiters: [CheckedContinuation<Grant, Never>] = []
    }

    private let pool = Mutex(PoolState())

    public init(configuration: ConnectionConfiguration, maxConnections: Int = 8, retryPolicy: RetryPolicy = .standard) {
        precondition(maxConnections > 0, "a pool needs at least one connection")
        self.configuration = configuration
        self.maxConnections = maxConnections
        self.retryPolicy = retryPolicy
    }

    // MARK: - Running work

    /// Borrows a connection for `body`, retrying retryable failures as the policy allows.
    public func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let clock = ContinuousClock()
        let start = clock.now
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await withBorrowedConnection(body)
            } catch let error as StoreError
                where error.isRetryable && attempt < retryPolicy.maxAttempts
                && clock.now - start < retryPolicy.maxElapsed {
                try await Task.sleep(for: retryPolicy.backoff.delay(attempt: attempt))
            }
        }
    }

    /// Runs `body` in a transaction (BEGIN … COMMIT), retrying the whole transaction after
    /// serialization failures, deadlocks and lost connections.
    public func transaction<T: Sendable>(
        isolation: IsolationLevel = .readCommitted,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await withConnection { connection in
            try await connection.withTransaction(isolation: isolation, body)
        }
    }

    /// Runs one statement (in its own implicit transaction), retrying as the policy allows.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        try await withConnection { connection in try await connection.query(query) }
    }

    /// Closes the idle connections. Borrowed ones close when they come back.
    public func close() async {
        let idle = pool.withLock { state in
            defer { state.idle = [] }
            state.open -= state.idle.count
            return state.idle
        }
        for connection in idle { await connection.close() }
    }

    // MARK: - The pool

    private func withBorrowedConnection<T: Sendable>(
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await checkOut()
        do {
            let value = try await body(connection)
            checkIn(connection)
            return value
        } catch {
            checkIn(connection)
            throw error
        }
    }

    private func checkOut() async throws -> PostgresConnection {
        let grant = await withCheckedContinuation { (continuation: CheckedContinuation<Grant, Never>) in
            let immediate: Grant? = pool.withLock { state in
                if let connection = state.idle.popLast() { return .connection(connection) }
                if state.open < maxConnections {
                    state.open += 1
                    return .permitToOpen
                }
                state.waiters.append(continuation)
                return nil
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
        switch grant {
        case .connection(let connection):
            return connection
        case .permitToOpen:
            do {
                return try await PostgresConnection.connect(configuration)
            } catch {
                releasePermit()
                throw error
            }
        }
    }

    /// Returns a connection: to a waiter or the idle list when healthy; otherwise its slot is freed.
    private func checkIn(_ connection: PostgresConnection) {
        guard connection.isHealthy else {
            releasePermit()
            return
        }
        let waiter = pool.withLock { state in
            if state.waiters.isEmpty {
                state.idle.append(connection)
                return nil as CheckedContinuation<Grant, Never>?
            }
            return state.waiters.removeFirst()
        }
        waiter?.resume(returning: .connection(connection))
    }

    /// A connection slot became free: hand it to the first waiter as a permit to open one.
    private func releasePermit() {
        let waiter = pool.withLock { state in
            if state.waiters.isEmpty {
                state.open -= 1
                return nil as CheckedContinuation<Grant, Never>?
            }
            return state.waiters.removeFirst()
        }
        waiter?.resume(returning: .permitToOpen)
    }
}
