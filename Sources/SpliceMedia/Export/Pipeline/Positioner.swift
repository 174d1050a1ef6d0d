internal import CFFmpeg

/// Puts the demuxer where a run must start reading: at or before the keyframe the video window
/// needs and early enough for the audio window (with a margin for the audio decoder's warm-up).
/// Seeks are checked against the packets that actually arrive and retried further back, because
/// some demuxers (MPEG-TS, Matroska without cues) seek approximately. Returns the packets read
/// while checking; the pipeline processes them first.
struct Positioner {
    let plan: ExportPlan
    let demuxer: Demuxer

    /// Audio decoders need a few packets before their output is right.
    static let audioWarmUp = MediaTime(value: 1, timescale: 4)

    func position() throws(MediaError) -> [Packet] {
        var videoNeed: MediaTime?
        var audioNeed: MediaTime?
        if plan.videoStream != nil { videoNeed = plan.videoWindow.start }
        if plan.audioStream != nil {
            if case .encode(let enc)? = plan.audio, let samples = plan.audioSamples {
                audioNeed = MediaTime(value: samples.start, timescale: Int32(enc.sampleRate)) - Positioner.audioWarmUp
            } else {
                audioNeed = plan.videoWindow.start
            }
        }
        let needs = [videoNeed, audioNeed].compactMap { $0 }
        guard let target = needs.min(), target > .zero, let anchor = plan.videoStream ?? plan.audioStream else {
            return []
        }
        let anchorTB = Rational(demuxer.stream(anchor).pointee.time_base)
        var back = MediaTime.zero
        for _ in 0..<5 {
            let at = target - back
            if at <= .zero { break }
            try demuxer.seek(stream: anchor, to: (at + plan.origin).value(in: anchorTB, rounding: .down))
            if let packets = try readChecking(videoNeed: videoNeed, audioNeed: audioNeed) {
                return packets
            }
            back = back == .zero ? MediaTime(seconds: 2) : back * 4
        }
        seekToStart()
        return []
    }

    /// Reads until it is clear whether the seek landed early enough; nil when it did not.
    private func readChecking(videoNeed: MediaTime?, audioNeed: MediaTime?) throws(MediaError) -> [Packet]? {
        var buffered: [Packet] = []
        var videoOK: Bool? = videoNeed == nil ? true : nil
        var audioOK: Bool? = audioNeed == nil ? true : nil
        var reads = 0
        while videoOK == nil || audioOK == nil {
            let packet = Packet()
            guard try demuxer.read(into: packet) else { break }
            reads += 1
            let index = Int(packet.streamIndex)
            let tb = Rational(demuxer.stream(index).pointee.time_base)
            let stamp = packet.pts != FFmpeg.noPTS ? packet.pts : packet.dts
            let time = stamp == FFmpeg.noPTS ? nil : MediaTime(value: stamp, timeBase: tb) - plan.origin
            if index == plan.videoStream {
                if videoOK == nil {
                    // Packets before the first keyframe cannot be decoded; leave them out.
                    guard packet.isKeyframe, let time else { continue }
                    videoOK = time <= videoNeed!
                }
            } else if index == plan.audioStream, audioOK == nil, let time {
                audioOK = time <= audioNeed!
            }
            buffered.append(packet)
            if videoOK == false || audioOK == false { return nil }
            // A stream that never shows up (e.g. audio ends early) must not hold up the start.
            if reads > 5000 { break }
        }
        return buffered
    }

    private func seekToStart() {
        let ctx = demuxer.context
        let start = ctx.pointee.start_time == FFmpeg.noPTS ? 0 : ctx.pointee.start_time
        if avformat_seek_file(ctx, -1, Int64.min, start, start, 0) < 0 {
            _ = avformat_seek_file(ctx, -1, Int64.min, 0, 0, AVSEEK_FLAG_BYTE)
        }
    }
}
