import SpliceCore
import Foundation
import Testing
@testable import SpliceStore

@Suite struct PostgresQueryTests {
    @Test func interpolatedValuesBecomeNumberedParameters() {
        let id = UUID(uuidString: "5B1C8B2E-0C53-4B7B-9B39-6A1D2A2C6F01")!
        let hostile = "x'; DROP TABLE jobs; --"
        let query: PostgresQuery = "SELECT * FROM jobs WHERE id = \(id) AND source_url = \(hostile) LIMIT \(10)"
        let (sql, binds) = query.rendered
        #expect(sql == "SELECT * FROM jobs WHERE id = $1 AND source_url = $2 LIMIT $3")
        #expect(!sql.contains("DROP"))
        #expect(binds == [PostgresBind(id), PostgresBind(hostile), PostgresBind(10)])
        #expect(binds.map(\.type) == [.uuid, .text, .int8])
        #expect(binds[0].text == "5b1c8b2e-0c53-4b7b-9b39-6a1d2a2c6f01")
        #expect(query.description == sql, "the description never shows values")
    }

    @Test func nilBindsAsNullAndFragmentsAreRenumbered() {
        let missing: String? = nil
        let fragment: PostgresQuery = "state = \("leased") AND leased_by = \(7)"
        let query: PostgresQuery = "UPDATE t SET error = \(missing) WHERE \(fragment) AND id = \(Int64(3))"
        let (sql, binds) = query.rendered
        #expect(sql == "UPDATE t SET error = $1 WHERE state = $2 AND leased_by = $3 AND id = $4")
        #expect(binds.map(\.text) == [nil, "leased", "7", "3"])
        #expect(binds[0].type == .text)
    }

    @Test func identifiersAreQuoted() {
        let query: PostgresQuery = "CREATE DATABASE \(identifier: #"evil"; DROP DATABASE x; --"#)"
        #expect(query.rendered.sql == #"CREATE DATABASE "evil""; DROP DATABASE x; --""#)
        #expect(query.rendered.binds.isEmpty)
    }

    @Test func arraysUseTheQuotedLiteralForm() throws {
        let values = ["plain", #"with "quotes""#, #"back\slash"#, "comma,brace}", "", "ü→🎬 \"{}\""]
        let text = values.postgresText
        #expect(text == #"{"plain","with \"quotes\"","back\\slash","comma,brace}","","ü→🎬 \"{}\""}"#)
        #expect(try [String].decode(postgresText: text) == values)
        #expect(try [Int].decode(postgresText: "{1,2}") == [1, 2])
        #expect(try [String?].decode(postgresText: #"{a,NULL,"NULL"}"#) == ["a", nil, "NULL"])
        #expect(try [UUID].decode(postgresText: "{}").isEmpty)
        #expect([UUID].postgresType == .uuidArray && [Int].postgresType == .int8Array)
    }

    @Test func scalarsRoundTripThroughTheirTextForms() throws {
        #expect(try Bool.decode(postgresText: "t") && !(try Bool.decode(postgresText: "f")))
        #expect(try Int32.decode(postgresText: "-2147483648") == Int32.min)
        #expect(throws: PostgresDecodingIssue.self) { try Int32.decode(postgresText: "2147483648") }
        #expect(throws: PostgresDecodingIssue.self) { try String.decode(postgresText: nil) }
        #expect(try String?.decode(postgresText: nil) == nil)
        let bytes = Data([0, 1, 0x7f, 0x80, 0xff])
        #expect(bytes.postgresText == "\\x00017f80ff")
        #expect(try Data.decode(postgresText: bytes.postgresText) == bytes)
        #expect(try JobState.decode(postgresText: "stitching") == .stitching)
        #expect(throws: PostgresDecodingIssue.self) { try JobState.decode(postgresText: "exploded") }
    }

    @Test func timestampsParseExactlyAndRoundTrip() throws {
        let parsed = try #require(PostgresTimestamp(text: "2024-02-29 23:59:58.123456+00"))
        #expect(parsed.microsecondsSinceEpoch == 1_709_251_198_123_456)
        #expect(parsed.text == "2024-02-29 23:59:58.123456+00")
        let offset = try #require(PostgresTimestamp(text: "2024-02-29 23:59:58+05:30"))
        #expect(offset.text == "2024-02-29 18:29:58.000000+00")
        #expect(PostgresTimestamp(text: "1969-12-31 23:59:59.5+00")?.microsecondsSinceEpoch == -500_000)
        #expect(PostgresTimestamp(microsecondsSinceEpoch: -500_000).text == "1969-12-31 23:59:59.500000+00")
        #expect(PostgresTimestamp(text: "2024-13-01 00:00:00+00") == nil)
        #expect(PostgresTimestamp(text: "yesterday") == nil)
        #expect(PostgresTimestamp(text: "2024-01-01 00:00:00.1234567+00")?.microsecondsSinceEpoch
            == 1_704_067_200_123_456)
        #expect(try Date.decode(postgresText: "infinity") > Date.distantFuture)
    }
}
