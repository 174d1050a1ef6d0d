import Foundation
import SpliceCore
import Testing
@testable import SpliceObjectStore

/// The one place Splice computes SigV4 itself, against AWS's own published example and the
/// HMAC test vectors of RFC 4231 (botocore's presigner is compared in the integration tests).
@Suite("Presigned URLs and HMAC-SHA256: the published examples")
struct PresignerTests {
    @Test("AWS's query-string signing example (GET examplebucket/test.txt, 24 h) gives AWS's signature")
    func awsExample() throws {
        // docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html
        var configuration = ObjectStoreConfiguration(
            credentials: ObjectStoreCredentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                                                secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
            region: "us-east-1", endpoint: "https://s3.amazonaws.com", addressingStyle: .virtualHosted)
        configuration.conditionalWrites = .automatic
        let store = try ObjectStore(configuration: configuration)
        let date = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z
        let url = try store.presignedURL(for: ObjectLocation(parsing: "s3://examplebucket/test.txt"),
                                         expiresIn: .seconds(86_400), now: date)
        #expect(url.url == "https://examplebucket.s3.amazonaws.com/test.txt"
            + "?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            + "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
            + "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
            + "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
        #expect(url.description == "https://examplebucket.s3.amazonaws.com/test.txt?<presigned>")
    }

    @Test("presigning needs credentials and an expiry between 1 s and 7 days")
    func limits() throws {
        let anonymous = try ObjectStore(configuration: ObjectStoreConfiguration(credentials: nil))
        let location = try ObjectLocation(parsing: "s3://bucket/key")
        #expect(throws: ObjectStoreError.self) { _ = try anonymous.presignedURL(for: location) }
        let store = try ObjectStore(configuration: ObjectStoreConfiguration(
            credentials: ObjectStoreCredentials(accessKeyID: "AKIA0000000000000000", secretAccessKey: "s")))
        #expect(throws: ObjectStoreError.self) { _ = try store.presignedURL(for: location, expiresIn: .seconds(604_801)) }
        #expect(try store.presignedURL(for: location, expiresIn: .seconds(604_800)).url.contains("X-Amz-Expires=604800"))
    }

    @Test("HMAC-SHA256: RFC 4231 test cases 1, 2 and 6 (a key longer than a block)")
    func hmac() {
        func mac(_ key: [UInt8], _ data: String) -> String {
            SHA256.hex(HMACSHA256(key: key).authenticationCode(for: Array(data.utf8)))
        }
        #expect(mac([UInt8](repeating: 0x0b, count: 20), "Hi There")
            == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(mac(Array("Jefe".utf8), "what do ya want for nothing?")
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(mac([UInt8](repeating: 0xaa, count: 131), "Test Using Larger Than Block-Size Key - Hash Key First")
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        // No key and no message (a webhook secret left empty): what Python's hmac gives.
        #expect(mac([], "") == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }
}
