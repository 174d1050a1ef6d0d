internal import CFFmpeg
import Foundation

/// A probed media file or stream: its container, tracks and tags.
///
/// **Asset time.** Containers start their clocks anywhere (MPEG-TS often at 1.4 s or later).
/// Splice measures every time on an asset from the earliest start of its audio and video tracks,
/// so the first thing a player shows is at (or near) zero; ``origin`` is that start in the
/// container's own clock, kept exactly.
public struct Asset: Sendable, Codable, Hashable {
    /// The path or URL the asset was opened from.
    public var location: String
    /// FFmpeg's demuxer name ("mov,mp4,m4a,3gp,3g2,mj2", "mpegts", "matroska,webm").
    public var formatName: String
    /// FFmpeg's descriptive demuxer name.
    public var formatLongName: String
    /// The container's duration, when known.
    public var duration: MediaTime?
    /// The container clock value that asset time zero corresponds to.
    public var origin: MediaTime
    /// The overall bit rate, when known.
    public var bitRate: Int64?
    /// Global container tags.
    public var metadata: [String: String]
    /// Every track, in container order.
    public var tracks: [Track]
    /// The track FFmpeg would pick as the main video, if any.
    public var preferredVideoTrackID: Int?
    /// The track FFmpeg would pick as the main audio, if any.
    public var preferredAudioTrackID: Int?
    /// Chapter marks, in asset time.
    public var chapters: [Chapter] = []

    /// The main video track, if any.
    public var videoTrack: Track? { preferredVideoTrackID.flatMap { id in tracks.first { $0.id == id } } }
    /// The main audio track, if any.
    public var audioTrack: Track? { preferredAudioTrackID.flatMap { id in tracks.first { $0.id == id } } }

    /// Opens and probes `location` (a local path or any URL libavformat opens).
    /// Throws ``MediaError`` with ``MediaError/Code/fileNotFound`` or ``MediaError/Code/invalidMedia``.
    public static func open(_ location: String) async throws -> Asset {
        try await BlockingThread.run("splice.probe") { try Asset(probing: location) }
    }

    /// An asset described directly (tests, and plans built from a stored probe).
    init(location: String, formatName: String, formatLongName: String, duration: MediaTime?, origin: MediaTime,
         bitRate: Int64?, metadata: [String: String], tracks: [Track], preferredVideoTrackID: Int?,
         preferredAudioTrackID: Int?) {
        self.location = location
        self.formatName = formatName
        self.formatLongName = formatLongName
        self.duration = duration
        self.origin = origin
        self.bitRate = bitRate
        self.metadata = metadata
        self.tracks = tracks
        self.preferredVideoTrackID = preferredVideoTrackID
        self.preferredAudioTrackID = preferredAudioTrackID
    }

    /// Probes synchronously on the calling thread (callers must be on a blocking-safe thread).
    init(probing location: String) throws(MediaError) {
        let demuxer = try Demuxer(location: location)
        try self.init(demuxer: demuxer)
    }

    /// Reads everything from an opened demuxer.
    init(demuxer: Demuxer) throws(MediaError) {
        let ctx = demuxer.context
        location = demuxer.location
        formatName = FFmpeg.string(ctx.pointee.iformat.pointee.name) ?? "unknown"
        formatLongName = FFmpeg.string(ctx.pointee.iformat.pointee.long_name) ?? formatName
        bitRate = ctx.pointee.bit_rate > 0 ? ctx.pointee.bit_rate : nil
        metadata = Dictionary(fromAVDictionary: ctx.pointee.metadata)
        preferredVideoTrackID = demuxer.bestStream(AVMEDIA_TYPE_VIDEO)
        preferredAudioTrackID = demuxer.bestStream(AVMEDIA_TYPE_AUDIO, related: Int32(preferredVideoTrackID ?? -1))

        let origin = demuxer.origin
        self.origin = origin
        if ctx.pointee.duration != FFmpeg.noPTS && ctx.pointee.duration > 0 {
            duration = MediaTime(value: ctx.pointee.duration, timescale: Int32(AV_TIME_BASE))
        } else {
            duration = nil
        }
        tracks = (0..<demuxer.streamCount).map { Track(stream: demuxer.stream($0), origin: origin) }
        if tracks.allSatisfy({ $0.kind != .video && $0.kind != .audio }) {
            throw MediaError(.noUsableTrack, "'\(location)' has no audio or video track")
        }
        chapters = (0..<Int(ctx.pointee.nb_chapters)).compactMap { i in
            ctx.pointee.chapters[i].map { Chapter($0, origin: origin) }
        }
        // HDR10 metadata usually travels in the bitstream (SEI, AV1 metadata OBUs), not the
        // container: read it from the first decoded picture of a PQ or HLG track.
        for i in tracks.indices where tracks[i].kind == .video && tracks[i].isHDR && tracks[i].hdr == nil {
            tracks[i].hdr = try? HDRProbe.firstFrameMetadata(location: location, stream: tracks[i].id)
        }
    }

