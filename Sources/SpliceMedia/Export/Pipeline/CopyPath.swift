internal import CFFmpeg

/// Pass-through: packets copied unchanged, only retimed to the output's zero. Video starts at the
/// keyframe at or before the window start (earlier frames get negative times, which MP4/MOV hide
/// with an edit list); packets presented at or after the window end are left out.
final class CopyPath: TrackPath {
    let streamIndex: Int
    private let sink: StreamSink
    private let inputTimeBase: AVRational
    private let isVideo: Bool
    private let window: ExportPlan.Window
    private let origin: MediaTime
    /// Ticks (input time base) subtracted from every timestamp.
    private let offset: Int64
    private var started = false

    private(set) var isDone = false
    private(set) var packetsWritten = 0
    private(set) var outputTime = MediaTime.zero

    init(plan: ExportPlan, demuxer: Demuxer, streamIndex: Int, muxer: Muxer) throws(MediaError) {
        let stream = demuxer.stream(streamIndex)
        self.streamIndex = streamIndex
        inputTimeBase = stream.pointee.time_base
        isVideo = stream.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO
        window = plan.videoWindow
        origin = plan.origin
        offset = (plan.origin + plan.outputZero).value(in: Rational(inputTimeBase), rounding: .nearest)
        let out = try muxer.addStream(copying: stream.pointee.codecpar, timeBase: stream.pointee.time_base)
        sink = StreamSink(writer: muxer, index: Int(out.pointee.index))
        out.pointee.avg_frame_rate = stream.pointee.avg_frame_rate
        out.pointee.disposition = stream.pointee.disposition
        _ = av_dict_copy(&out.pointee.metadata, stream.pointee.metadata, 0)
        if isVideo {
            // Carry the display matrix so players keep rotating the untouched picture.
            var size: Int = 0
            if let matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size), size > 0,
               let copy = av_stream_new_side_data(out, AV_PKT_DATA_DISPLAYMATRIX, size) {
                copy.update(from: matrix, count: size)
            }
        }
    }

    func handle(_ packet: Packet) throws(MediaError) {
        guard !isDone else { return }
        let stamp = packet.pts != FFmpeg.noPTS ? packet.pts : packet.dts
        guard stamp != FFmpeg.noPTS else { return }
        let tb = Rational(inputTimeBase)
        let t = MediaTime(value: stamp, timeBase: tb) - origin
        let decodeTime = packet.dts != FFmpeg.noPTS ? MediaTime(value: packet.dts, timeBase: tb) - origin : t
        if isVideo {
            if !started {
                guard packet.isKeyframe, t <= window.start || window.start == .zero else { return }
                started = true
            }
            if let end = window.end {
                if decodeTime >= end { isDone = true; return }
                if t >= end { return }
            }
        } else {
            if let end = window.end, t >= end { isDone = true; return }
            let duration = MediaTime(value: packet.duration, timeBase: tb)
            if t + duration <= window.start { return }
        }
        if packet.pts != FFmpeg.noPTS { packet.pts -= offset }
        if packet.dts != FFmpeg.noPTS { packet.dts -= offset }
        outputTime = t - window.start
        packetsWritten += 1
        try sink.write(packet, timeBase: inputTimeBase)
    }

    func endOfInput() throws(MediaError) { isDone = true }

    func finish(checkCancelled: () throws(MediaError) -> Void) throws(MediaError) {}
}
