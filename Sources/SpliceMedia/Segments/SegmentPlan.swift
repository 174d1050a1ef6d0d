import Foundation

/// How an audio encoder cuts time: every packet holds ``samplesPerPacket`` samples (F), the first
/// real sample is preceded by ``priming`` samples of encoder delay (P), and segments are encoded
/// with ``preRollPackets`` (R) of real audio before their cut and ``tailPackets`` (T) after it.
public struct AudioFraming: Sendable, Codable, Hashable {
    public var sampleRate: Int
    public var samplesPerPacket: Int
    public var priming: Int
    public var preRollPackets: Int
    public var tailPackets: Int

    public init(sampleRate: Int, samplesPerPacket: Int, priming: Int, preRollPackets: Int, tailPackets: Int) {
        self.sampleRate = sampleRate
        self.samplesPerPacket = samplesPerPacket
        self.priming = priming
        self.preRollPackets = preRollPackets
        self.tailPackets = tailPackets
    }

    /// Packets of priming: D = ceil(P / F).
    public var primingPackets: Int { (priming + samplesPerPacket - 1) / samplesPerPacket }

    /// The packet grid of the joined stream: packet k starts at sample k·F − P.
    public func nearestGridPoint(to sample: Int64) -> Int64 {
        let f = Int64(samplesPerPacket), p = Int64(priming)
        let k = floorDiv(sample + p + f / 2, f)
        return k * f - p
    }

    /// Where a segment that keeps `[start, …)` must start encoding: R packets of pre-roll plus
    /// the priming, so that packet D + R of its encoder begins exactly at `start`. Never before
    /// the start of the audio: a segment that would reach back that far encodes from 0, exactly
    /// as a single pass does.
    public func encodeStart(forKeepStart start: Int64) -> Int64 {
        max(0, start - Int64(primingPackets + preRollPackets) * Int64(samplesPerPacket) + Int64(priming))
    }
}

/// Which output samples one audio segment encodes and which packets of it the stitcher keeps.
/// Positions are output samples of the track, counted from its first (see ``PlannedAudioTrack``).
public struct AudioSegmentRange: Sendable, Codable, Hashable {
    /// The output audio track (index into ``SegmentPlan/audioTracks``).
    public var track: Int
    /// The packet the segment starts placing samples from (see ``AudioTimeline``).
    public var anchor: AudioAnchor?
    /// First sample the segment's encoder is fed (includes pre-roll).
    public var encodeStart: Int64
    /// Where feeding stops (includes tail); nil for the last segment: the end of the audio.
    public var encodeEnd: Int64?
    /// Packets whose pts fall in `[keepStart, keepEnd)` are kept; nil bounds are open (the first
    /// segment keeps its priming packets, the last keeps everything to the end).
    public var keepStart: Int64?
    public var keepEnd: Int64?

    public init(track: Int = 0, anchor: AudioAnchor? = nil, encodeStart: Int64, encodeEnd: Int64?, keepStart: Int64?,
                keepEnd: Int64?) {
        self.track = track
        self.anchor = anchor
        self.encodeStart = encodeStart
        self.encodeEnd = encodeEnd
        self.keepStart = keepStart
        self.keepEnd = keepEnd
    }

    private enum CodingKeys: String, CodingKey { case track, anchor, encodeStart, encodeEnd, keepStart, keepEnd }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        track = try c.decodeIfPresent(Int.self, forKey: .track) ?? 0
        anchor = try c.decodeIfPresent(AudioAnchor.self, forKey: .anchor)
        encodeStart = try c.decode(Int64.self, forKey: .encodeStart)
        encodeEnd = try c.decodeIfPresent(Int64.self, forKey: .encodeEnd)
        keepStart = try c.decodeIfPresent(Int64.self, forKey: .keepStart)
        keepEnd = try c.decodeIfPresent(Int64.self, forKey: .keepEnd)
    }
}

/// One planned segment: a video presentation range in asset time, or one audio track's sample
/// range. Audio is cut independently of the video, in longer segments (AAC's rate control
/// settles over seconds; audio encodes at hundreds of times real time).
public struct SegmentSpec: Sendable, Codable, Hashable, Identifiable {
    public var index: Int
    /// Video frames presented in `[videoStart, videoEnd)`; nil bounds are open (the first segment
    /// starts at the first frame, the last runs to the end).
    public var videoStart: MediaTime?
    public var videoEnd: MediaTime?
    /// Set for an audio segment.
    public var audio: AudioSegmentRange?
    /// A bit-rate segment after the first encodes this much of the video before its start to
    /// settle its rate control, and drops it (``RateControl/warmUp``); nil: none.
    public var videoWarmUp: MediaTime?
    /// The work of encoding it, relative to the plan's other segments (microseconds of encoding,
    /// lead-in decoding included; ``VideoCuts``): the most expensive go first, and progress is
    /// weighted by it. Nil in plans made before it existed, and for audio-only plans.
    public var cost: Int64?