    /// The track with `id`, or nil.
    public func track(_ id: Int) -> Track? { tracks.first { $0.id == id } }

    /// Presentation times (asset time, ascending) of the sync samples of `track`: from the
    /// container's index when it is exact (no frame reordering), otherwise by scanning packets —
    /// either way without decoding. Samples the container marks as discarded (before an edit list's
    /// start) are left out.
    public func keyframes(of track: Track) async throws -> [MediaTime] {
        let location = self.location, origin = self.origin
        return try await BlockingThread.run("splice.keyframes") {
            let demuxer = try Demuxer(location: location)
            return try KeyframeIndex.scan(demuxer: demuxer, streamIndex: track.id, origin: origin)
        }
    }
}

// MARK: - FFmpeg → Splice value conversions

extension Rational {
    init(_ r: AVRational) { self.init(r.num, r.den) }
    var av: AVRational { AVRational(num: numerator, den: denominator) }
}

extension Dictionary where Key == String, Value == String {
    init(fromAVDictionary dict: OpaquePointer?) {
        self.init()
        var entry: UnsafeMutablePointer<AVDictionaryEntry>? = nil
        while let e = av_dict_get(dict, "", entry, AV_DICT_IGNORE_SUFFIX) {
            self[String(cString: e.pointee.key)] = String(cString: e.pointee.value)
            entry = e
        }
    }
}

