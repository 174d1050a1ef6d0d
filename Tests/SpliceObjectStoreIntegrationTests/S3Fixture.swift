import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceObjectStore
import SpliceTestSupport

/// A store on the test emulator (directly, or through a tap) with a fresh bucket.
struct S3Fixture {
    let server: TestS3.Server
    let bucket: String
    let store: ObjectStore

    /// A fresh bucket and a store for it; `endpoint` overrides the emulator's (a tap's), and
    /// `adjust` changes the configuration (credentials, part size, conditional writes…).
    static func make(endpoint: String? = nil, _ adjust: (inout ObjectStoreConfiguration) -> Void = { _ in })
        async throws -> S3Fixture
    {
        let server = try await TestS3.server()
        let bucket = try await TestS3.makeBucket()
        var configuration = configuration(server, endpoint: endpoint)
        adjust(&configuration)
        return S3Fixture(server: server, bucket: bucket, store: try ObjectStore(configuration: configuration))
    }

    /// The emulator's credentials and endpoint, with short retry pauses (tests wait less).
    static func configuration(_ server: TestS3.Server, endpoint: String? = nil) -> ObjectStoreConfiguration {
        var configuration = ObjectStoreConfiguration(
            credentials: ObjectStoreCredentials(accessKeyID: server.accessKeyID, secretAccessKey: server.secretAccessKey),
            region: server.region, endpoint: endpoint ?? server.endpoint)
        configuration.retryBackoff = Backoff(base: .milliseconds(10), cap: .milliseconds(50))
        return configuration
    }

    /// `s3://bucket/key`.
    func location(_ key: String) throws -> ObjectLocation {
        try ObjectLocation(bucket: bucket, key: key)
    }

    /// `count` reproducible bytes that do not repeat with any short period.
    static func bytes(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { raw in
            let words = raw.count / 8
            let pointer = raw.baseAddress!
            for index in 0..<words { pointer.storeBytes(of: generator.next(), toByteOffset: index * 8, as: UInt64.self) }
            for index in (words * 8)..<raw.count { raw[index] = UInt8(truncatingIfNeeded: generator.next()) }
        }
        return bytes
    }

    /// ``bytes(_:seed:)`` on a thread of its own: tens of MiB take seconds in a debug build, which
    /// must not hold one of the cooperative pool's two threads (the other suites' deadlines run
    /// on them).
    static func bytesOffPool(_ count: Int, seed: UInt64 = 1) async -> [UInt8] {
        await ExternalTool.computeOffPool { bytes(count, seed: seed) }
    }

    /// Whether `a` and `b` hold the same bytes: `memcmp`, not `Array`'s `==`, which a debug build
    /// runs element by element through generic witnesses — a 100 MiB comparison held a pool thread
    /// for seconds — and whose failure would print both arrays.
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && a.withUnsafeBytes { x in b.withUnsafeBytes { y in
            x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0
        } }
    }
}
