import Foundation
import SpliceStore
import SpliceTestSupport
import Synchronization
import Testing

/// Log lines an embedded server wrote.
private final class LogLines: Sendable {
    let lines = Mutex<[String]>([])
}

@Suite struct EmbeddedPostgresTests {
    @Test func listensOnlyOnItsSocketReusesARunningServerAndKeepsData() async throws {
        let directory = "/tmp/splice-test-pg-\(getpid())-embedded"
        try? FileManager.default.removeItem(atPath: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = LogLines()
        var configuration = EmbeddedPostgres.Configuration(directory: directory)
        configuration.durability = .fastForTests
        configuration.log = { line in log.lines.withLock { $0.append(line) } }
        let server = EmbeddedPostgres(configuration)
        try await server.start()
        do {
            if getuid() == 0 {
                #expect(log.lines.withLock { $0 }.contains { $0.contains("running as root") && $0.contains("user=postgres") })
            }
            let client = PostgresClient(configuration: server.connectionConfiguration())
            let settings = try await client.query("""
                SELECT current_setting('listen_addresses'), current_setting('unix_socket_directories')
                """)
            #expect(try settings[0].decode(String.self, at: 0) == "", "no TCP listener")
            #expect(try settings[0].decode(String.self, at: 1) == directory)
            let database = try await server.createDatabase("kept")
            try await server.createDatabase("kept") // idempotent
            try await PostgresClient(configuration: database).query("CREATE TABLE marker (note text)")
            await client.close()

            // A second instance on the same directory reuses the running server.
            let again = EmbeddedPostgres(configuration)
            try await again.start()
            #expect(log.lines.withLock { $0 }.contains { $0.contains("reusing running server") })

            try await again.stop()
            #expect(try await server.isRunning() == false)
            try await server.start()
            let marker = try await PostgresClient(configuration: database).query("SELECT to_regclass('marker') IS NOT NULL")
            #expect(try marker[0].decode(Bool.self, at: 0), "data survives a stop and start")
        } catch {
            try? await server.stop(mode: .immediate)
            throw error
        }
        try await server.stop()
        #expect(try await server.isRunning() == false)
    }
}