    public var id: Int { index }
    /// Whether this segment encodes audio (one track) rather than video.
    public var isAudio: Bool { audio != nil }

    public init(index: Int, videoStart: MediaTime? = nil, videoEnd: MediaTime? = nil, audio: AudioSegmentRange? = nil) {
        self.index = index
        self.videoStart = videoStart
        self.videoEnd = videoEnd
        self.audio = audio
    }
}

/// One audio track of a planned output.
///
/// Output sample `y` of the track is source position `firstSample + y·inputRate/outputRate`
/// (source samples from the track's first, by ``AudioTimeline``'s rule) and plays at output time
/// `lead + y` samples: audio that starts after the video (or the range) keeps its distance.
public struct PlannedAudioTrack: Sendable, Codable, Hashable {
    /// The source stream (as `splice probe` numbers tracks).
    public var source: Int
    /// Copied by the stitcher straight from the source (no segments).
    public var copies: Bool
    /// The encoder's framing, when encoded.
    public var framing: AudioFraming?
    public var firstSample: Int64
    public var lead: Int64
    /// The source track's tags and flags (language, title, default…).
    public var description: StreamDescription

    public init(source: Int, copies: Bool, framing: AudioFraming?, firstSample: Int64 = 0, lead: Int64 = 0,
                description: StreamDescription = StreamDescription()) {
        self.source = source
        self.copies = copies
        self.framing = framing
        self.firstSample = firstSample
        self.lead = lead
        self.description = description
    }

    private enum CodingKeys: String, CodingKey { case source, copies, framing, firstSample, lead, description }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        source = try c.decode(Int.self, forKey: .source)
        copies = try c.decode(Bool.self, forKey: .copies)
        framing = try c.decodeIfPresent(AudioFraming.self, forKey: .framing)
        firstSample = try c.decode(Int64.self, forKey: .firstSample)
        lead = try c.decode(Int64.self, forKey: .lead)
        description = try c.decodeIfPresent(StreamDescription.self, forKey: .description) ?? StreamDescription()
    }
}

/// A source track the stitcher carries into the output without segments.
public struct PlannedPassThrough: Sendable, Codable, Hashable {
    public enum Kind: String, Sendable, Codable, Hashable {
        /// `--copy-video` / `--copy-audio`: packets copied bit for bit.
        case video, audio
        /// Copied, or converted to ``PlannedPassThrough/convertTo``.
        case subtitle
        /// Data FFmpeg's muxer writes.
        case data
        /// Timed metadata Splice writes into QuickTime/MP4 (`mebx`, `mett`…).
        case timedMetadata
    }

    public var source: Int
    public var kind: Kind
    /// The text subtitle encoder to convert to (`mov_text`, `subrip`, `webvtt`).
    public var convertTo: String?

    public init(source: Int, kind: Kind, convertTo: String? = nil) {
        self.source = source
        self.kind = kind
        self.convertTo = convertTo
    }
}

