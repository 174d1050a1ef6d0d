internal import CFFmpeg
import Foundation
import SpliceCore

/// Writes a segment file beside its destination and renames it into place in ``finish()``;
/// released unfinished (failure, cancel), it removes the temporary file.
final class SegmentFileWriter: PacketWriter {
    let destination: String
    private let temporaryPath: String
    private var file: UnsafeMutablePointer<FILE>?
    private var hash = SHA256()
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
