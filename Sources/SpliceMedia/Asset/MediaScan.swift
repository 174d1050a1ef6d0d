internal import CFFmpeg

/// What planning reads from a source without decoding it: the video track's keyframes and, for
/// each audio track, every packet placed by the audio rule (``AudioTimeline``). One demux pass
/// serves both; MP4/MOV keyframes come from the index, so there only the audio is read (the MP4
/// demuxer skips the data of discarded tracks).
struct MediaScan: Sendable {
    var keyframes: [MediaTime]
    var audio: [Int: AudioTrackTimeline]
    /// Where the video's last packet ends (asset time), when the container gives the track no
    /// duration: its packets are then read even where an index has the keyframes.
    var videoEnd: MediaTime?

    /// Scans `location`. `video` is the track whose keyframes are wanted (nil: none); `audio`
    /// the tracks to place.
    static func scan(location: String, origin: MediaTime, video: Int?, audio: [Int]) throws(MediaError) -> MediaScan {
        let demuxer = try Demuxer(location: location)
        var keyframes: [Int64] = []
        var readVideo = false, readsVideoEnd = false
        var videoEnd: Int64?
        if let video {
            let st = demuxer.stream(video)
            if let fromIndex = KeyframeIndex.indexTimestamps(demuxer: demuxer, stream: st) {
                keyframes = fromIndex
            } else {
                readVideo = true
            }
            // Matroska and WebM give no track its own duration; the file's is the longest track's,
            // and a video that stops before its audio would be planned past its last frame.
            readsVideoEnd = st.pointee.duration == FFmpeg.noPTS || st.pointee.duration <= 0
        }
        var timelines: [Int: AudioTrackTimeline] = [:]
        var sizers: [Int: AudioPacketSizer] = [:]
        for index in audio {
            let st = demuxer.stream(index)
            timelines[index] = AudioTrackTimeline(streamIndex: index, timeBase: Rational(st.pointee.time_base),
                                                  sampleRate: Int(st.pointee.codecpar.pointee.sample_rate))
            sizers[index] = AudioPacketSizer(stream: st)
        }
        var keep = Set(audio)
        if readVideo || readsVideoEnd, let video { keep.insert(video) }
        if !keep.isEmpty {
            demuxer.discardAll(except: keep)
            let packet = Packet()
            while try demuxer.read(into: packet) {
                let index = Int(packet.streamIndex)
                if index == video {
                    let ts = packet.pts != FFmpeg.noPTS ? packet.pts : packet.dts
                    if readVideo, packet.isKeyframe, !packet.isDiscard, ts != FFmpeg.noPTS { keyframes.append(ts) }
                    if readsVideoEnd, ts != FFmpeg.noPTS, !packet.isDiscard {
                        videoEnd = max(videoEnd ?? .min, ts + max(0, packet.pointer.pointee.duration))
                    }
                } else if let sizer = sizers[index] {
                    timelines[index]!.append(sizer.info(packet))
                }
            }
        }
        for index in timelines.keys { timelines[index]!.finish() }
        var seen = Set<Int64>()
        var times: [MediaTime] = []
        var end: MediaTime?
        if let video {
            let tb = Rational(demuxer.stream(video).pointee.time_base)
            times = keyframes.sorted().filter { seen.insert($0).inserted }.map { MediaTime(value: $0, timeBase: tb) - origin }
            end = videoEnd.map { MediaTime(value: $0, timeBase: tb) - origin }
        }
        return MediaScan(keyframes: times, audio: timelines, videoEnd: end)
    }
}

extension Asset {
    /// Keyframes of `video` and the audio rule applied to `audio`, on a thread of its own.
    func scan(video: Track?, audio: [Track]) async throws -> MediaScan {
        let location = self.location, origin = self.origin
        let videoID = video?.id, audioIDs = audio.map(\.id)
        return try await BlockingThread.run("splice.scan") {
            try MediaScan.scan(location: location, origin: origin, video: videoID, audio: audioIDs)
        }
    }
}
