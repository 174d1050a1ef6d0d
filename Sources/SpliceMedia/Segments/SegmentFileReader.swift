internal import CFFmpeg
import Foundation
import SpliceCore

/// Reads a segment file written by ``SegmentFileWriter``, checking its structure and, when
/// `verifying` (and read to the end), its SHA-256. A reader whose checksum nobody compares skips
/// the hashing, and, asked for one stream's packets (a package rung), seeks past the others'
/// bytes instead of reading them.
final class SegmentFileReader {
    let path: String
    let header: SegmentFile.Header
    let trailer: SegmentFile.Trailer
    /// Closes the file in its deinit: the one owner, whether this init finishes or throws.
    private let handle: ReadOnlyFile
    private var file: UnsafeMutablePointer<FILE> { handle.pointer }
    private var hash: SHA256?
    private let size: Int64
    private var atEnd = false

    init(path: String, verifying: Bool = true) throws(MediaError) {
        self.path = path
        hash = verifying ? SHA256() : nil
        guard let f = fopen(path, "rb") else {
            throw MediaError(.fileNotFound, "cannot open segment '\(path)': \(String(cString: strerror(errno)))", isRetryable: true)
        }
        handle = ReadOnlyFile(owning: f)
        setvbuf(f, nil, _IOFBF, 1 << 20)
        fseeko(f, 0, SEEK_END)
        size = Int64(ftello(f))
        // The trailer first (from the end), so callers know the timestamps before reading packets.
        let tailSize = 4 + SegmentFile.endMagic.count
        guard size > Int64(SegmentFile.magic.count + 4 + tailSize) else {
            throw SegmentFileReader.corrupt(path, "too short")
        }
        fseeko(f, off_t(size - Int64(tailSize)), SEEK_SET)
        var tail = [UInt8](repeating: 0, count: tailSize)
        guard fread(&tail, 1, tailSize, f) == tailSize, Array(tail.suffix(SegmentFile.endMagic.count)) == SegmentFile.endMagic else {
            throw SegmentFileReader.corrupt(path, "it is truncated (no end marker); the worker probably stopped mid-write")
        }
        let trailerLength = Int64(UInt32(littleEndianBytes: tail.prefix(4)))
        guard trailerLength < size else {
            throw SegmentFileReader.corrupt(path, "bad trailer length")
        }
        fseeko(f, off_t(size - Int64(tailSize) - trailerLength), SEEK_SET)
        var trailerBytes = [UInt8](repeating: 0, count: Int(trailerLength))
        guard fread(&trailerBytes, 1, trailerBytes.count, f) == trailerBytes.count,
              let trailer = try? JSONDecoder().decode(SegmentFile.Trailer.self, from: Data(trailerBytes)) else {
            throw SegmentFileReader.corrupt(path, "unreadable trailer")
        }
        self.trailer = trailer
        fseeko(f, 0, SEEK_SET)
        var magic = [UInt8](repeating: 0, count: SegmentFile.magic.count)
        var lengthBytes = [UInt8](repeating: 0, count: 4)
        guard fread(&magic, 1, magic.count, f) == magic.count, magic == SegmentFile.magic,
              fread(&lengthBytes, 1, 4, f) == 4 else {
            throw SegmentFileReader.corrupt(path, "not a Splice segment file")
        }
        let headerLength = Int(UInt32(littleEndianBytes: lengthBytes[...]))
        var headerBytes = [UInt8](repeating: 0, count: headerLength)
        guard headerLength < Int(size), fread(&headerBytes, 1, headerLength, f) == headerLength,
              let header = try? JSONDecoder().decode(SegmentFile.Header.self, from: Data(headerBytes)) else {
            throw SegmentFileReader.corrupt(path, "unreadable header")
        }
        self.header = header
        magic.withUnsafeBytes { hash?.update($0) }
        lengthBytes.withUnsafeBytes { hash?.update($0) }
        headerBytes.withUnsafeBytes { hash?.update($0) }
    }

    static func corrupt(_ path: String, _ why: String) -> MediaError {
        MediaError(.incompatibleSegments, "segment '\(path)' is damaged: \(why); encode it again", isRetryable: true)
    }

    /// Reads the next packet into `packet` — of `stream` only, when given — and returns its stream
    /// index, or nil after the last one.
    func next(into packet: Packet, stream wanted: Int? = nil) throws(MediaError) -> Int? {
        while true {
            guard let index = try nextRecord(into: packet, skippingAllBut: wanted) else { return nil }
            if wanted == nil || index == wanted { return index }
        }
    }

