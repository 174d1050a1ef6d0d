/// Storage that is not a file system, as SpliceMedia reads and writes media in it: object
/// storage (`s3://BUCKET/KEY`). SpliceMedia knows nothing of any service; a module that does
/// (SpliceObjectMedia, over SpliceObjectStore) implements this protocol and registers it
/// (``StorageRegistry/register(_:)``) once per process. From then on every place that takes a
/// path for an input or an output — ``Asset``, ``ExportSession``, ``SegmentPlanner``,
/// ``Stitcher``, ``Packager``, ``Transcoder``, ``OutputDestination`` — takes such a location too:
///
/// - inputs are read through a ``MediaByteSource`` (FFmpeg's demuxer reads and seeks in it
///   through a custom `AVIOContext`, on the thread that demuxes);
/// - outputs written front to back stream into a ``MediaByteSink`` while they are written (the
///   sink may keep its first part in memory, so a container can still fill in its header at the
///   end); outputs that are rewritten after the muxer is done (MP4 `faststart`, appended
///   timed-metadata tracks) and streaming packages are written to a local staging file first and
///   then uploaded whole with ``upload(files:overwrite:cancellation:)``.
///
/// Every method blocks the calling thread until it is done: call them from threads that may
/// block (FFmpeg's, a ``BlockingThread``, a Dispatch queue), never from a task on Swift's
/// cooperative pool. Errors are ``MediaError``s in SpliceMedia's codes (`file-not-found` for an
/// input that cannot be read, `write-failed`, `output-exists`…) with the service's own reason in
/// the message, which never holds a secret.
public protocol MediaStorage: Sendable {
    /// The URL scheme this storage serves (`s3`): locations are `SCHEME://…`.
    var scheme: String { get }

    /// Throws `invalid-settings` when `location` is not a valid location here (a bucket name S3
    /// would refuse), naming what is wrong.
    func validate(_ location: String) throws(MediaError)

    /// The checks before any work reads `location`: it exists and these credentials may read it
    /// (a HEAD). Throws `file-not-found` with the reason (missing, access denied, wrong
    /// credentials, unreachable service).
    func checkInput(_ location: String) throws(MediaError)

    /// The checks before any work writes `location`: the place exists and these credentials may
    /// reach it (the bucket), and without `overwrite` nothing is there yet (`output-exists`).
    func checkOutput(_ location: String, overwrite: Bool) throws(MediaError)

    /// Opens `location` for reading (it must exist: `file-not-found` otherwise).
    func openSource(_ location: String) throws(MediaError) -> any MediaByteSource

    /// A sink whose bytes appear at `location` only when it finishes; without `overwrite` an
    /// object that is there (or appears meanwhile) is refused (`output-exists`) and kept.
    func openSink(_ location: String, overwrite: Bool) throws(MediaError) -> any MediaByteSink

    /// Uploads local files, each to its location (several at once), and returns when all are
    /// there. On the first failure no more are started, the ones running end, everything this
    /// call uploaded is removed again, and the failure is thrown. Once `cancellation` is set, the
    /// same with `cancelled`: no more are started, uploads in parts are aborted, a file going up in
    /// one request is let finish (a request whose body has gone may still be stored, so only a
    /// removal after its answer is sure to leave nothing) and then removed. Without `overwrite` an
    /// existing object is refused (`output-exists`) and kept.
    func upload(files: [(path: String, location: String)], overwrite: Bool, cancellation: CancelFlag?) throws(MediaError)

    /// Whether something is at `location`.
    func exists(_ location: String) throws(MediaError) -> Bool

    /// The locations that start with `prefix` (a "folder": `s3://b/show/out-720p-3M/`).
    func list(prefix: String) throws(MediaError) -> [String]

    /// Removes what is at `location` (nothing there is no error).
    func remove(_ location: String) throws(MediaError)

    /// Whether `location` is `root` or lies below it, `root` taken as a folder
    /// (`--input-root s3://bucket/prefix`); false for a location in another bucket or not of
    /// this storage.
    func isWithin(_ location: String, root: String) -> Bool
}

/// An input's bytes, read as a file is read with `pread`: at any offset, in any order.
/// Used from one thread at a time (the demuxer's).
public protocol MediaByteSource: AnyObject, Sendable {
    /// The length in bytes.
    var size: Int64 { get }
    /// Copies up to `buffer.count` bytes at `offset` into `buffer`; the count copied, 0 at or
    /// past the end. Blocks until they are there.
    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(MediaError) -> Int
}

/// An output's bytes, written front to back; nothing appears at its location until ``finish()``,
/// and nothing at all after ``abort()`` (or when the sink is let go unfinished). Used from one
/// thread at a time (the muxer's).
public protocol MediaByteSink: AnyObject, Sendable {
    /// How many bytes were written so far (the offset the next append goes to).
    var bytesWritten: Int64 { get }
    /// Appends `bytes`. Blocks while the storage is behind.
    func append(_ bytes: UnsafeRawBufferPointer) throws(MediaError)
    /// Rewrites bytes written earlier, from `offset` on. A sink can do that only while they are
    /// still in its hands (its first part, the part being filled); elsewhere it throws
    /// `write-failed` and the output is lost.
    func patch(at offset: Int64, _ bytes: UnsafeRawBufferPointer) throws(MediaError)
    /// Makes the output appear. On failure nothing appears.
    func finish() throws(MediaError)
    /// Drops everything written; nothing appears. Safe to call more than once, and after a failure.
    func abort()
}
