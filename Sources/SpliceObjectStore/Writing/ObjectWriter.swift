import Synchronization

/// Writes one object as a stream, the way a file is written to a temporary name and renamed:
/// nothing appears at the location until ``finish()`` returns, and ``abort()`` — or a failure,
/// a cancellation, or letting go of the writer unfinished — leaves nothing behind, not even the
/// parts already uploaded (AbortMultipartUpload, so no orphaned parts keep costing storage).
///
///     let writer = try await store.openWriter(for: output, overwrite: false)
///     try await writer.write(bytes)          // parts go up while more is written
///     let info = try await writer.finish()    // the object appears now
///
/// Bytes are cut into parts (``ObjectStoreConfiguration/partSize``, 8 MiB, growing past
/// 1,000 parts); each full part is uploaded at once, up to
/// ``ObjectStoreConfiguration/concurrentParts`` at a time, while writing goes on: `write`
/// waits only when that many are in flight. An object smaller than one part is sent as one PUT
/// by `finish()`. Without `overwrite`, an existing object is refused when the writer opens
/// (custom endpoints: HEAD) and again atomically at the end (`If-None-Match: *`).
///
/// Opened `holdingFirstPart`, the writer keeps the first part in memory until `finish()` and
/// uploads it last (S3 joins parts by number, not by the order they arrive), so bytes in it can
/// still be rewritten with ``patch(at:with:)``: what a container that fills in its header at
/// the end needs (MP4's `mdat` size, Matroska's segment size and cues position) to stream
/// anyway. Bytes of the part being filled can be rewritten too; bytes already uploaded cannot.
///
/// Write from one task or thread at a time. The `…Blocking` variants are for threads that may
/// block (an FFmpeg write callback); never call them from a task.
public final class ObjectWriter: Sendable {
    /// Where the object will appear.
    public let location: ObjectLocation
    let client: S3Client
    let guarding: WriteGuard
    let contentType: String?
    let state: Mutex<State>

    enum Phase: Sendable { case open, finishing, finished, aborted }

    struct State: Sendable {
        var phase = Phase.open
        /// The first part, held until `finish()` when the writer was opened holding it (nil otherwise).
        var head: [UInt8]?
        /// The part being filled.
        var buffer: [UInt8] = []
        var uploadID: String?
        var nextPart = 1
        var bytesWritten: Int64 = 0
        /// ETags of uploaded parts by part number.
        var etags: [Int: String] = [:]
        var inFlight = 0
        /// The first failure of a part upload (the writer is then aborted).
        var failure: ObjectStoreError?
        /// The in-flight parts' cancellation flags, by part number.
        var cancellations: [Int: CancellationFlag] = [:]
        /// Tasks waiting for the number in flight to drop.
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// The abort under way or done, which every caller of `abort()` waits for.
        var aborting: Task<Void, Never>?
    }

    init(location: ObjectLocation, client: S3Client, guarding: WriteGuard, contentType: String?,
         holdingFirstPart: Bool = false) {
        self.location = location
        self.client = client
        self.guarding = guarding
        self.contentType = contentType
        var initial = State()
        if holdingFirstPart {
            initial.head = []
            initial.nextPart = 2  // parts 2, 3… go up as they fill; part 1 is the head, sent by finish()
        }
        state = Mutex(initial)
    }

    deinit {
        // Let go of unfinished: in-flight parts hold the writer, so none is running now; the
        // upload (if one was started) is aborted in the background.
        let (phase, uploadID) = state.withLock { ($0.phase, $0.uploadID) }
        if phase != .finished && phase != .aborted, let uploadID {
            client.start(client.abortRequest(location, uploadID: uploadID), cancellation: CancellationFlag()) { _ in }
        }
    }

    /// How many bytes were written so far.
    public var bytesWritten: Int64 { state.withLock { $0.bytesWritten } }

    // MARK: - Writing

    /// Appends `bytes`. Full parts start uploading at once; waits only while
    /// `concurrentParts` parts are in flight. A cancelled task aborts the upload and throws
    /// `.cancelled`; a failed part aborts it and throws that part's error.
    public func write(_ bytes: some Collection<UInt8>) async throws(ObjectStoreError) {
        try await checkCancellation()
        let full: [(number: Int, bytes: [UInt8])] = try state.withLock { (state) throws(ObjectStoreError) in
            guard state.phase == .open else { throw closedError(state) }
            return cutParts(appending: bytes, to: &state)
        }
        do throws(ObjectStoreError) {
            if let failure = state.withLock({ $0.failure }) { throw failure }
            for part in full {
                try await startPart(part.number, part.bytes)
            }
        } catch {
            // A part failed for good (or the task was cancelled): the upload cannot complete.
            await abort()
            throw Task.isCancelled ? cancelledError() : error
        }
    }

