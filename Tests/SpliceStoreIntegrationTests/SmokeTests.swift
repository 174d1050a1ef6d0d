import Foundation
import SpliceStore
import SpliceTestSupport
import Testing

@Suite struct SmokeTests {
    @Test func roundTripsValues() async throws {
        let config = try await TestPostgres.makeDatabase()
        let client = PostgresClient(configuration: config)
        let text = "it's \"quoted\"; DROP TABLE jobs; --"
        let rows = try await client.query("SELECT \(text)::text AS t, \(Int64(42)) AS n, now() AS at")
        #expect(try rows[0].decode(String.self, column: "t") == text)
        #expect(try rows[0].decode(Int64.self, column: "n") == 42)
        _ = try rows[0].decode(Date.self, column: "at")
    }
}

@Suite struct SessionSettingsTests {
    private func planCacheMode(_ config: ConnectionConfiguration) async throws -> String {
        try await PostgresConnection.withConnection(config) { connection in
            try await connection.query("SELECT current_setting('plan_cache_mode') AS mode")[0]
                .decode(String.self, column: "mode")
        }
    }

    @Test("sessions plan generically unless the operator's own options say otherwise")
    func genericPlans() async throws {
        let config = try await TestPostgres.makeDatabase()
        #expect(try await planCacheMode(config) == "force_generic_plan")
        let own = config.setting("options", "-c plan_cache_mode=auto -c statement_timeout=4321")
        #expect(try await planCacheMode(own) == "auto")
        let timeout = try await PostgresConnection.withConnection(own) { connection in
            try await connection.query("SELECT current_setting('statement_timeout') AS timeout")[0]
                .decode(String.self, column: "timeout")
        }
        #expect(timeout == "4321ms", "the operator's other options are kept")
    }
}
