import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A private PostgreSQL server in a directory of its own, made from the system's `initdb` and
/// `pg_ctl`. It listens only on a Unix socket in that directory (no TCP port at all).
///
/// `start()` initialises the directory on first use, reuses a server that is already running
/// there, and otherwise starts one; `stop()` shuts it down cleanly. PostgreSQL refuses to run as
/// root: when this process is root, `initdb` and the server run as an unprivileged account
/// (`postgres` by default) that is given the directory, and a log line says so.
///
/// Used by the tests, by the quick start, and by the coordinator when no database URL is given.
public final class EmbeddedPostgres: Sendable {
    /// How much the server may skip to be fast.
    public enum Durability: Sendable {
        /// PostgreSQL's defaults: every commit is on disk before it is acknowledged.
        case durable
        /// `fsync = off` and `full_page_writes = off`: commits survive the server being killed (the
        /// kernel still has the WAL) but not the machine crashing. For tests and throwaway clusters.
        case fastForTests
    }

    /// Where and how to run the server.
    public struct Configuration: Sendable {
        /// The directory holding the socket, the data directory (`data/`) and `postgres.log`.
        /// Its path must be short: the socket path `<directory>/.s.PGSQL.<port>` has to fit in 107 bytes.
        public var directory: String
        /// Only names the socket file; no TCP port is opened.
        public var port: Int = 5432
        /// The database superuser `initdb` creates; clients connect as it over the socket.
        public var superuser: String = "splice"
        /// The account the server runs as when this process is root.
        public var serverAccount: String = "postgres"
        /// See `Durability`.
        public var durability: Durability = .durable
        /// Extra `postgresql.conf` settings, written on every start.
        public var settings: [String: String] = [:]
        /// Where `initdb` and `pg_ctl` are; found automatically when nil.
        public var binDirectory: String?
        /// Receives one line per notable step (fixed messages with `key=value` fields).
        public var log: @Sendable (String) -> Void = { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }

        public init(directory: String) {
            self.directory = directory
        }
    }

    /// How to stop the server.
    public enum StopMode: String, Sendable {
        /// Disconnect clients, checkpoint, exit.
        case fast
        /// Exit at once with no checkpoint, as if it crashed; the next start replays the WAL.
        case immediate
    }

    public let configuration: Configuration
    private let runAsAccount: String?
    /// Where initdb and pg_ctl are, once found.
    private let binDirectory = Mutex<String?>(nil)

    public init(_ configuration: Configuration) {
        var configuration = configuration
        configuration.directory = URL(fileURLWithPath: configuration.directory).standardizedFileURL.path
        self.configuration = configuration
        self.runAsAccount = getuid() == 0 ? configuration.serverAccount : nil
    }

    /// The server's data directory.
    public var dataDirectory: String { configuration.directory + "/data" }
    /// The server's log file.
    public var logFile: String { configuration.directory + "/postgres.log" }

    /// How clients reach database `database` on this server (over its Unix socket).
    public func connectionConfiguration(database: String = "postgres") -> ConnectionConfiguration {
        ConnectionConfiguration(socketDirectory: configuration.directory, port: configuration.port,
                                user: configuration.superuser, database: database)
    }

    // MARK: - Lifecycle

    /// Makes sure a server is running in the directory: initialises it if needed, reuses a running one.
    public func start() async throws {
        try await blocking { try self.startBlocking() }
    }

    /// Stops the server if it is running.
    public func stop(mode: StopMode = .fast) async throws {
        try await blocking { try self.stopBlocking(mode: mode) }
    }

    /// Whether a server is running in the directory.
    public func isRunning() async throws -> Bool {
        try await blocking { try self.isRunningBlocking() }
    }

    /// Creates database `name` if it does not exist (optionally as a copy of `template`) and
    /// returns how to connect to it.
    @discardableResult
    public func createDatabase(_ name: String, template: String? = nil) async throws -> ConnectionConfiguration {
        try await PostgresConnection.withConnection(connectionConfiguration()) { connection in
            let existing = try await connection.query("SELECT 1 FROM pg_database WHERE datname = \(name)")
            guard existing.isEmpty else { return }
            do {
                if let template {
                    try await connection.query("CREATE DATABASE \(identifier: name) TEMPLATE \(identifier: template)")
                } else {
                    try await connection.query("CREATE DATABASE \(identifier: name)")
                }
            } catch let error as StoreError where error.sqlState == SQLState.duplicateDatabase {
                return // created concurrently by someone else: what we wanted
            }
        }
        return connectionConfiguration(database: name)
    }

    // MARK: - Blocking steps (run off the cooperative pool)

