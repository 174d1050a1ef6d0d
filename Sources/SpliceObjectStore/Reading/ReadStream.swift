import Foundation

/// One GET of an object from `start` to its end, streamed into a bounded buffer as it arrives:
/// the transfer thread blocks in ``accept(_:)`` while the buffer holds `capacity` bytes the
/// reader has not consumed, so the sender is slowed down by TCP rather than buffered without
/// end. Everything mutable is guarded by `condition` (the reader's), hence `@unchecked Sendable`.
final class ReadStream: ResponseSink, @unchecked Sendable {
    /// The object offset the GET started at.
    let start: Int64
    let cancellation = CancellationFlag()
    private let condition: NSCondition
    private let capacity: Int64
    /// Bytes kept behind the consumer, so a small step back (a demuxer re-reading a header) is
    /// served from memory instead of a new GET.
    private let keepBehind: Int64

    // Guarded by `condition`:
    /// Received chunks from `chunks[head]` on; `bufferStart` is the offset of its first byte.
    private var chunks: [[UInt8]] = []
    private var head = 0
    private(set) var bufferStart: Int64
    /// The offset after the last byte received.
    private(set) var bufferEnd: Int64
    /// Where the consumer last read up to (the producer may run `capacity` ahead of it).
    private var consumed: Int64
    /// Whether the GET is over (all bytes, or a failure in `failure`).
    private(set) var isOver = false
    private(set) var failure: ObjectStoreError?

    init(start: Int64, capacity: Int, condition: NSCondition) {
        self.start = start
        self.capacity = Int64(capacity)
        keepBehind = Int64(min(capacity, 1 << 20))
        self.condition = condition
        bufferStart = start
        bufferEnd = start
        consumed = start
    }

    // MARK: - Producer (the transfer thread)

    var delivered: Int64 {
        condition.lock()
        defer { condition.unlock() }
        return bufferEnd - start
    }

    func accept(_ bytes: UnsafeRawBufferPointer) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while bufferEnd - consumed >= capacity && !cancellation.isCancelled {
            condition.wait()
        }
        guard !cancellation.isCancelled else { return false }
        chunks.append(Array(bytes))
        bufferEnd += Int64(bytes.count)
        condition.broadcast()
        return true
    }

    /// Records how the GET ended and wakes the consumer.
    func finish(_ error: ObjectStoreError?) {
        condition.lock()
        isOver = true
        failure = error
        condition.broadcast()
        condition.unlock()
    }

    /// Stops the GET (the producer, if blocked, wakes and aborts the transfer).
    func cancel() {
        condition.lock()
        cancelHoldingLock()
        condition.unlock()
    }

    /// ``cancel()`` for a caller that holds `condition` already.
    func cancelHoldingLock() {
        cancellation.cancel()
        condition.broadcast()
    }

    // MARK: - Consumer (the reader; call with `condition` held)

    /// Copies buffered bytes at `offset` (which must lie in bufferStart..<bufferEnd) into
    /// `destination`; frees what lies further behind than `keepBehind`.
    func take(at offset: Int64, into destination: UnsafeMutableRawBufferPointer) -> Int {
        var copied = 0
        var chunkStart = bufferStart
        var index = head
        while index < chunks.count, copied < destination.count {
            let chunk = chunks[index]
            let chunkEnd = chunkStart + Int64(chunk.count)
            let from = offset + Int64(copied)
            if from < chunkEnd {
                let skip = Int(from - chunkStart)
                let count = min(chunk.count - skip, destination.count - copied)
                chunk.withUnsafeBytes { bytes in
                    (destination.baseAddress! + copied).copyMemory(from: bytes.baseAddress! + skip, byteCount: count)
                }
                copied += count
            }
            chunkStart = chunkEnd
            index += 1
        }
        moveConsumer(to: offset + Int64(copied))
        return copied
    }

    /// Lets the producer run `capacity` past `offset`, dropping what is far enough behind.
    func moveConsumer(to offset: Int64) {
        consumed = max(consumed, offset)
        while head < chunks.count, bufferStart + Int64(chunks[head].count) <= consumed - keepBehind {
            bufferStart += Int64(chunks[head].count)
            chunks[head] = []
            head += 1
        }
        if head > 256 {
            chunks.removeFirst(head)
            head = 0
        }
        condition.broadcast()
    }
}
