public import Foundation
public import SpliceLog

/// S3 or an S3-compatible service (MinIO, Ceph RGW, R2, GCS's XML API) over libcurl: every
/// request signed with SigV4 by libcurl (`CURLOPT_AWS_SIGV4`), run on dedicated transfer
/// threads (never Swift's cooperative pool), retried with backoff on 5xx, timeouts and broken
/// connections (never on other 4xx).
///
///     let store = try ObjectStore(configuration: .fromEnvironment())   // AWS_* and ~/.aws
///     let input = try ObjectLocation(parsing: "s3://media/in.mov")
///     guard let info = try await store.info(input) else { … }         // HEAD
///     let reader = try await store.openReader(input)                  // one streaming GET per seek
///     let url = try store.presignedURL(for: input)                    // for FFmpeg's http reader
///     let writer = try await store.openWriter(for: output, overwrite: false)
///     try await writer.write(bytes); try await writer.finish()        // multipart, atomic
///     try await store.upload(file: "/tmp/out.mp4", to: output, overwrite: false)
///
/// Errors are ``ObjectStoreError``s naming the operation, bucket and key and what to do.
public final class ObjectStore: Sendable {
    /// The settings in use (its description is safe to log).
    public var configuration: ObjectStoreConfiguration { client.configuration }
    let client: S3Client

    /// A store for `configuration`; checks it (endpoint URL, part size, region) first.
    /// `logger` receives a warning for each retried request.
    public init(configuration: ObjectStoreConfiguration, logger: Logger? = nil) throws(ObjectStoreError) {
        client = try S3Client(configuration: configuration, logger: logger)
    }

    // MARK: - Objects

    /// The object's size and ETag (HEAD), or nil when it does not exist.
    public func info(_ location: ObjectLocation) async throws(ObjectStoreError) -> ObjectInfo? {
        try await client.head(location)
    }

    /// Checks that `bucket` exists and the credentials may use it (HEAD bucket): the quick
    /// check before accepting an output there. Throws `.noSuchBucket`, `.accessDenied`,
    /// `.invalidCredentials`, `.wrongRegion`…
    public func checkBucket(_ bucket: String) async throws(ObjectStoreError) {
        try await client.headBucket(bucket)
    }

    /// The object's bytes in `range` (the whole object when nil), in memory. For large objects
    /// use ``openReader(_:)``.
    public func get(_ location: ObjectLocation, range: Range<Int64>? = nil) async throws(ObjectStoreError) -> [UInt8] {
        do {
            return try await client.send(client.getRequest(location, range: range, etag: nil)).body
        } catch {
            throw S3Client.readError(error, location)
        }
    }

    /// Writes `bytes` as the object in one PUT. Without `overwrite`, an existing object is
    /// refused with `.alreadyExists` and left as it was.
    @discardableResult
    public func put(_ bytes: [UInt8], at location: ObjectLocation, overwrite: Bool, contentType: String? = nil)
        async throws(ObjectStoreError) -> ObjectInfo
    {
        try await client.put(bytes, at: location, overwrite: overwrite, contentType: contentType)
    }

    /// Deletes the object (nothing happens when it is not there).
    public func delete(_ location: ObjectLocation) async throws(ObjectStoreError) {
        try await client.delete(location)
    }

    // MARK: - Streams

    /// A reader of the object (HEAD first: throws `.notFound` when it is not there).
    public func openReader(_ location: ObjectLocation) async throws(ObjectStoreError) -> ObjectReader {
        guard let info = try await client.head(location) else {
            throw ObjectStoreError(.notFound, "\(location) does not exist; check the bucket and key", httpStatus: 404)
        }
        return ObjectReader(info: info, client: client)
    }

    /// A writer whose object appears only when it finishes (see ``ObjectWriter``). Without
    /// `overwrite`, an existing object is refused here already when the service needs a HEAD
    /// for it (custom endpoints), and in any case atomically when the writer finishes.
    public func openWriter(for location: ObjectLocation, overwrite: Bool, contentType: String? = nil)
        async throws(ObjectStoreError) -> ObjectWriter
    {
        let guarding = WriteGuard(configuration: client.configuration, location: location, overwrite: overwrite)
        if guarding.headsFirst { try guarding.refuseIfPresent(await client.head(location)) }
        return ObjectWriter(location: location, client: client, guarding: guarding, contentType: contentType)
    }

    /// Uploads the file at `path` as the object (in parts, several at once, when it is larger
    /// than one part); the object appears only when all of it is there. The file is read on a
    /// thread of its own.
    @discardableResult
    public func upload(file path: String, to location: ObjectLocation, overwrite: Bool, contentType: String? = nil)
        async throws(ObjectStoreError) -> ObjectInfo
    {
        let writer = try await openWriter(for: location, overwrite: overwrite, contentType: contentType)
        return try await FileUpload(path: path, writer: writer).run()
    }

    // MARK: - Multipart housekeeping

    /// The unfinished multipart uploads in `bucket` under `prefix` (they cost storage until
    /// aborted). For cleanup jobs and tests.
    public func listMultipartUploads(bucket: String, prefix: String = "") async throws(ObjectStoreError)
        -> [MultipartUploadInfo]
    {
        try await client.listMultipartUploads(bucket: bucket, prefix: prefix)
    }

    /// Aborts an unfinished multipart upload, deleting its parts (already gone counts as done).
    public func abortMultipartUpload(_ upload: MultipartUploadInfo) async throws(ObjectStoreError) {
        _ = try await client.send(client.abortRequest(upload.location, uploadID: upload.uploadID))
    }

    // MARK: - Presigned URLs

    /// A GET URL for the object that any HTTP client (FFmpeg's http reader) can use without
    /// credentials until `expiresIn` (at most 7 days) has passed since `now`.
    public func presignedURL(for location: ObjectLocation, expiresIn: Duration = .seconds(3600), now: Date = Date())
        throws(ObjectStoreError) -> PresignedURL
    {
        guard let credentials = client.configuration.credentials else {
            throw ObjectStoreError(.invalidConfiguration, "cannot presign \(location) without credentials; set "
                + "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE")
        }
        let seconds = Int(expiresIn.components.seconds)
        guard (1...604_800).contains(seconds) else {
            throw ObjectStoreError(.invalidConfiguration, "a presigned URL lives 1 s to 7 days, not \(seconds) s")
        }
        let presigner = Presigner(endpoint: client.endpoint, region: client.configuration.region, credentials: credentials)
        return PresignedURL(url: presigner.url(bucket: location.bucket, key: location.key, expires: seconds, date: now),
                            location: location)
    }
}
