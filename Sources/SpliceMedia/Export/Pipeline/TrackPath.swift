internal import CFFmpeg
import Foundation

/// One track's route through a pipeline run: demuxed packets in, muxed packets out.
protocol TrackPath: AnyObject {
    /// The input stream this path consumes.
    var streamIndex: Int { get }
    /// True once the path needs no more input (its window is complete).
    var isDone: Bool { get }
    /// The latest output time written, for progress.
    var outputTime: MediaTime { get }
    /// Handles one demuxed packet of ``streamIndex``.
    func handle(_ packet: Packet) throws(MediaError)
    /// The input ended: drain decoders.
    func endOfInput() throws(MediaError)
    /// Flush encoders and write every remaining packet, calling `checkCancelled` between packets
    /// (an encoder's flush can hold dozens of frames of work).
    func finish(checkCancelled: () throws(MediaError) -> Void) throws(MediaError)
}

/// Where a pipeline's encoded packets go: an FFmpeg muxer (the user's file) or a segment file.
protocol PacketWriter: AnyObject {
    /// Whether encoders must put codec headers in extradata (AV_CODEC_FLAG_GLOBAL_HEADER).
    var wantsGlobalHeader: Bool { get }
    /// Adds an output stream for an opened encoder; returns its index.
    func addStream(encoder: CodecContext, frameRate: Rational?) throws(MediaError) -> Int
    /// Writes the container header.
    func writeHeader(metadata: [String: String], options: [String: String]) throws(MediaError)
    /// Writes one packet whose timestamps are in `timeBase`; takes the payload.
    func write(_ packet: Packet, stream: Int, timeBase: AVRational) throws(MediaError)
    /// Completes the output and moves it into place.
    func finish() throws(MediaError)
}

/// One output stream of a writer, as a track path sees it.
struct StreamSink {
    let writer: any PacketWriter
    let index: Int

    func write(_ packet: Packet, timeBase: AVRational) throws(MediaError) {
        try writer.write(packet, stream: index, timeBase: timeBase)
    }
}

/// A writer that keeps nothing: a quality target's probe encodes are measured as they are
/// written (``QualityMeter``) and counted, then thrown away.
final class DiscardingWriter: PacketWriter {
    private var streams = 0

    var wantsGlobalHeader: Bool { true }

    func addStream(encoder: CodecContext, frameRate: Rational?) throws(MediaError) -> Int {
        streams += 1
        return streams - 1
    }

    func writeHeader(metadata: [String: String], options: [String: String]) throws(MediaError) {}

    func write(_ packet: Packet, stream: Int, timeBase: AVRational) throws(MediaError) { packet.unref() }

    func finish() throws(MediaError) {}
}

/// A writer shared by threads: a ladder's rungs write their packets from their own encoder
/// threads (``RenditionThread``) while audio writes from the decoding thread. Every call goes to
/// the wrapped writer under one lock; each stream's packets keep their order (one thread writes
/// each stream), the order between streams is the order they arrive in.
final class SerializedPacketWriter: PacketWriter, @unchecked Sendable {
    // `writer` is only touched under `lock`; hence @unchecked Sendable.
    private let writer: any PacketWriter
    private let lock = NSLock()

    init(_ writer: any PacketWriter) {
        self.writer = writer
    }

    var wantsGlobalHeader: Bool { lock.withLock { writer.wantsGlobalHeader } }

    func addStream(encoder: CodecContext, frameRate: Rational?) throws(MediaError) -> Int {
        lock.lock()
        defer { lock.unlock() }
        return try writer.addStream(encoder: encoder, frameRate: frameRate)
    }

    func writeHeader(metadata: [String: String], options: [String: String]) throws(MediaError) {
        lock.lock()
        defer { lock.unlock() }
        try writer.writeHeader(metadata: metadata, options: options)
    }

    func write(_ packet: Packet, stream: Int, timeBase: AVRational) throws(MediaError) {
        lock.lock()
        defer { lock.unlock() }
        try writer.write(packet, stream: stream, timeBase: timeBase)
    }

    func finish() throws(MediaError) {
        lock.lock()
        defer { lock.unlock() }
        try writer.finish()
    }
}
