internal import CFFmpeg

/// Puts the demuxer where a run must start reading: early enough that every audio and video
/// stream's first packet is at or before the time that stream needs (the video's keyframe before
/// its window, an audio track's anchor less a decoder warm-up). Seeks are checked against the
/// packets that actually arrive and retried further back, because some demuxers (MPEG-TS,
/// Matroska without cues) seek approximately. Returns the packets read while checking; the
/// pipeline processes them first.
struct Positioner {
    let plan: ExportPlan
    let demuxer: Demuxer
    /// Stream index → the latest asset time its first packet may have (video: first keyframe).
    let needs: [Int: MediaTime]

    /// Audio decoders need a few packets before their output is right.
    static let audioWarmUp = MediaTime(value: 1, timescale: 4)

    /// What each audio and video stream a run of `plan` reads needs: the video's window start (a
    /// keyframe earlier when the codec may open GOPs), an encoded audio track's anchor less the
    /// decoder warm-up, a copied audio track the window start.
    static func needs(of plan: ExportPlan, demuxer: Demuxer) -> [Int: MediaTime] {
        var needs: [Int: MediaTime] = [:]
        if let v = plan.videoStream, let route = plan.video {
            // A bit-rate segment's warm-up (``RateControl``) is decoded and encoded too.
            let firstEncoded = plan.videoWindow.start - plan.videoWarmUp
            needs[v] = firstEncoded
            if case .encode = route, ExportPipeline.mayHaveOpenGOPs(demuxer.stream(v)), firstEncoded > .zero {
                // A keyframe of an open GOP (MPEG-2, HEVC CRA) has leading pictures that need the
                // GOP before: start decoding one keyframe earlier.
                needs[v] = firstEncoded - MediaTime(value: 1, timeBase: Rational(demuxer.stream(v).pointee.time_base))
            }
        }
        for track in plan.audio {
            switch track.route {
            case .encode(_, let placement):
                let timeBase = Rational(demuxer.stream(track.stream).pointee.time_base)
                needs[track.stream] = placement.anchor.map {
                    MediaTime(value: $0.stamp, timeBase: timeBase) - plan.origin - audioWarmUp
                } ?? .zero
            case .copy:
                needs[track.stream] = plan.videoWindow.start
            }
        }
        return needs
    }

    func position() throws(MediaError) -> [Packet] {
        guard let target = needs.values.min(), target > .zero,
              let anchor = plan.videoStream ?? needs.keys.sorted().first else {
            return []
        }
        let anchorTB = Rational(demuxer.stream(anchor).pointee.time_base)
        var back = MediaTime.zero
        for _ in 0..<5 {
            let at = target - back
            if at <= .zero { break }
            try demuxer.seek(stream: anchor, to: (at + plan.origin).value(in: anchorTB, rounding: .down))
            if let packets = try readChecking() {
                return packets
            }
            back = back == .zero ? MediaTime(seconds: 2) : back * 4
        }
        try demuxer.rewind()
        return []
    }

    /// Reads until it is clear whether the seek landed early enough; nil when it did not.
    private func readChecking() throws(MediaError) -> [Packet]? {
        var buffered: [Packet] = []
        var unresolved = needs
        var reads = 0
        while !unresolved.isEmpty {
            let packet = Packet()
            guard try demuxer.read(into: packet) else { break }
            reads += 1
            let index = Int(packet.streamIndex)
            let tb = Rational(demuxer.stream(index).pointee.time_base)
            let stamp = packet.pts != FFmpeg.noPTS ? packet.pts : packet.dts
            let time = stamp == FFmpeg.noPTS ? nil : MediaTime(value: stamp, timeBase: tb) - plan.origin
            if let need = unresolved[index] {
                if index == plan.videoStream {
                    // Packets before the first keyframe cannot be decoded; leave them out.
                    guard packet.isKeyframe, let time else { continue }
                    if time > need { return nil }
                    unresolved[index] = nil
                } else if let time {
                    if time > need { return nil }
                    unresolved[index] = nil
                }
            }
            buffered.append(packet)
            // A stream that never shows up (e.g. audio ends early) must not hold up the start.
            if reads > 5000 { break }
        }
        return buffered
    }
}
