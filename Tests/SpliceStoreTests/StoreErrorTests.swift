import Foundation
import Testing
@testable import SpliceStore

@Suite struct StoreErrorTests {
    @Test func descriptionsNeverShowThePassword() throws {
        let url = "postgresql://splice:s3cr%40t-pw@db.internal:5433/splice?sslmode=require"
        let configuration = try ConnectionConfiguration(url)
        #expect(configuration.value(of: "password") == "s3cr@t-pw")
        #expect(configuration.description == "host=db.internal port=5433 user=splice dbname=splice sslmode=require password=***")
        #expect(configuration.redactor.redact("failed for \(url) with s3cr@t-pw").contains("s3cr") == false)

        let keyValue = try ConnectionConfiguration("host=/run/pg user=app password='hunter 2' dbname=x")
        #expect(keyValue.value(of: "password") == "hunter 2")
        #expect(!keyValue.description.contains("hunter"))
        #expect(keyValue.with(database: "y").database == "y")
    }

    @Test func aConnectionStringThatDoesNotParseIsNotEchoed() {
        let bad = "host=db password=topsecret sslmode"
        let error = #expect(throws: StoreError.self) { try ConnectionConfiguration(bad) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error.map { !$0.description.contains("topsecret") } == true)
        // libpq quotes the offending token, which here is the password itself.
        let badURL = "postgresql://u:top%zzsecret@host/db"
        let urlError = #expect(throws: StoreError.self) { try ConnectionConfiguration(badURL) }
        #expect(urlError.map { !$0.description.contains("zzsecret") } == true)
    }

    @Test func patternsCatchSecretsNobodyDeclared() {
        #expect(Redactor.redactPatterns("dsn host=a password=abc123 user=b") == "dsn host=a password=*** user=b")
        #expect(Redactor.redactPatterns("PASSWORD = 'a b c' next") == "PASSWORD = *** next")
        #expect(Redactor.redactPatterns("postgres://me:pa55@h/db") == "postgres://me:***@h/db")
        #expect(Redactor.redactPatterns("no secrets here") == "no secrets here")
    }

    @Test func retryabilityFollowsSQLState() {
        #expect(StoreError(.queryFailed, "", sqlState: "40001").isRetryable)
        #expect(StoreError(.queryFailed, "", sqlState: "40P01").isRetryable)
        #expect(StoreError(.queryFailed, "", sqlState: "57P01").isRetryable)
        #expect(StoreError(.queryFailed, "", sqlState: "08006").isRetryable)
        #expect(StoreError(.connectionLost, "").isRetryable)
        #expect(!StoreError(.queryFailed, "", sqlState: "23505").isRetryable)
        #expect(!StoreError(.queryFailed, "", sqlState: "42601").isRetryable)
        #expect(StoreError(.queryFailed, "dup", sqlState: "23505").description
            == "store error query-failed (SQLSTATE 23505): dup")
    }
}
