import Foundation
import SpliceObjectStore
import SpliceTestSupport
import Testing

/// The signature checked by an independent implementation: every request Splice sends (libcurl
/// signing with CURLOPT_AWS_SIGV4) carries the Authorization header botocore's S3SigV4Auth
/// computes for the same method, URL, headers, body, time and credentials — so the signing holds
/// against real S3, not only against an emulator. A recording proxy captures the requests.
@Suite("Object store: signatures equal botocore's", .serialized)
struct SignatureOracleTests {
    @Test("GET with Range, HEAD, PUT, multipart create / PUT part / POST complete, list and abort")
    func everyRequestKind() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Fixture.make(endpoint: tap.endpoint) { $0.partSize = 5 << 20 }
        let key = "sig/a key with spaces+ünïcode.bin"
        let location = try s3.location(key)

        try await s3.store.put(S3Fixture.bytes(1000), at: location, overwrite: false)
        _ = try await s3.store.get(location, range: 10..<500)
        _ = try await s3.store.info(location)
        let writer = try await s3.store.openWriter(for: s3.location("sig/multipart.bin"), overwrite: false)
        try await writer.write(S3Fixture.bytes(11 << 20, seed: 2))
        try await writer.finish()
        let pending = try await s3.store.openWriter(for: s3.location("sig/aborted.bin"), overwrite: true)
        try await pending.write(S3Fixture.bytes(6 << 20, seed: 3))
        _ = try await s3.store.listMultipartUploads(bucket: s3.bucket, prefix: "sig/")
        await pending.abort()

        let checks = try await tap.botocoreSignatures(accessKeyID: server.accessKeyID,
                                                      secretAccessKey: server.secretAccessKey, region: server.region)
        let records = try tap.records()
        // Every kind the brief names is there: a ranged GET, a part PUT, the completing POST.
        #expect(records.contains { $0.method == "GET" && $0.header("Range") == "bytes=10-499" })
        #expect(records.contains { $0.method == "PUT" && $0.path.contains("partNumber=2") })
        #expect(records.contains { $0.method == "POST" && $0.path.contains("uploadId=") && $0.bodyLength > 0 })
        #expect(records.contains { $0.method == "DELETE" && $0.path.contains("uploadId=") })
        #expect(checks.count == records.count, "every request was signed")
        for check in checks {
            #expect(check.sent == check.botocore, "\(check.method) \(check.path)")
        }
        // The completion's body is signed by its SHA-256, which botocore computed from the bytes.
        let complete = try #require(checks.first { $0.method == "POST" && $0.path.contains("uploadId=") })
        #expect(complete.payloadHash?.count == 64)
    }

    @Test("with a session token, x-amz-security-token is sent and signed as botocore signs it")
    func sessionToken() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Fixture.make(endpoint: tap.endpoint) {
            $0.credentials = ObjectStoreCredentials(accessKeyID: "ASIATESTSESSIONKEY01", secretAccessKey: "session/secret+key",
                                                    sessionToken: "FwoGZXIvYXdzEJr//////////token+with/slashes==")
            $0.maxAttempts = 1
        }
        // moto does not know this key: the answer is a refusal, the signature is what is checked.
        _ = try? await s3.store.get(s3.location("k.bin"), range: 0..<10)
        let checks = try await tap.botocoreSignatures(accessKeyID: "ASIATESTSESSIONKEY01", secretAccessKey: "session/secret+key",
                                                      region: server.region,
                                                      sessionToken: "FwoGZXIvYXdzEJr//////////token+with/slashes==")
        let check = try #require(checks.first)
        #expect(check.sent == check.botocore)
        #expect(check.sent.contains("x-amz-security-token"))
        #expect(try tap.records().first?.header("x-amz-security-token") == "FwoGZXIvYXdzEJr//////////token+with/slashes==")
    }

    @Test("a presigned URL equals botocore's for the same time and credentials")
    func presignedURL() async throws {
        let server = try await TestS3.server()
        let s3 = try await S3Fixture.make()
        let key = "presign/clip with space+plus.mp4"
        let date = Date(timeIntervalSince1970: 1_700_000_123)
        let ours = try s3.store.presignedURL(for: s3.location(key), expiresIn: .seconds(900), now: date)
        let theirs = try await TestS3.run(["presign", server.endpoint, s3.bucket, key, server.accessKeyID,
                                           server.secretAccessKey, server.region, "900", "20231114T221523Z"])
        #expect(Self.queryItems(ours.url) == Self.queryItems(theirs.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(ours.url.hasPrefix(theirs.prefix { $0 != "?" }))
        #expect(!ours.description.contains("X-Amz-Signature"), "the description hides the signature")
    }

    /// The URL's query as a set of `name=value` pairs (order is not part of the signature).
    static func queryItems(_ url: String) -> Set<String> {
        Set(url.split(separator: "?", maxSplits: 1).last.map { $0.split(separator: "&").map(String.init) } ?? [])
    }
}
