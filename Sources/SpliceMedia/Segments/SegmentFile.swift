internal import CFFmpeg
import Foundation
import SpliceCore

/// Splice's segment file: the intermediate container between a segment export and the stitcher.
///
/// Why not an FFmpeg container: segments must carry timestamps exactly as the encoders produced
/// them — integers in each stream's own time base, negative ones included (AAC priming packets
/// start at −1024), decode times kept for B-frames. NUT rejects negative timestamps and loses
/// decode times when they are absent; Matroska rounds to 1 ms; MP4/MOV turn priming into edit
/// lists that a demuxer then reapplies. So a segment file is simply:
///
///     "SPLSEG1\n"  u32 length  header JSON (plan id, segment index, codec parameters per stream)
///     records: u8 kind=1  u8 stream  u8 flags  u8 side-data count  i64 pts  i64 dts  i64 duration
///              u32 size  [u32 type  u32 size  bytes]*  payload          (little endian)
///     u8 kind=2  trailer JSON (packet counts, video pts in file order)  u32 length  "SPLSEND\n"
///
/// The trailer's end marker makes a truncated file (a worker killed mid-write) detectable, and
/// the whole file's SHA-256 is what workers report and the stitcher checks.
enum SegmentFile {
    static let magic = Array("SPLSEG1\n".utf8)
    static let endMagic = Array("SPLSEND\n".utf8)
    static let packetRecord: UInt8 = 1
    static let endRecord: UInt8 = 2
    static let recordHeaderSize = 4 + 8 + 8 + 8 + 4

    /// Header and trailer JSON with sorted keys: the same segment encoded twice is the same file,
    /// byte for byte (Foundation orders unsorted keys differently from one process to the next).
    static func jsonEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    struct Header: Codable, Sendable {
        var version = 1
        var planID: String
        var index: Int
        var streams: [CodecParameters]
        /// Set in a source excerpt (``SourceExcerpt``): the probed source and what its streams
        /// carry beyond their codec parameters. Absent from encoded segments.
        var source: SourceExcerpt.Origin?
    }

    struct Trailer: Codable, Sendable {
        var packetCounts: [Int]
        /// Presentation times of the video stream's packets, in file (decode) order.
        var videoTimestamps: [Int64]
        /// With several video streams (a streaming ladder's rungs): each one's presentation
        /// times in file order, by stream index (nil for other streams); absent otherwise.
        var renditionTimestamps: [[Int64]?]? = nil
        /// The video's per-frame quality against the pictures encoded, when the segment measured
        /// it (`--verify`, quality targets): what the stitch's checks and a job's report read.
        var quality: QualitySeries? = nil

        /// Presentation times of video stream `stream`'s packets in file order.
        func videoTimestamps(stream: Int) -> [Int64] {
            guard let all = renditionTimestamps else { return videoTimestamps }
            return all.indices.contains(stream) ? all[stream] ?? [] : []
        }
    }
}

/// Writes a segment file beside its destination and renames it into place in ``finish()``;
/// released unfinished (failure, cancel), it removes the temporary file.
final class SegmentFileWriter: PacketWriter {
    let destination: String
    private let temporaryPath: String
    private var file: UnsafeMutablePointer<FILE>?
    private let hash = ContentHash()
    private var header: SegmentFile.Header
    private var timeBases: [AVRational] = []
    private var trailer = SegmentFile.Trailer(packetCounts: [], videoTimestamps: [])
    private var videoStream: Int?
    private var videoStreams: Set<Int> = []
    private var finished = false
    /// The SHA-256 of the finished file.
    private(set) var checksum: SHA256Digest?
    /// The video's quality series, written into the trailer (set before ``finish()``).
    var quality: QualitySeries? {
        get { trailer.quality }
        set { trailer.quality = newValue }
    }

    init(destination: String, planID: String, index: Int) throws(MediaError) {
        self.destination = destination
        let url = URL(fileURLWithPath: destination)
        temporaryPath = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(UInt32.random(in: 0...UInt32.max)).tmp").path
        header = SegmentFile.Header(planID: planID, index: index, streams: [])
        guard let f = fopen(temporaryPath, "wb") else {
            throw SegmentFileWriter.systemError("cannot write segment '\(destination)': ")
        }
        file = f
        setvbuf(f, nil, _IOFBF, 1 << 20)
    }

    deinit {
        if let file { fclose(file) }
        if !finished { unlink(temporaryPath) }
    }

    var wantsGlobalHeader: Bool { true }

    func addStream(encoder: CodecContext, frameRate: Rational?) throws(MediaError) -> Int {
        guard let par = avcodec_parameters_alloc() else { fatalError("out of memory") }
        var owned: UnsafeMutablePointer<AVCodecParameters>? = par
        defer { avcodec_parameters_free(&owned) }
        let ret = avcodec_parameters_from_context(par, encoder.pointer)
        if ret < 0 { throw FFmpeg.error(.writeFailed, "cannot describe a segment stream", ret) }
        let tb = encoder.pointer.pointee.time_base
        header.streams.append(CodecParameters(par, timeBase: tb, frameRate: frameRate))
        timeBases.append(tb)
        trailer.packetCounts.append(0)
        if par.pointee.codec_type == AVMEDIA_TYPE_VIDEO {
            if videoStream == nil { videoStream = header.streams.count - 1 }
            videoStreams.insert(header.streams.count - 1)
        }
        return header.streams.count - 1
    }

    /// Adds a stream that carries a source stream's packets unchanged (a source excerpt), in the
    /// source's time base.
    func addStream(copying stream: UnsafeMutablePointer<AVStream>) {
        let tb = stream.pointee.time_base
        header.streams.append(CodecParameters(stream.pointee.codecpar, timeBase: tb, frameRate: nil))
        timeBases.append(tb)
        trailer.packetCounts.append(0)
        if stream.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO && videoStream == nil {
            videoStream = header.streams.count - 1
        }
    }