/// A job cut into segments: everything a worker needs to encode any one of them and the
/// stitcher needs to join them. Codable: it travels to remote workers (without the fields only
/// the stitcher reads: ``forWorkers()``).
public struct SegmentPlan: Sendable, Codable, Hashable {
    /// Identifies the plan; segment files carry it so the stitcher refuses strangers.
    public var id: String
    /// The source path or URL.
    public var source: String
    /// Video settings (nil: the output's video is copied or absent).
    public var videoSettings: VideoSettings?
    /// Audio settings for every encoded audio track (nil: audio copied or absent).
    public var audioSettings: AudioSettings?
    public var outputFileType: OutputFileType
    public var optimizesForNetworkUse: Bool
    public var metadata: [String: String]
    /// Asset time that becomes output time zero (the start of the requested range, or zero;
    /// with copied video, the keyframe at or before it).
    public var outputZero: MediaTime
    /// Asset time where the output ends, when a range was requested.
    public var outputEnd: MediaTime?
    /// The asset's duration when known, for progress.
    public var assetDuration: MediaTime?
    /// Where the source's video ends (asset time), read from its packets when the container
    /// gives the track no duration of its own (Matroska, WebM: their duration is the longest
    /// track's); nil: the track's duration says it.
    public var videoTrackEnd: MediaTime?
    public var targetDuration: MediaTime
    public var segments: [SegmentSpec]
    /// The source video stream (encoded in segments, or copied).
    public var videoTrack: Int?
    /// The source video track's tags and flags.
    public var videoDescription: StreamDescription?
    /// Every output audio track, in output order.
    public var audioTracks: [PlannedAudioTrack]
    /// Tracks the stitcher takes straight from the source.
    public var passThrough: [PlannedPassThrough]
    /// Chapters, in output time.
    public var chapters: [Chapter]
    /// The output video's start timecode.
    public var timecode: String?
    /// HDR10 metadata for the output video's container boxes.
    public var videoHDR: HDRMetadata?
    /// Timed annotations written beside the video (``TimedAnnotation``), in asset time.
    public var annotations: [TimedAnnotation]
    /// What was adjusted or left out, for people.
    public var notices: [String]
    /// A streaming package's rungs and segment grid (video segments then carry one stream per rung).
    public var package: PlannedPackage?
    /// Whether segments measure their quality, what the output must reach and what each segment
    /// aims for (the request's, unchanged); nil: none of it.
    public var quality: QualityRequest?

    public init(id: String, source: String, videoSettings: VideoSettings?, audioSettings: AudioSettings?,
                outputFileType: OutputFileType, optimizesForNetworkUse: Bool, metadata: [String: String],
                outputZero: MediaTime, outputEnd: MediaTime?, assetDuration: MediaTime?, targetDuration: MediaTime,
                segments: [SegmentSpec], videoTrack: Int? = nil, videoDescription: StreamDescription? = nil, audioTracks: [PlannedAudioTrack] = [],
                passThrough: [PlannedPassThrough] = [], chapters: [Chapter] = [], timecode: String? = nil,
                videoHDR: HDRMetadata? = nil, annotations: [TimedAnnotation] = [], notices: [String] = [],
                package: PlannedPackage? = nil) {
        self.id = id
        self.source = source
        self.videoSettings = videoSettings
        self.audioSettings = audioSettings
        self.outputFileType = outputFileType
        self.optimizesForNetworkUse = optimizesForNetworkUse
        self.metadata = metadata
        self.outputZero = outputZero
        self.outputEnd = outputEnd
        self.assetDuration = assetDuration
        self.targetDuration = targetDuration
        self.segments = segments
        self.videoTrack = videoTrack
        self.videoDescription = videoDescription
        self.audioTracks = audioTracks
        self.passThrough = passThrough
        self.chapters = chapters
        self.timecode = timecode
        self.videoHDR = videoHDR
        self.annotations = annotations
        self.notices = notices
        self.package = package
    }

    private enum CodingKeys: String, CodingKey {
        case id, source, videoSettings, audioSettings, outputFileType, optimizesForNetworkUse, metadata, outputZero,
             outputEnd, assetDuration, targetDuration, segments, videoTrack, videoDescription, audioTracks, passThrough, chapters, timecode,
             videoHDR, annotations, notices, package, quality, videoTrackEnd
    }

