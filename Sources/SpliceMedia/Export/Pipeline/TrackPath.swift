internal import CFFmpeg

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
    /// Flush encoders and write every remaining packet.
    func finish() throws(MediaError)
}

/// Where a path writes: a muxer stream. Rescales from the producer's time base to the stream's
/// (which the muxer may have changed in its header) — the one place output packets are retimed.
final class StreamSink {
    let muxer: Muxer
    let stream: UnsafeMutablePointer<AVStream>

    init(muxer: Muxer, stream: UnsafeMutablePointer<AVStream>) {
        self.muxer = muxer
        self.stream = stream
    }

    func write(_ packet: Packet, timeBase: AVRational) throws(MediaError) {
        packet.streamIndex = stream.pointee.index
        packet.rescale(from: timeBase, to: stream.pointee.time_base)
        packet.pointer.pointee.pos = -1
        try muxer.write(packet)
    }
}