    /// Describes the source a source excerpt was cut from; call before ``writeHeader(metadata:options:)``.
    func describeSource(_ origin: SourceExcerpt.Origin) {
        header.source = origin
    }

    func writeHeader(metadata: [String: String], options: [String: String]) throws(MediaError) {
        let json: Data
        do { json = try SegmentFile.jsonEncoder().encode(header) } catch { throw MediaError(.internalError, "cannot encode a segment header") }
        try put(SegmentFile.magic)
        try put(UInt32(json.count))
        try put(Array(json))
    }

    func write(_ packet: Packet, stream: Int, timeBase: AVRational) throws(MediaError) {
        let target = timeBases[stream]
        if av_cmp_q(target, timeBase) != 0 { packet.rescale(from: timeBase, to: target) }
        let p = packet.pointer.pointee
        var flags: UInt8 = 0
        if p.flags & AV_PKT_FLAG_KEY != 0 { flags |= 1 }
        if p.flags & AV_PKT_FLAG_DISCARD != 0 { flags |= 2 }
        try put([SegmentFile.packetRecord, UInt8(stream), flags, UInt8(min(255, p.side_data_elems))])
        try put(p.pts)
        try put(p.dts)
        try put(p.duration)
        try put(UInt32(p.size))
        for i in 0..<Int(min(255, p.side_data_elems)) {
            let sd = p.side_data[i]
            try put(UInt32(sd.type.rawValue))
            try put(UInt32(sd.size))
            try put(UnsafeRawBufferPointer(start: sd.data, count: Int(sd.size)))
        }
        if let data = p.data, p.size > 0 { try put(UnsafeRawBufferPointer(start: data, count: Int(p.size))) }
        trailer.packetCounts[stream] += 1
        if stream == videoStream { trailer.videoTimestamps.append(p.pts) }
        if videoStreams.count > 1 {
            if trailer.renditionTimestamps == nil {
                trailer.renditionTimestamps = header.streams.indices.map { videoStreams.contains($0) ? [] : nil }
            }
            trailer.renditionTimestamps![stream]?.append(p.pts)
        }
    }

    func finish() throws(MediaError) {
        let json: Data
        do { json = try SegmentFile.jsonEncoder().encode(trailer) } catch { throw MediaError(.internalError, "cannot encode a segment trailer") }
        try put([SegmentFile.endRecord])
        try put(Array(json))
        try put(UInt32(json.count))
        try put(SegmentFile.endMagic)
        let closed = fclose(file)
        file = nil
        if closed != 0 {
            throw SegmentFileWriter.systemError("cannot finish segment '\(destination)': ")
        }
        if rename(temporaryPath, destination) != 0 {
            throw SegmentFileWriter.systemError("cannot move segment into place at '\(destination)': ")
        }
        finished = true
        checksum = hash.finalDigest()
    }

    // MARK: - Bytes

    private func put(_ bytes: UnsafeRawBufferPointer) throws(MediaError) {
        guard written(bytes) else {
            throw SegmentFileWriter.systemError("cannot write segment '\(destination)': ")
        }
    }

    private func written(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !bytes.isEmpty else { return true }
        hash.update(bytes)
        return fwrite(bytes.baseAddress, 1, bytes.count, file) == bytes.count
    }

    private func put(_ bytes: [UInt8]) throws(MediaError) {
        let ok = bytes.withUnsafeBytes { written($0) }
        if !ok { throw writeError() }
    }

    private func put<T: FixedWidthInteger>(_ value: T) throws(MediaError) {
        var little = value.littleEndian
        let ok = withUnsafeBytes(of: &little) { written($0) }
        if !ok { throw writeError() }
    }

    private func writeError() -> MediaError {
        SegmentFileWriter.systemError("cannot write segment '\(destination)': ")
    }

    /// A failed system call as a retryable write failure: `what` and the reason, with the error
    /// as FFmpeg spells it (AVERROR(errno)), so a full disk is told apart from other failures.
    static func systemError(_ what: String) -> MediaError {
        let code = errno
        return MediaError(.writeFailed, what + String(cString: strerror(code)), ffmpegCode: -code, isRetryable: true)
    }
}

/// Reads a segment file written by ``SegmentFileWriter``, checking its structure and, when
/// `verifying` (and read to the end), its SHA-256. Hashing costs about as much as the rest of a
/// stitch, so a reader whose checksum nobody compares skips it.
final class SegmentFileReader {
    let path: String
    let header: SegmentFile.Header
    let trailer: SegmentFile.Trailer
    /// Closes the file in its deinit: the one owner, whether this init finishes or throws.
    private let handle: ReadOnlyFile
    private var file: UnsafeMutablePointer<FILE> { handle.pointer }
    private let hash: ContentHash?
    private let size: Int64
    private var atEnd = false

    init(path: String, verifying: Bool = true) throws(MediaError) {
        self.path = path
        hash = verifying ? ContentHash() : nil
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

    /// Reads the next packet into `packet`; returns its stream index, or nil after the last one.
    func next(into packet: Packet) throws(MediaError) -> Int? {
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

extension FixedWidthInteger {
    /// Decodes a little-endian integer from exactly `MemoryLayout<Self>.size` bytes.
    init<C: Collection>(littleEndianBytes bytes: C) where C.Element == UInt8 {
        var value = Self.zero
        for (i, b) in bytes.enumerated() { value |= Self(truncatingIfNeeded: b) << (8 * i) }
        self = value
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