    /// Decodes a plan; the fields added for multi-track outputs may be missing.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        source = try c.decode(String.self, forKey: .source)
        videoSettings = try c.decodeIfPresent(VideoSettings.self, forKey: .videoSettings)
        audioSettings = try c.decodeIfPresent(AudioSettings.self, forKey: .audioSettings)
        outputFileType = try c.decode(OutputFileType.self, forKey: .outputFileType)
        optimizesForNetworkUse = try c.decode(Bool.self, forKey: .optimizesForNetworkUse)
        metadata = try c.decode([String: String].self, forKey: .metadata)
        outputZero = try c.decode(MediaTime.self, forKey: .outputZero)
        outputEnd = try c.decodeIfPresent(MediaTime.self, forKey: .outputEnd)
        assetDuration = try c.decodeIfPresent(MediaTime.self, forKey: .assetDuration)
        targetDuration = try c.decode(MediaTime.self, forKey: .targetDuration)
        segments = try c.decode([SegmentSpec].self, forKey: .segments)
        videoTrack = try c.decodeIfPresent(Int.self, forKey: .videoTrack)
        videoDescription = try c.decodeIfPresent(StreamDescription.self, forKey: .videoDescription)
        audioTracks = try c.decodeIfPresent([PlannedAudioTrack].self, forKey: .audioTracks) ?? []
        passThrough = try c.decodeIfPresent([PlannedPassThrough].self, forKey: .passThrough) ?? []
        chapters = try c.decodeIfPresent([Chapter].self, forKey: .chapters) ?? []
        timecode = try c.decodeIfPresent(String.self, forKey: .timecode)
        videoHDR = try c.decodeIfPresent(HDRMetadata.self, forKey: .videoHDR)
        annotations = try c.decodeIfPresent([TimedAnnotation].self, forKey: .annotations) ?? []
        notices = try c.decodeIfPresent([String].self, forKey: .notices) ?? []
        package = try c.decodeIfPresent(PlannedPackage.self, forKey: .package)
        quality = try c.decodeIfPresent(QualityRequest.self, forKey: .quality)
        videoTrackEnd = try c.decodeIfPresent(MediaTime.self, forKey: .videoTrackEnd)
    }

    /// Encodes the plan; the stitcher-only lists are left out when empty (as ``forWorkers()``
    /// leaves them), so a work order's JSON is the same however it was assembled.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(source, forKey: .source)
        try c.encodeIfPresent(videoSettings, forKey: .videoSettings)
        try c.encodeIfPresent(audioSettings, forKey: .audioSettings)
        try c.encode(outputFileType, forKey: .outputFileType)
        try c.encode(optimizesForNetworkUse, forKey: .optimizesForNetworkUse)
        try c.encode(metadata, forKey: .metadata)
        try c.encode(outputZero, forKey: .outputZero)
        try c.encodeIfPresent(outputEnd, forKey: .outputEnd)
        try c.encodeIfPresent(videoTrackEnd, forKey: .videoTrackEnd)
        try c.encodeIfPresent(assetDuration, forKey: .assetDuration)
        try c.encode(targetDuration, forKey: .targetDuration)
        try c.encode(segments, forKey: .segments)
        try c.encodeIfPresent(videoTrack, forKey: .videoTrack)
        try c.encodeIfPresent(videoDescription, forKey: .videoDescription)
        try c.encode(audioTracks, forKey: .audioTracks)
        try c.encode(passThrough, forKey: .passThrough)
        if !chapters.isEmpty { try c.encode(chapters, forKey: .chapters) }
        try c.encodeIfPresent(timecode, forKey: .timecode)
        try c.encodeIfPresent(videoHDR, forKey: .videoHDR)
        if !annotations.isEmpty { try c.encode(annotations, forKey: .annotations) }
        if !notices.isEmpty { try c.encode(notices, forKey: .notices) }
        try c.encodeIfPresent(package, forKey: .package)
        try c.encodeIfPresent(quality, forKey: .quality)
    }

    /// The plan's keys only the stitcher reads (left out by ``forWorkers()``), for work orders
    /// built from a plan's stored JSON.
    public static let stitcherOnlyKeys: Set<String> = ["chapters", "annotations", "notices"]

    /// This plan as a worker needs it: without what only the stitcher reads (annotations can be
    /// long), so work orders stay small.
    public func forWorkers() -> SegmentPlan {
        var copy = self
        copy.chapters = []
        copy.annotations = []
        copy.notices = []
        return copy
    }

    /// The framing of the encoded track an audio segment belongs to.
    public func framing(of range: AudioSegmentRange) -> AudioFraming? {
        audioTracks.indices.contains(range.track) ? audioTracks[range.track].framing : nil
    }

    /// The video segments, in order.
    public var videoSegments: [SegmentSpec] { segments.filter { !$0.isAudio } }

    /// The audio segments of output audio track `track`, in order.
    public func audioSegments(track: Int) -> [SegmentSpec] { segments.filter { $0.audio?.track == track } }

    /// The media span segment `spec` covers, for progress and reports (nil when unknown).
    public func approximateDuration(of spec: SegmentSpec) -> MediaTime? {
        if let audio = spec.audio, let framing = framing(of: audio) {
            let rate = Int32(framing.sampleRate)
            let start = audio.keepStart ?? 0
            guard let end = audio.keepEnd ?? audio.encodeEnd ?? assetDuration.map({ d in
                (outputEnd ?? d) - outputZero
            }).map({ $0.count(of: MediaTime(value: 1, timescale: rate)) }) else {
                return nil
            }
            return MediaTime(value: max(0, end - start), timescale: rate)
        }
        let start = spec.videoStart ?? outputZero
        guard let end = spec.videoEnd ?? outputEnd ?? assetDuration else { return nil }
        return end - start
    }
}
