public import SpliceLog
public import SpliceMedia
public import SpliceObjectStore
import Foundation
import Synchronization

/// Object storage (`s3://BUCKET/KEY`) as SpliceMedia's ``MediaStorage``: inputs read through an
/// ``ObjectReader`` (one streaming GET per seek, pinned to the object's ETag), outputs streamed
/// into a multipart upload that holds its first part until the end (so a muxer can fill in its
/// header), staged files uploaded in parts, `-y` kept (`If-None-Match: *`, a HEAD first where the
/// service may ignore it). The glue between the two modules, so that neither depends on the other.
///
///     StorageRegistry.register(ObjectMediaStorage.fromEnvironment(logger: logger))  // once, at start
///     let asset = try await Asset.open("s3://media/in.mov")                          // then as any path
///
/// The store is made on first use, from the environment and `~/.aws` the way the AWS tools read
/// them (``ObjectStoreConfiguration/fromEnvironment(_:)``): a process that never touches a bucket
/// never reads those files, and a malformed one is reported by the first command that needs it.
public final class ObjectMediaStorage: MediaStorage {
    public let scheme = ObjectLocation.scheme
    private let makeStore: @Sendable () throws(ObjectStoreError) -> ObjectStore
    private let made = Mutex<Result<ObjectStore, ObjectStoreError>?>(nil)
    /// Uploads of staged files run at once (each in parts, several parts at once).
    static let concurrentUploads = 4

    /// A storage over `store`.
    public init(store: ObjectStore) {
        makeStore = { store }
    }

    /// A storage whose store is made on first use by `makeStore`.
    public init(makingStore makeStore: @escaping @Sendable () throws(ObjectStoreError) -> ObjectStore) {
        self.makeStore = makeStore
    }

    /// The storage of this process's environment (`AWS_*`, `~/.aws`), made on first use.
    public static func fromEnvironment(logger: Logger? = nil) -> ObjectMediaStorage {
        ObjectMediaStorage { () throws(ObjectStoreError) in
            try ObjectStore(configuration: .fromEnvironment(), logger: logger)
        }
    }

    /// The store, made now if it was not yet (a configuration error is kept and thrown each time).
    public func store() throws(ObjectStoreError) -> ObjectStore {
        let result = made.withLock { cached in
            if let cached { return cached }
            let result = Result { () throws(ObjectStoreError) in try makeStore() }
            cached = result
            return result
        }
        return try result.get()
    }

    // MARK: - MediaStorage

    public func validate(_ location: String) throws(MediaError) {
        let parsed = try object(location, for: .input)
        if parsed.isBucket { throw MediaError(.invalidSettings, "\(location) names a bucket; give an object key: s3://BUCKET/KEY") }
    }

    public func checkInput(_ location: String) throws(MediaError) {
        let object = try object(location, for: .input)
        let found = try run(.input) { (store) throws(ObjectStoreError) in try await store.info(object) }
        guard found != nil else {
            throw MediaError(.fileNotFound, "cannot read \(location): no such object; check the bucket and key")
        }
    }

    public func checkOutput(_ location: String, overwrite: Bool) throws(MediaError) {
        let object = try object(location, for: .output)
        if object.isBucket || object.key.hasSuffix("/") {
            throw MediaError(.invalidSettings, "\(location) names a folder; give the output an object key")
        }
        let present = try run(.output) { (store) throws(ObjectStoreError) -> Bool in
            try await store.checkBucket(object.bucket)
            return overwrite ? false : try await store.info(object) != nil
        }
        if present { throw OutputDestination.exists(location) }
    }

    public func openSource(_ location: String) throws(MediaError) -> any MediaByteSource {
        let object = try object(location, for: .input)
        return ObjectByteSource(try run(.input) { (store) throws(ObjectStoreError) in try await store.openReader(object) })
    }

    public func openSink(_ location: String, overwrite: Bool) throws(MediaError) -> any MediaByteSink {
        let object = try object(location, for: .output)
        return ObjectByteSink(try run(.output) { (store) throws(ObjectStoreError) in
            try await store.openWriter(for: object, overwrite: overwrite, contentType: Self.contentType(of: object.key),
                                       holdingFirstPart: true)
        })
    }

    public func upload(files: [(path: String, location: String)], overwrite: Bool, cancellation: CancelFlag?)
        throws(MediaError)
    {
        let objects = try files.map { (file) throws(MediaError) in (file.path, try object(file.location, for: .output)) }
        try run(.output) { (store) throws(ObjectStoreError) in
            try await Self.upload(objects, to: store, overwrite: overwrite, cancellation: cancellation)
        }
    }

    public func exists(_ location: String) throws(MediaError) -> Bool {
        let object = try object(location, for: .input)
        return try run(.input) { (store) throws(ObjectStoreError) in try await store.info(object) } != nil
    }