extension Track {
    init(stream st: UnsafeMutablePointer<AVStream>, origin: MediaTime) {
        let par = st.pointee.codecpar.pointee
        let tb = Rational(st.pointee.time_base)
        id = Int(st.pointee.index)
        switch par.codec_type {
        case AVMEDIA_TYPE_VIDEO: kind = .video
        case AVMEDIA_TYPE_AUDIO: kind = .audio
        case AVMEDIA_TYPE_SUBTITLE: kind = .subtitle
        case AVMEDIA_TYPE_DATA: kind = .data
        case AVMEDIA_TYPE_ATTACHMENT: kind = .attachment
        default: kind = .unknown
        }
        let descriptor = avcodec_descriptor_get(par.codec_id)
        codecName = FFmpeg.string(descriptor?.pointee.name) ?? "none"
        codecLongName = FFmpeg.string(descriptor?.pointee.long_name) ?? codecName
        profile = FFmpeg.string(avcodec_profile_name(par.codec_id, par.profile))
        timeBase = tb
        let validTB = tb.isPositive
        startTime = validTB && st.pointee.start_time != FFmpeg.noPTS
            ? MediaTime(value: st.pointee.start_time, timeBase: tb) - origin : nil
        duration = validTB && st.pointee.duration != FFmpeg.noPTS && st.pointee.duration > 0
            ? MediaTime(value: st.pointee.duration, timeBase: tb) : nil
        bitRate = par.bit_rate > 0 ? par.bit_rate : nil
        metadata = Dictionary(fromAVDictionary: st.pointee.metadata)
        language = metadata["language"].flatMap { $0 == "und" ? nil : $0 }
        isDefault = st.pointee.disposition & AV_DISPOSITION_DEFAULT != 0
        isForced = st.pointee.disposition & AV_DISPOSITION_FORCED != 0
        dispositions = (0..<32).compactMap { bit in
            let flag = Int32(bitPattern: UInt32(1) << UInt32(bit))
            return st.pointee.disposition & flag != 0 ? FFmpeg.string(av_disposition_to_string(flag)) : nil
        }
        declaredFrameCount = st.pointee.nb_frames > 0 ? st.pointee.nb_frames : nil
        codecTag = Track.fourCC(par.codec_tag)
        title = metadata["title"]
        containerTrackID = st.pointee.id > 0 ? Int(st.pointee.id) : nil

        if kind == .video {
            width = Int(par.width)
            height = Int(par.height)
            let sar = Rational(par.sample_aspect_ratio)
            sampleAspectRatio = sar.isPositive && sar.numerator != sar.denominator ? sar.reduced : nil
            rotation = Track.rotation(of: st)
            let avg = Rational(st.pointee.avg_frame_rate), real = Rational(st.pointee.r_frame_rate)
            frameRate = avg.isPositive ? avg.reduced : (real.isPositive ? real.reduced : nil)
            pixelFormat = FFmpeg.string(av_get_pix_fmt_name(AVPixelFormat(par.format)))
            hasReordering = par.video_delay > 0
            if par.color_primaries != AVCOL_PRI_UNSPECIFIED {
                colorPrimaries = FFmpeg.string(av_color_primaries_name(par.color_primaries))
            }
            if par.color_trc != AVCOL_TRC_UNSPECIFIED { colorTransfer = FFmpeg.string(av_color_transfer_name(par.color_trc)) }
            if par.color_space != AVCOL_SPC_UNSPECIFIED { colorSpace = FFmpeg.string(av_color_space_name(par.color_space)) }
            if par.color_range != AVCOL_RANGE_UNSPECIFIED { colorRange = FFmpeg.string(av_color_range_name(par.color_range)) }
            if let desc = av_pix_fmt_desc_get(AVPixelFormat(par.format)) { bitDepth = Int(desc.pointee.comp.0.depth) }
            hdr = HDRMetadata(streamSideDataOf: st)
        } else {
            width = nil
            height = nil
            sampleAspectRatio = nil
            rotation = 0
            frameRate = nil
            pixelFormat = nil
            hasReordering = false
        }
        if kind == .audio {
            sampleRate = Int(par.sample_rate)
            channels = Int(par.ch_layout.nb_channels)
            var layout = par.ch_layout
            var buffer = [CChar](repeating: 0, count: 128)
            channelLayout = av_channel_layout_describe(&layout, &buffer, buffer.count) > 0
                ? FFmpeg.string(buffer) : nil
            sampleFormat = FFmpeg.string(av_get_sample_fmt_name(AVSampleFormat(par.format)))
        } else {
            sampleRate = nil
            channels = nil
            channelLayout = nil
            sampleFormat = nil
        }
    }

    /// "mp4a" for a codec tag, nil when there is none or it is not printable.
    static func fourCC(_ tag: UInt32) -> String? {
        guard tag != 0 else { return nil }
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: tag >> (8 * $0)) }
        guard bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The clockwise rotation (0/90/180/270) that makes the stream's picture upright.
    static func rotation(of st: UnsafeMutablePointer<AVStream>) -> Int {
        var size: Int = 0
        guard let data = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &size), size >= 36 else {
            return 0
        }
        // av_display_rotation_get is counter-clockwise and may be fractional; only quarter turns
        // are meaningful for video, so snap to the nearest one. (Floating point is confined to this
        // geometric angle; no media time goes through it.)
        let degrees = av_display_rotation_get(UnsafeRawPointer(data).assumingMemoryBound(to: Int32.self))
        guard degrees.isFinite else { return 0 }
        let quarter = Int((degrees / 90).rounded())
        return ((-quarter * 90) % 360 + 360) % 360
    }
}