    private func startBlocking() throws {
        let socketPath = "\(configuration.directory)/.s.PGSQL.\(configuration.port)"
        guard socketPath.utf8.count < 108 else {
            throw failure("the socket path \(socketPath) is longer than Unix sockets allow (107 bytes); "
                              + "choose a shorter directory")
        }
        try prepareDirectory()
        if !FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION") {
            try initialise()
        }
        try writeSettings()
        if try isRunningBlocking() {
            configuration.log("embedded-postgres: reusing running server dir=\(configuration.directory)")
            return
        }
        let result = try tool("pg_ctl", ["start", "-D", dataDirectory, "-l", logFile, "-w", "-t", "60", "-s"])
        guard result.status == 0 else {
            throw failure("pg_ctl start failed (exit \(result.status)): \(result.output.trimmed) \(logTail())")
        }
        configuration.log("embedded-postgres: started dir=\(configuration.directory) socket=\(socketPath)")
    }

    private func stopBlocking(mode: StopMode) throws {
        guard FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION"), try isRunningBlocking() else {
            return
        }
        let result = try tool("pg_ctl", ["stop", "-D", dataDirectory, "-m", mode.rawValue, "-w", "-t", "60", "-s"])
        guard result.status == 0 else {
            throw failure("pg_ctl stop failed (exit \(result.status)): \(result.output.trimmed)")
        }
        configuration.log("embedded-postgres: stopped mode=\(mode.rawValue) dir=\(configuration.directory)")
    }

    private func isRunningBlocking() throws -> Bool {
        guard FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION") else { return false }
        // pg_ctl status: 0 = running, 3 = not running, 4 = no usable data directory.
        return try tool("pg_ctl", ["status", "-D", dataDirectory]).status == 0
    }

    /// Creates the directory (mode 0700) and, when we are root, hands it to the server account.
    private func prepareDirectory() throws {
        let directory = configuration.directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        guard let account = runAsAccount else { return }
        guard let entry = getpwnam(account) else {
            throw failure("running as root, and PostgreSQL refuses root, but there is no account \(account) to run "
                              + "it as. Create one (Debian: apt-get install postgresql creates `postgres`).")
        }
        let (uid, gid) = (entry.pointee.pw_uid, entry.pointee.pw_gid)
        configuration.log("embedded-postgres: running as root; PostgreSQL refuses root, so the server runs as "
                              + "user=\(account) dir=\(directory)")
        guard chown(directory, uid, gid) == 0 else {
            throw failure("cannot give \(directory) to user \(account): \(String(cString: strerror(errno)))")
        }
    }

    private func initialise() throws {
        var arguments = ["-D", dataDirectory, "-U", configuration.superuser, "--auth=trust", "--encoding=UTF8",
                         "--locale=C"]
        if configuration.durability == .fastForTests { arguments.append("--no-sync") }
        let result = try tool("initdb", arguments)
        guard result.status == 0 else {
            var hint = ""
            if let account = runAsAccount {
                hint = " (the server runs as \(account): every directory above \(configuration.directory) "
                    + "must be searchable by it)"
            }
            throw failure("initdb failed (exit \(result.status))\(hint): \(result.output.trimmed)")
        }
        // Our settings live in an included file we rewrite on every start.
        let conf = dataDirectory + "/postgresql.conf"
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: conf))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("\n# Added by Splice's EmbeddedPostgres\ninclude 'splice.conf'\n".utf8))
        try handle.close()
        configuration.log("embedded-postgres: initialised dir=\(configuration.directory)")
    }

    private func writeSettings() throws {
        func quoted(_ value: String) -> String { "'" + value.replacing("'", with: "''") + "'" }
        var settings: [String: String] = [
            "listen_addresses": quoted(""),
            "unix_socket_directories": quoted(configuration.directory),
            "port": String(configuration.port),
            "max_connections": "200",
        ]
        if configuration.durability == .fastForTests {
            settings["fsync"] = "off"
            settings["full_page_writes"] = "off"
        }
        settings.merge(configuration.settings) { _, explicit in explicit }
        let text = settings.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }.joined(separator: "\n")
        let path = dataDirectory + "/splice.conf"
        try Data(("# Written by Splice's EmbeddedPostgres on every start.\n" + text + "\n").utf8)
            .write(to: URL(fileURLWithPath: path))
        if let account = runAsAccount, let entry = getpwnam(account) {
            _ = chown(path, entry.pointee.pw_uid, entry.pointee.pw_gid)
        }
    }

    private func tool(_ name: String, _ arguments: [String]) throws -> ToolRunner.Result {
        let binDirectory = try self.binDirectory.withLock { cached throws(StoreError) in
            if let cached { return cached }
            let found = try PostgresBinaries.locate(explicit: configuration.binDirectory)
            cached = found
            return found
        }
        return try ToolRunner.run(binDirectory + "/" + name, arguments, asUser: runAsAccount,
                                  in: configuration.directory)
    }

    private func logTail() -> String {
        guard let text = try? String(contentsOfFile: logFile, encoding: .utf8) else { return "" }
        return "; server log \(logFile) ends: " + text.split(separator: "\n").suffix(5).joined(separator: " | ")
    }

    private func failure(_ message: String) -> StoreError {
        StoreError(.embeddedServer, message, isRetryable: false)
    }

    private func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try work() })
            }
        }
    }
}

extension String {
    fileprivate var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}
