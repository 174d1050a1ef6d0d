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
