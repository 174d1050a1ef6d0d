import Foundation
import SpliceObjectStore
import SpliceTestSupport
import Testing

/// Wrong credentials and missing buckets give clear errors at once; 5xx answers, stalls and
/// refused connections are retried with backoff, other 4xx answers never.
@Suite("Object store: clear errors, retries only where they help", .serialized)
struct ObjectStoreFailureTests {
    @Test("an unknown access key is refused with a message naming the object and AWS_ACCESS_KEY_ID, not retried")
    func unknownKey() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Fixture.make(endpoint: tap.endpoint) {
            $0.credentials = ObjectStoreCredentials(accessKeyID: "AKIANOTAREALKEY00000", secretAccessKey: "wrong",
                                                    source: "the environment (AWS_ACCESS_KEY_ID)")
        }
        let location = try s3.location("in.mov")
        let error = await #expect(throws: ObjectStoreError.self) { _ = try await s3.store.get(location) }
        #expect(error?.code == .invalidCredentials)
        #expect(error?.serviceCode == "InvalidAccessKeyId")
        #expect(error?.isRetryable == false)
        #expect(error?.message.contains("s3://\(s3.bucket)/in.mov") == true)
        #expect(error?.message.contains("AWS_ACCESS_KEY_ID") == true)
        #expect(error?.message.contains("wrong") == false, "the secret is never quoted")
        #expect(try tap.records().count == 1, "a 4xx answer is not retried")
    }

    @Test("a wrong secret is refused as a signature mismatch, also for HEAD (whose answer has no body)")
    func wrongSecret() async throws {
        let server = try await TestS3.server()
        let s3 = try await S3Fixture.make {
            $0.credentials = ObjectStoreCredentials(accessKeyID: server.accessKeyID, secretAccessKey: "not-the-secret")
        }
        let location = try s3.location("in.mov")
        for attempt in ["get", "head", "bucket"] {
            let error = await #expect(throws: ObjectStoreError.self, "\(attempt)") {
                switch attempt {
                case "get": _ = try await s3.store.get(location)
                case "head": _ = try await s3.store.info(location)
                default: try await s3.store.checkBucket(s3.bucket)
                }
            }
            #expect(error?.code == .invalidCredentials, "\(attempt)")
            #expect(error?.serviceCode == "SignatureDoesNotMatch", "\(attempt)")
            #expect(error?.message.contains("AWS_SECRET_ACCESS_KEY") == true, "\(attempt)")
            #expect(error?.message.contains("not-the-secret") == false, "\(attempt)")
        }
    }

    @Test("a missing bucket is named as such; an existing one checks out")
    func buckets() async throws {
        let s3 = try await S3Fixture.make()
        try await s3.store.checkBucket(s3.bucket)
        let error = await #expect(throws: ObjectStoreError.self) { try await s3.store.checkBucket("no-such-bucket-here") }
        #expect(error?.code == .noSuchBucket)
        #expect(error?.message.contains("no-such-bucket-here") == true)
        let put = await #expect(throws: ObjectStoreError.self) {
            try await s3.store.put([1], at: ObjectLocation(parsing: "s3://no-such-bucket-here/k"), overwrite: false)
        }
        #expect(put?.code == .noSuchBucket)
    }

    @Test("5xx answers are retried until one passes; the write lands once")
    func retriesServerErrors() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Fixture.make(endpoint: tap.endpoint)
        let location = try s3.location("retried.bin")
        try await tap.fail("PUT", status: 503, count: 2)
        try await s3.store.put([1, 2, 3], at: location, overwrite: false)
        #expect(try await s3.store.get(location) == [1, 2, 3])
        #expect(try tap.records().filter { $0.method == "PUT" }.count == 3)
    }

    @Test("a service failing every attempt gives a retryable error after the configured attempts")
    func givesUp() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Fixture.make(endpoint: tap.endpoint) { $0.maxAttempts = 3 }
        try await tap.fail("GET", status: 500, count: 100)
        let error = await #expect(throws: ObjectStoreError.self) { _ = try await s3.store.get(s3.location("x")) }
        #expect(error?.code == .serviceUnavailable)
        #expect(error?.isRetryable == true)
        #expect(error?.message.contains("after 3 attempts") == true)
        #expect(try tap.records().filter { $0.method == "GET" }.count == 3)
    }

    @Test("a stalled answer times out and is retried")
    func stall() async throws {
        let server = try await TestS3.server()
        let tap = try await S3Tap(upstream: server.endpoint)
        let s3 = try await S3Fixture.make(endpoint: tap.endpoint) { $0.stallTimeout = .seconds(3) }  // the tap stalls 5 s
        let location = try s3.location("stalled.bin")
        try await s3.store.put([7, 7, 7], at: location, overwrite: false)
        try await tap.fail("GET", status: 0, count: 1)
        #expect(try await s3.store.get(location) == [7, 7, 7])
        #expect(try tap.records().filter { $0.method == "GET" }.count == 2)
    }

    @Test("nothing listening: connection-failed, retryable, after the attempts")
    func refused() async throws {
        let server = try await TestS3.server()
        var configuration = S3Fixture.configuration(server, endpoint: "http://127.0.0.1:9")  // discard port: closed
        configuration.maxAttempts = 2
        let store = try ObjectStore(configuration: configuration)
        let error = await #expect(throws: ObjectStoreError.self) {
            _ = try await store.info(ObjectLocation(parsing: "s3://bucket/key"))
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.isRetryable == true)
        #expect(error?.message.contains("http://127.0.0.1:9") == true)
        #expect(error?.message.contains("after 2 attempts") == true)
    }
}
