import Dispatch
import Synchronization

/// Reads one object by ranged GETs, as a file is read with `pread`: any offset, in any order,
/// with read-ahead for the sequential case — the shape of an FFmpeg `AVIOContext` read/seek
/// pair (``size`` answers `AVSEEK_SIZE`).
///
///     let reader = try await store.openReader(input)      // HEAD: size and ETag
///     let n = try reader.readBlocking(at: 0, into: buffer) // from an FFmpeg I/O thread
///     let bytes = try await reader.read(at: 4096, count: 65536)
///
/// It keeps one window of ``ObjectStoreConfiguration/readAheadBytes`` (8 MiB) and, while that
/// window is being read, already fetches the next one; a read elsewhere (a seek) drops both and
/// fetches the window at the new offset. Every GET carries `If-Match` with the ETag seen when
/// the reader opened, so an object replaced mid-read fails with `.objectChanged` instead of
/// mixing two versions.
///
/// Safe to call from several threads, but reads are served one at a time.
public final class ObjectReader: Sendable {
    /// The object, its size and the ETag every read is pinned to.
    public let info: ObjectInfo
    private let client: S3Client
    private let windowBytes: Int
    /// Where ``read(at:count:)`` runs the blocking read (a Dispatch thread, not the cooperative pool).
    private let queue = DispatchQueue(label: "splice.objectstore.reader")
    /// Serialises reads (they share the window); held while a window is fetched.
    private let reading = Mutex<Windows>(Windows())

    /// The current window and the one being fetched ahead.
    private struct Windows: Sendable {
        var current: Window?
        var ahead: Pending?
    }

    private struct Window: Sendable {
        var start: Int64
        var bytes: [UInt8]
        var range: Range<Int64> { start..<(start + Int64(bytes.count)) }
    }

    /// A window being fetched on a transfer thread.
    private final class Pending: Sendable {
        let start: Int64
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<[UInt8], ObjectStoreError>?>(nil)
        let cancellation = CancellationFlag()
        init(start: Int64) { self.start = start }

        /// Blocks until the fetch is done.
        func wait() -> Result<[UInt8], ObjectStoreError> {
            done.wait()
            done.signal()  // stays signalled for any later waiter
            return result.withLock { $0! }
        }
    }

    init(info: ObjectInfo, client: S3Client) {
        self.info = info
        self.client = client
        windowBytes = client.configuration.readAheadBytes
    }

    deinit {
        reading.withLock { $0.ahead?.cancellation.cancel() }
    }

    /// The object's length in bytes.
    public var size: Int64 { info.size }

    /// Copies up to `buffer.count` bytes at `offset` into `buffer`; the count copied, 0 at or
    /// past the end. Blocks the calling thread while a window is fetched: call it from a thread
    /// that may block (an FFmpeg read callback), never from a task — use ``read(at:count:)``.
    public func readBlocking(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(ObjectStoreError) -> Int {
        guard offset >= 0, offset < info.size, buffer.count > 0 else { return 0 }
        return try reading.withLock { (windows) throws(ObjectStoreError) -> Int in
            if windows.current?.range.contains(offset) != true {
                windows.current = try fetchWindow(at: offset, &windows)
            }
            let window = windows.current!
            prefetch(after: window, &windows)
            let from = Int(offset - window.start)
            let count = min(buffer.count, window.bytes.count - from)
            window.bytes.withUnsafeBytes { bytes in
                buffer.baseAddress!.copyMemory(from: bytes.baseAddress! + from, byteCount: count)
            }
            return count
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

    // MARK: - Windows

    /// The window holding `offset`: the one fetched ahead if it starts there, else a new GET.
    private func fetchWindow(at offset: Int64, _ windows: inout Windows) throws(ObjectStoreError) -> Window {
        if let ahead = windows.ahead {
            windows.ahead = nil
            if ahead.start == offset || (ahead.start <= offset && offset < ahead.start + Int64(windowBytes)) {
                let bytes = try ahead.wait().get()
                let window = Window(start: ahead.start, bytes: bytes)
                if window.range.contains(offset) { return window }
            } else {
                ahead.cancellation.cancel()  // a seek elsewhere: that window is not needed
            }
        }
        let pending = startFetch(at: offset)
        return Window(start: offset, bytes: try pending.wait().get())
    }

    /// Starts fetching the window after `window`, unless it is the last or already fetching.
    private func prefetch(after window: Window, _ windows: inout Windows) {
        let next = window.range.upperBound
        guard windows.ahead == nil, next < info.size else { return }
        windows.ahead = startFetch(at: next)
    }

    /// A GET of the window starting at `start` on a transfer thread.
    private func startFetch(at start: Int64) -> Pending {
        let pending = Pending(start: start)
        let end = min(info.size, start + Int64(windowBytes))
        let request = client.getRequest(info.location, range: start..<end, etag: info.etag)
        let location = info.location
        let expected = Int(end - start)
        client.start(request, cancellation: pending.cancellation) { result in
            let bytes = result.mapError { S3Client.readError($0, location) }.flatMap { response in
                response.body.count == expected ? .success(response.body)
                    : .failure(ObjectStoreError(.invalidResponse, "GetObject \(location): asked for \(expected) bytes at "
                        + "\(start), got \(response.body.count); the object may have been replaced", httpStatus: response.status))
            }
            pending.result.withLock { $0 = bytes }
            pending.done.signal()
        }
        return pending
    }
}
