/// The receiving side of one file transfer as a plain state machine: which chunks to ask for,
/// with at most `credit` in flight, which have arrived, and what to ask for again after a stall
/// (a reconnection loses whatever was in flight; asking again resumes the transfer by chunk).
/// No I/O, no clock: the ``TransferPort`` feeds it and carries out what it says.
struct ChunkWindow: Sendable {
    /// One chunk: bytes `[offset, offset + length)`.
    struct Range: Sendable, Hashable {
        var offset: Int64
        var length: Int
    }

    let size: Int64
    let chunkBytes: Int
    let credit: Int
    /// The next offset never asked for.
    private var nextOffset: Int64 = 0
    /// Asked for and not yet arrived, by offset.
    private(set) var outstanding: [Int64: Int] = [:]
    private(set) var receivedBytes: Int64 = 0

    init(size: Int64, chunkBytes: Int, credit: Int) {
        self.size = size
        self.chunkBytes = max(1, chunkBytes)
        self.credit = max(1, credit)
    }

    var isComplete: Bool { receivedBytes == size && outstanding.isEmpty }

    /// The chunks to ask for now, filling the window up to `credit` in flight.
    mutating func requests() -> [Range] {
        var out: [Range] = []
        while outstanding.count < credit && nextOffset < size {
            let length = Int(min(Int64(chunkBytes), size - nextOffset))
            outstanding[nextOffset] = length
            out.append(Range(offset: nextOffset, length: length))
            nextOffset += Int64(length)
        }
        return out
    }

    /// What a CHUNK header says arrived: `.accept` when it is exactly a chunk in flight,
    /// `.duplicate` for one already received (asked for twice across a stall), `.invalid` for
    /// anything this transfer never asked for.
    enum Arrival: Sendable, Hashable {
        case accept
        case duplicate
        case invalid(String)
    }

    func check(offset: Int64, length: Int, fileSize: Int64) -> Arrival {
        guard fileSize == size else { return .invalid("the sender's file is \(fileSize) bytes, expected \(size)") }
        if let expected = outstanding[offset] {
            return expected == length ? .accept : .invalid("chunk at \(offset) is \(length) bytes, asked for \(expected)")
        }
        return offset < nextOffset ? .duplicate : .invalid("chunk at \(offset) was never asked for")
    }

    /// Records an accepted chunk (after its bytes are written).
    mutating func received(offset: Int64) {
        guard let length = outstanding.removeValue(forKey: offset) else { return }
        receivedBytes += Int64(length)
    }

    /// After a stall: everything in flight, to ask for again.
    func resend() -> [Range] {
        outstanding.sorted { $0.key < $1.key }.map { Range(offset: $0.key, length: $0.value) }
    }
}