    /// Uploads what is left and completes the upload: the object appears now, or (on any
    /// error) the upload is aborted and nothing appears.
    @discardableResult
    public func finish() async throws(ObjectStoreError) -> ObjectInfo {
        try await checkCancellation()
        let (head, last, uploadID, total): ([UInt8]?, [UInt8], String?, Int64) = try state.withLock {
            (state) throws(ObjectStoreError) in
            guard state.phase == .open else { throw closedError(state) }
            state.phase = .finishing
            defer { state.buffer = [] }
            return (state.head, state.buffer, state.uploadID, state.bytesWritten)
        }
        do throws(ObjectStoreError) {
            if let failure = state.withLock({ $0.failure }) { throw failure }
            guard uploadID != nil else {
                // Smaller than one part (or than the held head and one part): a single PUT, guarded the same way.
                let info = try await client.put((head ?? []) + last, at: location, overwrite: !guarding.isGuarded,
                                                contentType: contentType)
                state.withLock { $0.phase = .finished }
                return info
            }
            // Parts went up, so the held head is a full part: it goes now, as part 1.
            if let head { try await startPart(1, head) }
            if !last.isEmpty {
                let number = state.withLock { state in
                    state.nextPart += 1
                    return state.nextPart - 1
                }
                try await startPart(number, last)
            }
            try await drain()
            let etag = try await complete()
            state.withLock { $0.phase = .finished }
            return ObjectInfo(location: location, size: total, etag: etag, contentType: contentType)
        } catch {
            await abort()
            throw Task.isCancelled ? cancelledError() : error
        }
    }

    /// Stops: in-flight parts are cancelled, the multipart upload is aborted, nothing appears.
    /// Idempotent; does nothing after ``finish()`` succeeded. Every caller returns only once the
    /// abort is done — also one that finds another's abort under way (a muxer's cancellation
    /// thread and its deinit both abort; a process that exits after the second returned must not
    /// cut off the first's AbortMultipartUpload and leave the upload behind).
    public func abort() async {
        let aborting: Task<Void, Never>? = state.withLock { state in
            if let under = state.aborting { return under }
            guard state.phase != .finished && state.phase != .aborted else { return nil }
            state.phase = .aborted
            let uploadID = state.uploadID
            let flags = Array(state.cancellations.values)
            // Unstructured: the abort must happen even when the calling task is being cancelled.
            let task = Task { [self] in
                flags.forEach { $0.cancel() }
                await waitUntilNoneInFlight()
                guard let uploadID else { return }
                _ = try? await client.send(client.abortRequest(location, uploadID: uploadID))
            }
            state.aborting = task
            return task
        }
        await aborting?.value
    }

    /// Rewrites bytes already written, from `offset` on: they must lie in the held first part
    /// (a writer opened `holdingFirstPart`) or in the part being filled, which are still in
    /// memory. Bytes already uploaded cannot change: throws `.invalidRange` and writes nothing.
    public func patch(at offset: Int64, with bytes: some Collection<UInt8>) throws(ObjectStoreError) {
        try state.withLock { (state) throws(ObjectStoreError) in
            guard state.phase == .open else { throw closedError(state) }
            let end = offset + Int64(bytes.count)
            let bufferStart = state.bytesWritten - Int64(state.buffer.count)
            if let held = state.head?.count, offset >= 0, end <= Int64(held) {  // the count only: no copy of the part
                state.head!.replaceSubrange(Int(offset)..<Int(end), with: bytes)
            } else if offset >= bufferStart, end <= state.bytesWritten {
                state.buffer.replaceSubrange(Int(offset - bufferStart)..<Int(end - bufferStart), with: bytes)
            } else {
                throw ObjectStoreError(.invalidRange, "\(location): bytes \(offset)..<\(end) cannot be rewritten: they "
                    + "were uploaded already (only the held first part and the part being filled can change)")
            }
        }
    }

    // MARK: - Blocking variants

    /// ``write(_:)`` for a thread that may block (not a task): returns when the bytes are taken.
    public func writeBlocking(_ bytes: UnsafeRawBufferPointer) throws(ObjectStoreError) {
        let copy = Array(bytes)
        try ThreadBridge.wait { () async throws(ObjectStoreError) in try await self.write(copy) }
    }

    /// ``finish()`` for a thread that may block (not a task).
    @discardableResult
    public func finishBlocking() throws(ObjectStoreError) -> ObjectInfo {
        try ThreadBridge.wait { () async throws(ObjectStoreError) in try await self.finish() }
    }

    /// ``abort()`` for a thread that may block (not a task).
    public func abortBlocking() {
        try? ThreadBridge.wait { () async throws(ObjectStoreError) in await self.abort() }
    }
}
