import Foundation
public import SpliceStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Private PostgreSQL for integration tests: one embedded server per test process, and a fresh
/// database per test, so tests can run in parallel without seeing each other's rows.
///
///     let database = try await TestPostgres.makeDatabase()            // migrated, empty tables
///     let empty = try await TestPostgres.makeDatabase(migrated: false) // no schema at all
///     let own = try await TestPostgres.makePrivateServer()             // a server to kill and restart
///
/// Servers live in /tmp/splice-test-pg-<pid>[-n] (short, for the socket path limit), run with
/// `fsync = off` (commits survive a killed server, not a crashed machine), and are stopped and
/// removed when the process exits. Directories left by a crashed test process are cleaned up
/// the next time a test process starts.
public enum TestPostgres {
    /// The shared server, started on first use.
    public static func server() async throws -> EmbeddedPostgres {
        try await shared.value.server
    }

    /// A new database on the shared server with a unique name; migrated unless `migrated` is false.
    /// Its sessions write as a tool (`unfenced()`: the tests' own writes pass the coordinators'
    /// fence); a coordinator started on it fences its own sessions by its epoch all the same.
    public static func makeDatabase(migrated: Bool = true) async throws -> ConnectionConfiguration {
        let shared = try await shared.value
        let name = "test_" + UUID().uuidString.lowercased().replacing("-", with: "")
        return try await shared.server.createDatabase(name, template: migrated ? migratedTemplate : "template0")
            .unfenced()
    }

    /// A server of its own, for tests that stop or kill it. Stopped and removed at process exit
    /// (or call `stop()` yourself).
    public static func makePrivateServer() async throws -> EmbeddedPostgres {
        let number = privateServerCount.add(1, ordering: .relaxed).newValue
        let server = EmbeddedPostgres(configuration(directory: "\(directoryPrefix)\(getpid())-\(number)"))
        try await register(server)
        return server
    }

    /// The folders of the servers this process started (data, socket, log): tests that must not
    /// see them hide them (``MountIsolation``).
    public static var serverDirectories: [String] { ownedDirectories.withLock { $0 } }

    // MARK: - Implementation

    private static let directoryPrefix = "/tmp/splice-test-pg-"
    private static let migratedTemplate = "splice_migrated_template"
    private static let privateServerCount = Atomic<Int>(0)
    /// Directories to stop and remove at exit.
    private static let ownedDirectories = Mutex<[String]>([])

    private struct Shared: Sendable {
        var server: EmbeddedPostgres
    }

    private static let shared = Task<Shared, any Error> {
        removeStaleDirectories()
        atexit { TestPostgres.cleanUpAtExit() }
        let server = EmbeddedPostgres(configuration(directory: "\(directoryPrefix)\(getpid())"))
        try await register(server)
        // The migrated template every `makeDatabase()` copies: migrating once is faster than per test.
        let template = try await server.createDatabase(migratedTemplate)
        try await Migrator(configuration: template).migrate()
        return Shared(server: server)
    }

    private static func configuration(directory: String) -> EmbeddedPostgres.Configuration {
        var configuration = EmbeddedPostgres.Configuration(directory: directory)
        configuration.durability = .fastForTests
        // One server for every suite of a test process, run in parallel: each local cluster's
        // coordinator holds a pool of its own, and 200 ran out ("too many clients already").
        configuration.settings["max_connections"] = "500"
        configuration.log = { _ in }
        return configuration
    }

    private static func register(_ server: EmbeddedPostgres) async throws {
        ownedDirectories.withLock { $0.append(server.configuration.directory) }
        try? FileManager.default.removeItem(atPath: server.configuration.directory)
        try await server.start()
    }

    private static func cleanUpAtExit() {
        for directory in ownedDirectories.withLock({ $0 }) {
            stopImmediately(EmbeddedPostgres(configuration(directory: directory)))
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// Stops a server from a synchronous context (an `atexit` handler) the way
    /// `pg_ctl stop -m immediate` does: SIGQUIT to the postmaster its pid file names, then a short
    /// wait for it to go. Errors are ignored: the folder is removed next either way.
    private static func stopImmediately(_ server: EmbeddedPostgres) {
        guard let text = try? String(contentsOfFile: server.dataDirectory + "/postmaster.pid", encoding: .utf8),
              let pid = text.split(separator: "\n").first.flatMap({ Int32($0) }), pid > 0
        else { return }
        guard kill(pid, SIGQUIT) == 0 else { return }
        for _ in 0..<100 where kill(pid, 0) == 0 { usleep(20_000) }
    }

    /// Stops and removes servers whose test process is gone (killed before its exit handler ran).
    private static func removeStaleDirectories() {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        for name in names where name.hasPrefix("splice-test-pg-") {
            let pidText = name.dropFirst("splice-test-pg-".count).prefix { $0.isNumber }
            guard let pid = Int32(pidText), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            let directory = "/tmp/" + name
            stopImmediately(EmbeddedPostgres(configuration(directory: directory)))
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
}
