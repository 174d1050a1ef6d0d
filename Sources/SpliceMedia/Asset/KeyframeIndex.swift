internal import CFFmpeg

/// Finds the presentation times of a track's sync samples without decoding.
enum KeyframeIndex {
    static func scan(demuxer: Demuxer, streamIndex: Int, origin: MediaTime) throws(MediaError) -> [MediaTime] {
        guard streamIndex >= 0 && streamIndex < demuxer.streamCount else {
            throw MediaError(.noUsableTrack, "'\(demuxer.location)' has no track \(streamIndex)")
        }
        let st = demuxer.stream(streamIndex)
        let tb = Rational(st.pointee.time_base)
        var stamps: [Int64] = []
        if let fromIndex = indexTimestamps(demuxer: demuxer, stream: st) {
            stamps = fromIndex
        } else {
            demuxer.discardAll(except: [streamIndex])
            let packet = Packet()
            while try demuxer.read(into: packet) {
                guard packet.streamIndex == Int32(streamIndex), packet.isKeyframe, !packet.isDiscard else { continue }
                let ts = packet.pts != FFmpeg.noPTS ? packet.pts : packet.dts
                if ts != FFmpeg.noPTS { stamps.append(ts) }
            }
        }
        var seen = Set<Int64>()
        return stamps.sorted().filter { seen.insert($0).inserted }.map { MediaTime(value: $0, timeBase: tb) - origin }
    }

    /// The MP4/MOV sample table lists every sample with its sync flag, so it is complete; its
    /// timestamps are decode times, which equal presentation times only without reordering.
    /// Other demuxers' indexes (Matroska cues, seek points) can be partial, so they are not used.
    static func indexTimestamps(demuxer: Demuxer, stream st: UnsafeMutablePointer<AVStream>) -> [Int64]? {
        let format = FFmpeg.string(demuxer.context.pointee.iformat.pointee.name) ?? ""
        guard format.hasPrefix("mov,"), st.pointee.codecpar.pointee.video_delay == 0,
              st.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO else { return nil }
        let count = avformat_index_get_entries_count(st)
        guard count > 0 else { return nil }
        var stamps: [Int64] = []
        for i in 0..<count {
            guard let entry = avformat_index_get_entry(st, i) else { continue }
            let flags = entry.pointee.flags
            if flags & AVINDEX_KEYFRAME != 0 && flags & AVINDEX_DISCARD_FRAME == 0 {
                stamps.append(entry.pointee.timestamp)
            }
        }
        return stamps
    }
}
