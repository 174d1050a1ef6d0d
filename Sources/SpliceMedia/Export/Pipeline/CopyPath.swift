internal import CFFmpeg
import Foundation

/// Pass-through: packets copied unchanged, only retimed to the output's zero.
///
/// - Video starts at the keyframe at or before the window start (earlier frames get negative
///   times, which MP4/MOV hide with an edit list); packets presented at or after the window end
///   are left out.
/// - Audio keeps every packet that overlaps the window, its priming and skip data included, so a
///   whole-file copy decodes to exactly the source's samples and keeps its edit list. A window
///   that starts at the output's zero keeps the packets before it too: the priming (an AAC
///   encoder's first packet, pts −1024, all of its samples skipped) presents nothing, but the
///   decoder needs it for the samples after it. Priming stated without an edit list (`iTunSMPB`:
///   the first packet at zero, its samples skipped) is moved before zero, the one way an MP4
///   states it, so the first real sample plays at the track's start.
/// - Cues (subtitles, data) that overlap the window are kept whole inside it: one that began
///   before the window starts at its start, one that runs past its end stops there.
final class CopyPath: TrackPath {
    enum Mode { case video, audio, cue }

    let streamIndex: Int
    private let sink: StreamSink
    private let inputTimeBase: AVRational
    private let mode: Mode
    private let window: ExportPlan.Window
    private let origin: MediaTime
    /// Ticks (input time base) subtracted from every timestamp.
    private let offset: Int64
    /// Audio: the priming, in input ticks, moved before zero (see the type's notes).
    private var primingShift: Int64 = 0
    private let sampleRate: Int32
    private var started = false

    private(set) var isDone = false
    private(set) var packetsWritten = 0
    private(set) var outputTime = MediaTime.zero
    var isVideo: Bool { mode == .video }
    var isAudio: Bool { mode == .audio }