    public func list(prefix: String) throws(MediaError) -> [String] {
        let folder = try object(prefix, for: .input)
        return try run(.input) { (store) throws(ObjectStoreError) in
            try await store.listObjects(bucket: folder.bucket, prefix: folder.key)
        }.map(\.location.description)
    }

    public func remove(_ location: String) throws(MediaError) {
        let object = try object(location, for: .output)
        try run(.output) { (store) throws(ObjectStoreError) in try await store.delete(object) }
    }

    public func isWithin(_ location: String, root: String) -> Bool {
        guard let object = try? ObjectLocation(parsing: location), let root = try? ObjectLocation(parsing: root) else {
            return false
        }
        return object.isWithin(root)
    }

    // MARK: - Implementation

    /// Which side of a job a location is on: it decides the ``MediaError`` code of a failure.
    enum Side { case input, output }

    private func object(_ location: String, for side: Side) throws(MediaError) -> ObjectLocation {
        do {
            return try ObjectLocation(parsing: location)
        } catch {
            throw MediaError(.invalidSettings, error.message)
        }
    }

    /// Runs `body` with the store, blocking the calling thread (never call it from a task on
    /// Swift's cooperative pool: it would hold one of the pool's few threads while its task needs one).
    private func run<T: Sendable>(_ side: Side, _ body: @escaping @Sendable (ObjectStore) async throws(ObjectStoreError) -> T)
        throws(MediaError) -> T
    {
        do throws(ObjectStoreError) {
            let objectStore = try store()
            return try ThreadBridge.wait { () async throws(ObjectStoreError) -> T in try await body(objectStore) }
        } catch {
            throw Self.mediaError(error, side)
        }
    }

    /// Uploads `files` at most ``concurrentUploads`` at a time; on the first failure, or once
    /// `cancellation` is set, no more are started and the objects this call stored are deleted
    /// again. A cancelled upload in parts is aborted at once (nothing of it is ever stored); a
    /// file that fits one request is let finish first — its body may already be with the service,
    /// which can store it whatever the client does, so only a delete after its answer is sure.
    private static func upload(_ files: [(String, ObjectLocation)], to store: ObjectStore, overwrite: Bool,
                               cancellation: CancelFlag?) async throws(ObjectStoreError)
    {
        let partSize = Int64(store.configuration.partSize)
        var stored: [ObjectLocation] = []
        var failure: ObjectStoreError?
        await withTaskGroup(of: (ObjectLocation, ObjectStoreError?).self) { group in
            var pending = files[...]
            func startNext() {
                guard failure == nil, cancellation?.isSet != true, let (path, location) = pending.popFirst() else { return }
                let inParts = ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? 0) > partSize
                group.addTask {
                    // Its own task, so that a cancellation can reach this upload alone.
                    let upload = Task { () async -> ObjectStoreError? in
                        do throws(ObjectStoreError) {
                            _ = try await store.upload(file: path, to: location, overwrite: overwrite,
                                                       contentType: ObjectMediaStorage.contentType(of: location.key))
                            return nil
                        } catch {
                            return error
                        }
                    }
                    if inParts { cancellation?.whenSet { upload.cancel() } }
                    return (location, await upload.value)
                }
            }
            for _ in 0..<concurrentUploads { startNext() }
            while let (location, error) = await group.next() {
                if let error {
                    if failure == nil { failure = error }
                } else {
                    stored.append(location)
                }
                startNext()
            }
        }
        if failure == nil, cancellation?.isSet == true {
            failure = ObjectStoreError(.cancelled, "the upload of \(files.count) file(s) was cancelled")
        }
        if let failure {
            for location in stored { try? await store.delete(location) }
            throw failure
        }
    }

    /// An object store error in SpliceMedia's terms: the service's message kept whole.
    static func mediaError(_ error: ObjectStoreError, _ side: Side) -> MediaError {
        let code: MediaError.Code
        switch error.code {
        case .alreadyExists: code = .outputExists
        case .cancelled: code = .cancelled
        case .invalidLocation, .invalidConfiguration: code = .invalidSettings
        default: code = side == .input ? .fileNotFound : .writeFailed
        }
        return MediaError(code, error.message, isRetryable: error.isRetryable)
    }

    /// The Content-Type an object gets from its name: what players and CDNs expect of a package.
    static func contentType(of key: String) -> String {
        let name = key.split(separator: "/").last.map(String.init) ?? key
        let ext = name.lastIndex(of: ".").map { name[name.index(after: $0)...].lowercased() } ?? ""
        switch ext {
        case "mp4", "m4v": return "video/mp4"
        case "m4a": return "audio/mp4"
        case "m4s": return "video/iso.segment"
        case "mov": return "video/quicktime"
        case "mkv": return "video/x-matroska"
        case "webm": return "video/webm"
        case "ts": return "video/mp2t"
        case "m3u8": return "application/vnd.apple.mpegurl"
        case "mpd": return "application/dash+xml"
        default: return "application/octet-stream"
        }
    }
}
