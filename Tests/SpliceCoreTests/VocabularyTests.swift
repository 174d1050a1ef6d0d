import Foundation
import SpliceCore
import Testing

@Suite("Ids: one text form, refused where they enter")
struct IdentifierTests {
    @Test("the text form is the UUID's lowercase text, parsed in either case")
    func text() throws {
        let uuid = try #require(UUID(uuidString: "7C1E9D2A-5B7E-4C11-9F00-ABCDEF012345"))
        let job = JobID(uuid)
        #expect(job.description == "7c1e9d2a-5b7e-4c11-9f00-abcdef012345")
        #expect(job.description == uuid.uuidString.lowercased())
        #expect(JobID("7C1E9D2A-5B7E-4C11-9F00-ABCDEF012345") == job)
        #expect(JobID(job.description) == job)
        #expect(JobID("job-1") == nil)
        #expect(LeaseToken("") == nil)
        for malformed in ["7c1e9d2a5b7e-4c11-9f00-abcdef012345-", "7c1e9d2a-5b7e-4c11-9f00-abcdef01234g",
                          "7c1e9d2a-5b7e-4c11-9f00_abcdef012345", " 7c1e9d2a-5b7e-4c11-9f00-abcdef01234",
                          "7c1e9d2a-5b7e-4c11-9f00-abcdef0123456", "7c1e9d2a-5b7e-4c11-9f00-abcdef01234é"] {
            #expect(JobID(malformed) == nil, "\(malformed)")
        }
        for _ in 0..<100 {
            let random = UUID()
            #expect(LeaseToken(random).description == random.uuidString.lowercased())
        }
    }

    @Test("JSON: a plain string; anything but a UUID does not decode")
    func json() throws {
        let token = LeaseToken(UUID())
        let encoded = try JSONEncoder().encode([token])
        #expect(String(decoding: encoded, as: UTF8.self) == "[\"\(token)\"]")
        #expect(try JSONDecoder().decode([LeaseToken].self, from: encoded) == [token])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([JobID].self, from: Data(#"["job-1"]"#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([JobID].self, from: Data("[7]".utf8)) }
    }
}

@Suite("SHA256Digest: one text form, sha256: and 64 hex digits")
struct DigestTests {
    @Test("parses and writes its one form")
    func text() throws {
        let hex = String(repeating: "ab", count: 32)
        let digest = try #require(SHA256Digest("sha256:" + hex))
        #expect(digest.description == "sha256:" + hex)
        #expect(digest.bytes == [UInt8](repeating: 0xAB, count: 32))
        #expect(SHA256Digest("sha256:" + hex.uppercased()) == digest)
        #expect(SHA256Digest(bytes: [UInt8](repeating: 0xAB, count: 32)) == digest)
        #expect(SHA256Digest(hex) == nil)
        #expect(SHA256Digest("sha256:" + hex.dropLast()) == nil)
        #expect(SHA256Digest("sha256:" + hex.dropLast() + "g") == nil)
        #expect(SHA256Digest("md5:" + hex) == nil)
        #expect(SHA256Digest(bytes: [1, 2, 3]) == nil)
    }

    @Test("JSON: its text form; malformed text does not decode")
    func json() throws {
        let digest = try #require(SHA256Digest(bytes: Array(0..<32)))
        let encoded = try JSONEncoder().encode([digest])
        #expect(try JSONDecoder().decode([SHA256Digest].self, from: encoded) == [digest])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([SHA256Digest].self, from: Data(#"["c"]"#.utf8)) }
    }
}

@Suite("Errors: one shape")
struct ErrorShapeTests {
    enum Code: String, Sendable, Hashable {
        case wornOut = "worn-out"
    }

    @Test("a plain error is its code, its message and whether a retry helps; it prints its message")
    func coded() {
        let error = CodedError(Code.wornOut, "the widget is worn out; replace it", isRetryable: true)
        #expect(error.code.rawValue == "worn-out" && error.isRetryable)
        #expect("\(error)" == "the widget is worn out; replace it")
        #expect(CodedError(Code.wornOut, "x").isRetryable == false)
        let any: any SpliceError = error
        #expect(any.message == error.message)
    }
}