    init(plan: ExportPlan, demuxer: Demuxer, streamIndex: Int, muxer: Muxer) throws(MediaError) {
        let stream = demuxer.stream(streamIndex)
        self.streamIndex = streamIndex
        inputTimeBase = stream.pointee.time_base
        sampleRate = stream.pointee.codecpar.pointee.sample_rate
        switch stream.pointee.codecpar.pointee.codec_type {
        case AVMEDIA_TYPE_VIDEO: mode = .video
        case AVMEDIA_TYPE_AUDIO: mode = .audio
        default: mode = .cue
        }
        window = plan.videoWindow
        origin = plan.origin
        offset = (plan.origin + plan.outputZero).value(in: Rational(inputTimeBase), rounding: .nearest)
        let out = try muxer.addStream(copying: stream.pointee.codecpar, timeBase: stream.pointee.time_base)
        sink = StreamSink(writer: muxer, index: Int(out.pointee.index))
        out.pointee.avg_frame_rate = stream.pointee.avg_frame_rate
        muxer.describe(stream: Int(out.pointee.index), like: stream)
        if mode == .video {
            // Carry the display matrix so players keep rotating the untouched picture.
            var size: Int = 0
            if let matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size), size > 0,
               let copy = av_stream_new_side_data(out, AV_PKT_DATA_DISPLAYMATRIX, size) {
                copy.update(from: matrix, count: size)
            }
            HDRMetadata(streamSideDataOf: stream)?.attach(to: out)
        }
    }

    func handle(_ packet: Packet) throws(MediaError) {
        guard !isDone else { return }
        let stamp = packet.pts != FFmpeg.noPTS ? packet.pts : packet.dts
        guard stamp != FFmpeg.noPTS else { return }
        let tb = Rational(inputTimeBase)
        let t = MediaTime(value: stamp, timeBase: tb) - origin
        let decodeTime = packet.dts != FFmpeg.noPTS ? MediaTime(value: packet.dts, timeBase: tb) - origin : t
        let duration = MediaTime(value: max(0, packet.duration), timeBase: tb)
        switch mode {
        case .video:
            if !started {
                guard packet.isKeyframe, t <= window.start || window.start == .zero else { return }
                started = true
            }
            if let end = window.end {
                if decodeTime >= end { isDone = true; return }
                if t >= end { return }
            }
        case .audio:
            if let end = window.end, t >= end { isDone = true; return }
            if window.start > .zero && t + duration <= window.start { return }
            if !started {
                started = true
                let skip = packet.skipSamples.start
                if skip > 0 && sampleRate > 0 && stamp - offset >= 0 {
                    primingShift = MediaTime(value: skip, timescale: sampleRate).value(in: tb, rounding: .nearest)
                }
            }
            if packet.pts != FFmpeg.noPTS { packet.pts -= primingShift }
            if packet.dts != FFmpeg.noPTS { packet.dts -= primingShift }
        case .cue:
            if let end = window.end, t >= end { isDone = true; return }
            if t + duration <= window.start && !(duration == .zero && t == window.start) { return }
            // Clip to the window: the cue begins no earlier than its start, ends no later than its end.
            let startTicks = (window.start + origin).value(in: tb, rounding: .up)
            var pts = stamp, end = stamp + max(0, packet.duration)
            if pts < startTicks { pts = startTicks }
            if let windowEnd = window.end { end = min(end, (windowEnd + origin).value(in: tb, rounding: .down)) }
            packet.pts = pts
            packet.dts = pts
            if packet.duration > 0 { packet.duration = max(0, end - pts) }
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

/// A text subtitle track converted for a container that needs another format (SubRip, ASS or
/// WebVTT → `mov_text` for MP4/MOV; `mov_text` → SubRip for Matroska; → WebVTT for WebM).
/// Timing comes from the source packets, cut to the window like ``CopyPath``'s cues; only the
/// text is decoded and re-encoded.
final class SubtitleConvertPath: TrackPath {
    let streamIndex: Int
    private let converter: SubtitleConverter
    private let sink: StreamSink
    private let inputTimeBase: AVRational
    private let window: ExportPlan.Window
    private let origin: MediaTime
    private let offset: Int64
    private let out = Packet()

    private(set) var isDone = false
    private(set) var outputTime = MediaTime.zero

    init(plan: ExportPlan, demuxer: Demuxer, streamIndex: Int, targetCodec: String, muxer: Muxer,
         pictureSize: (width: Int, height: Int)?) throws(MediaError) {
        let stream = demuxer.stream(streamIndex)
        self.streamIndex = streamIndex
        inputTimeBase = stream.pointee.time_base
        window = plan.videoWindow
        origin = plan.origin
        offset = (plan.origin + plan.outputZero).value(in: Rational(inputTimeBase), rounding: .nearest)
        converter = try SubtitleConverter(stream: stream, location: plan.location, targetCodec: targetCodec,
                                          pictureSize: pictureSize)
        let index = try muxer.addStream(encoder: converter.encoder, frameRate: nil)
        muxer.context.pointee.streams[index]!.pointee.time_base = stream.pointee.time_base
        muxer.describe(stream: index, like: stream)
        sink = StreamSink(writer: muxer, index: index)
    }

    func handle(_ packet: Packet) throws(MediaError) {
        let stamp = packet.pts != FFmpeg.noPTS ? packet.pts : packet.dts
        guard stamp != FFmpeg.noPTS else { return }
        let tb = Rational(inputTimeBase)
        let t = MediaTime(value: stamp, timeBase: tb) - origin
        let duration = MediaTime(value: max(0, packet.duration), timeBase: tb)
        if let end = window.end, t >= end { isDone = true; return }
        if t + duration <= window.start { return }
        let startTicks = (window.start + origin).value(in: tb, rounding: .up)
        var end = stamp + max(0, packet.duration)
        if let windowEnd = window.end { end = min(end, (windowEnd + origin).value(in: tb, rounding: .down)) }
        let pts = max(stamp, startTicks)
        guard let bytes = try converter.convert(packet) else { return }
        out.unref()
        if av_new_packet(out.pointer, Int32(bytes.count)) < 0 { throw MediaError(.internalError, "out of memory") }
        bytes.withUnsafeBytes { out.pointer.pointee.data.update(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: bytes.count) }
        out.pts = pts - offset
        out.dts = pts - offset
        out.duration = max(0, end - pts)
        out.pointer.pointee.flags = AV_PKT_FLAG_KEY
        outputTime = t - window.start
        try sink.write(out, timeBase: inputTimeBase)
    }

    func endOfInput() throws(MediaError) { isDone = true }

    func finish(checkCancelled: () throws(MediaError) -> Void) throws(MediaError) {}
}

/// Collects a timed-metadata track's samples (retimed and cut to the window) for
/// ``QuickTimeTrackAppender``, which writes them after FFmpeg is done.
final class TimedMetadataPath: TrackPath {
    let streamIndex: Int
    private let window: ExportPlan.Window
    private let origin: MediaTime
    private let timeBase: Rational
    private let zeroTicks: Int64
    private(set) var track: TimedMetadataTrack
    private(set) var isDone = false
    private(set) var outputTime = MediaTime.zero

    init(plan: ExportPlan, demuxer: Demuxer, streamIndex: Int, info: QuickTimeTrackInfo) {
        let stream = demuxer.stream(streamIndex)
        self.streamIndex = streamIndex
        window = plan.videoWindow
        origin = plan.origin
        timeBase = Rational(stream.pointee.time_base)
        zeroTicks = (plan.origin + plan.outputZero).value(in: timeBase, rounding: .nearest)
        let metadata = Dictionary(fromAVDictionary: stream.pointee.metadata)
        track = TimedMetadataTrack(sampleEntry: info.sampleEntry, handlerName: metadata["handler_name"] ?? info.handlerName,
                                   language: info.language, timescale: timeBase.denominator, samples: [],
                                   describesVideo: info.references["cdsc"] != nil)
    }

    func handle(_ packet: Packet) throws(MediaError) {
        let stamp = packet.pts != FFmpeg.noPTS ? packet.pts : packet.dts
        guard stamp != FFmpeg.noPTS, timeBase.numerator == 1 else { return }
        let t = MediaTime(value: stamp, timeBase: timeBase) - origin
        let duration = MediaTime(value: max(0, packet.duration), timeBase: timeBase)
        if let end = window.end, t >= end { isDone = true; return }
        if t + duration <= window.start { return }
        let startTicks = (window.start + origin).value(in: timeBase, rounding: .up)
        var end = stamp + max(0, packet.duration)
        if let windowEnd = window.end { end = min(end, (windowEnd + origin).value(in: timeBase, rounding: .down)) }
        let start = max(stamp, startTicks)
        let p = packet.pointer.pointee
        let data = p.data.map { Data(bytes: $0, count: Int(p.size)) } ?? Data()
        track.samples.append(TimedMetadataTrack.Sample(time: start - zeroTicks, duration: end - start, data: data))
        outputTime = t - window.start
    }

    func endOfInput() throws(MediaError) { isDone = true }

    func finish(checkCancelled: () throws(MediaError) -> Void) throws(MediaError) {}
}