    /// One packet record: read into `packet`, or, when it is not of `wanted` and nothing is hashed,
    /// its side data and payload passed over (its stream index is returned either way).
    private func nextRecord(into packet: Packet, skippingAllBut wanted: Int?) throws(MediaError) -> Int? {
        guard !atEnd else { return nil }
        packet.unref()
        var kind: UInt8 = 0
        try read(&kind, 1)
        if kind == SegmentFile.endRecord {
            atEnd = true
            // Hash the trailer and end marker to complete the file's checksum.
            var rest = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let n = fread(&rest, 1, rest.count, file)
                if n == 0 { break }
                rest.withUnsafeBytes { hash?.update(UnsafeRawBufferPointer(rebasing: $0.prefix(n))) }
            }
            return nil
        }
        guard kind == SegmentFile.packetRecord else { throw SegmentFileReader.corrupt(path, "unknown record \(kind)") }
        var head = [UInt8](repeating: 0, count: SegmentFile.recordHeaderSize - 1)
        try read(into: &head)
        let stream = Int(head[0]), flags = head[1], sideCount = Int(head[2])
        guard stream < header.streams.count else { throw SegmentFileReader.corrupt(path, "packet for unknown stream \(stream)") }
        let pts = Int64(littleEndianBytes: head[3..<11]), dts = Int64(littleEndianBytes: head[11..<19])
        let duration = Int64(littleEndianBytes: head[19..<27]), size = Int(UInt32(littleEndianBytes: head[27..<31]))
        if let wanted, stream != wanted, hash == nil {
            for _ in 0..<sideCount {
                var sh = [UInt8](repeating: 0, count: 8)
                try read(into: &sh)
                try skip(Int(UInt32(littleEndianBytes: sh[4..<8])))
            }
            try skip(size)
            return stream
        }
        var sides: [(UInt32, [UInt8])] = []
        for _ in 0..<sideCount {
            var sh = [UInt8](repeating: 0, count: 8)
            try read(into: &sh)
            let type = UInt32(littleEndianBytes: sh[0..<4]), len = Int(UInt32(littleEndianBytes: sh[4..<8]))
            guard Int64(len) < self.size else { throw SegmentFileReader.corrupt(path, "bad side data") }
            var bytes = [UInt8](repeating: 0, count: len)
            try read(into: &bytes)
            sides.append((type, bytes))
        }
        guard Int64(size) < self.size else { throw SegmentFileReader.corrupt(path, "bad packet size") }
        if av_new_packet(packet.pointer, Int32(size)) < 0 { throw MediaError(.internalError, "out of memory") }
        if size > 0 { try read(packet.pointer.pointee.data, size) }
        packet.pts = pts
        packet.dts = dts
        packet.duration = duration
        packet.streamIndex = Int32(stream)
        var avFlags: Int32 = 0
        if flags & 1 != 0 { avFlags |= AV_PKT_FLAG_KEY }
        if flags & 2 != 0 { avFlags |= AV_PKT_FLAG_DISCARD }
        packet.pointer.pointee.flags = avFlags
        for (type, bytes) in sides {
            if let dst = av_packet_new_side_data(packet.pointer, AVPacketSideDataType(type), bytes.count), !bytes.isEmpty {
                bytes.withUnsafeBytes { dst.update(from: $0.baseAddress!.assumingMemoryBound(to: UInt8.self), count: bytes.count) }
            }
        }
        return stream
    }

    /// The SHA-256 of the whole file; valid once ``next(into:)`` has returned nil (nil when not verifying).
    func checksum() -> SHA256Digest? { atEnd ? hash?.finalDigest() : nil }

    /// Passes over `count` bytes (not hashed: only a reader that does not hash skips).
    private func skip(_ count: Int) throws(MediaError) {
        guard Int64(count) < size, fseeko(file, off_t(count), SEEK_CUR) == 0, Int64(ftello(file)) <= size else {
            throw SegmentFileReader.corrupt(path, "it ends in the middle of a packet")
        }
    }

    private func read(_ destination: UnsafeMutableRawPointer, _ count: Int) throws(MediaError) {
        guard filled(destination, count) else {
            throw SegmentFileReader.corrupt(path, "it ends in the middle of a packet")
        }
    }

    private func read(into bytes: inout [UInt8]) throws(MediaError) {
        let count = bytes.count
        guard count == 0 || bytes.withUnsafeMutableBytes({ filled($0.baseAddress!, count) }) else {
            throw SegmentFileReader.corrupt(path, "it ends in the middle of a packet")
        }
    }

    private func filled(_ destination: UnsafeMutableRawPointer, _ count: Int) -> Bool {
        guard fread(destination, 1, count, file) == count else { return false }
        hash?.update(UnsafeRawBufferPointer(start: destination, count: count))
        return true
    }
}

/// Owns a `FILE` opened for reading (closed in deinit), so a reader whose init throws halfway
/// needs no cleanup of its own: before all its properties are set its deinit does not run, after
/// that it does, and either way this closes the file exactly once.
private final class ReadOnlyFile {
    let pointer: UnsafeMutablePointer<FILE>

    init(owning pointer: UnsafeMutablePointer<FILE>) {
        self.pointer = pointer
    }

    deinit { fclose(pointer) }
}
