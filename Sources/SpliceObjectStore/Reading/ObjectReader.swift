import Dispatch
import Foundation

/// Reads one object as a file is read with `pread` — any offset, in any order — shaped for an
/// FFmpeg `AVIOContext` read/seek pair (``size`` answers `AVSEEK_SIZE`).
///
///     let reader = try await store.openReader(input)       // HEAD: size and ETag
///     let n = try reader.readBlocking(at: 0, into: buffer)  // from an FFmpeg I/O thread
///     let bytes = try await reader.read(at: 4096, count: 65536)
///
/// Sequential reads are served from one streaming GET (from the offset to the end), which runs
/// up to ``ObjectStoreConfiguration/readAheadBytes`` ahead of the reader and is held back by TCP
/// beyond that — one request per seek, as FFmpeg's own http reader does, instead of one per
/// window. A read elsewhere (behind the last megabyte kept, or more than the read-ahead ahead)
/// stops that GET and starts one at the new offset. A GET that breaks midway is resumed where
/// the reader is (up to `maxAttempts` times in a row without progress). Every GET carries
/// `If-Match` with the ETag seen when the reader opened, so an object replaced mid-read fails
/// with `.objectChanged` instead of mixing two versions.
///
/// Safe to call from several threads; reads are served one at a time.
public final class ObjectReader: Sendable {
    /// The object, its size and the ETag every read is pinned to.
    public let info: ObjectInfo
    private let client: S3Client
    private let state: ReaderState
    /// Where ``read(at:count:)`` runs the blocking read (a Dispatch thread, not the cooperative pool).
    private let queue = DispatchQueue(label: "splice.objectstore.reader")

    /// The current stream, guarded by `condition` (shared with the stream's producer).
    private final class ReaderState: @unchecked Sendable {
        let condition = NSCondition()
        let serial = NSLock()  // one read at a time
        var stream: ReadStream?
    }

    init(info: ObjectInfo, client: S3Client) {
        self.info = info
        self.client = client
        state = ReaderState()
    }

    deinit {
        state.condition.lock()
        let stream = state.stream
        state.condition.unlock()
        stream?.cancel()
    }

    /// The object's length in bytes.
    public var size: Int64 { info.size }

    /// Copies up to `buffer.count` bytes at `offset` into `buffer`; the count copied, 0 at or
    /// past the end. Blocks the calling thread while the bytes arrive: call it from a thread
    /// that may block (an FFmpeg read callback), never from a task — use ``read(at:count:)``.
    public func readBlocking(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(ObjectStoreError) -> Int {
        guard offset >= 0, offset < info.size, buffer.count > 0 else { return 0 }
        state.serial.lock()
        defer { state.serial.unlock() }
        let condition = state.condition
        condition.lock()
        defer { condition.unlock() }
        var resumes = 0
        let lookAhead = Int64(client.configuration.readAheadBytes)
        while true {
            if let stream = state.stream {
                if offset >= stream.bufferStart && offset < stream.bufferEnd {
                    return stream.take(at: offset, into: buffer)
                }
                let coming = offset >= stream.bufferEnd && offset < stream.bufferEnd + lookAhead
                if coming && !stream.isOver {
                    stream.moveConsumer(to: offset)
                    condition.wait()  // the bytes are on their way
                    continue
                }
                if stream.isOver, let failure = stream.failure, !Self.isResumable(failure) {
                    state.stream = nil
                    throw failure
                }
                if stream.isOver, offset == stream.bufferEnd, stream.bufferEnd > stream.start {
                    // It broke (or stalled) after delivering something: resume here.
                    resumes += 1
                    if resumes > client.configuration.maxAttempts {
                        throw stream.failure ?? ObjectStoreError(.connectionFailed, "GetObject \(info.location): the "
                            + "transfer keeps breaking", isRetryable: true)
                    }
                } else if stream.isOver, let failure = stream.failure, offset == stream.start {
                    throw failure  // failed before its first byte, already retried by the client
                }
                stream.cancelHoldingLock()
            }
            state.stream = startStream(at: offset)
        }
    }

    /// Up to `count` bytes at `offset` (fewer at the end, none past it), awaited without
    /// holding a cooperative thread.
    public func read(at offset: Int64, count: Int) async throws(ObjectStoreError) -> [UInt8] {
        let wanted = max(0, min(Int64(count), info.size - offset))
        guard offset >= 0, wanted > 0 else { return [] }
        return try await ThreadBridge.offPool(on: queue) { () throws(ObjectStoreError) -> [UInt8] in
            var bytes = [UInt8](repeating: 0, count: Int(wanted))
            var filled = 0
            while filled < bytes.count {
                let n = try bytes.withUnsafeMutableBytes { all in
                    Result { () throws(ObjectStoreError) -> Int in
                        try self.readBlocking(at: offset + Int64(filled), into: UnsafeMutableRawBufferPointer(rebasing: all[filled...]))
                    }
                }.get()
                guard n > 0 else { break }
                filled += n
            }
            return Array(bytes[..<filled])
        }
    }

    // MARK: - Streams

    /// A GET from `offset` to the end, streaming into a new ``ReadStream`` on a thread of its own.
    private func startStream(at offset: Int64) -> ReadStream {
        let stream = ReadStream(start: offset, capacity: client.configuration.readAheadBytes, condition: state.condition)
        var request = client.getRequest(info.location, range: offset..<info.size, etag: info.etag)
        request.expectedResponseBytes = 0
        request.sink = stream
        let location = info.location
        client.startOnOwnThread(request, cancellation: stream.cancellation) { result in
            switch result {
            case .success: stream.finish(nil)
            case .failure(let error): stream.finish(S3Client.readError(error, location))
            }
        }
        return stream
    }

    /// Whether reading can go on after `failure` by starting a new GET where the reader is.
    private static func isResumable(_ failure: ObjectStoreError) -> Bool {
        failure.isRetryable || failure.code == .cancelled
    }
}
