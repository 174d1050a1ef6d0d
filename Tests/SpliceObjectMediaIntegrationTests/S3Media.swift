import Foundation
import SpliceConcurrency
import SpliceObjectStore
import SpliceTestSupport

/// A fresh bucket on the test emulator, a store to look at it from the test (independently of
/// the `splice` processes under test, which get only ``environment``), and the environment those
/// processes need.
struct S3Media {
    let bucket: String
    let store: ObjectStore
    /// `AWS_*` for a `splice` process: the emulator, or the tap in front of it.
    let environment: [String: String]

    static func make(endpoint: String? = nil) async throws -> S3Media {
        let server = try await TestS3.server()
        let bucket = try await TestS3.makeBucket("media")
        var configuration = ObjectStoreConfiguration(
            credentials: ObjectStoreCredentials(accessKeyID: server.accessKeyID, secretAccessKey: server.secretAccessKey),
            region: server.region, endpoint: server.endpoint)
        configuration.retryBackoff = Backoff(base: .milliseconds(10), cap: .milliseconds(50))
        return S3Media(bucket: bucket, store: try ObjectStore(configuration: configuration),
                       environment: try await TestS3.environment(endpoint: endpoint))
    }

    /// `s3://bucket/key`.
    func url(_ key: String) -> String { "s3://\(bucket)/\(key)" }

    func object(_ key: String) throws -> ObjectLocation { try ObjectLocation(bucket: bucket, key: key) }

    /// Uploads a local file as `key`.
    func put(_ path: String, as key: String) async throws {
        try await store.upload(file: path, to: object(key), overwrite: true)
    }

    /// The object `key`, written to a new local file.
    func download(_ key: String) async throws -> String {
        let bytes = try await store.get(object(key))
        let path = Fixtures.temporaryDirectory("s3-get").appendingPathComponent(try object(key).name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The keys under `prefix`, in order.
    func keys(under prefix: String = "") async throws -> [String] {
        try await store.listObjects(bucket: bucket, prefix: prefix).map(\.location.key)
    }

    /// The multipart uploads left unfinished in the bucket.
    func unfinishedUploads() async throws -> [MultipartUploadInfo] {
        try await store.listMultipartUploads(bucket: bucket)
    }
}

/// Every regular file under `folder`, by its path relative to it, with its bytes.
func fileContents(under folder: String) throws -> [String: Data] {
    let root = URL(fileURLWithPath: folder).standardizedFileURL
    var contents: [String: Data] = [:]
    for case let url as URL in FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) ?? .init()
    where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
        contents[String(url.standardizedFileURL.path.dropFirst(root.path.count + 1))] = try Data(contentsOf: url)
    }
    return contents
}
