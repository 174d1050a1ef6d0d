/// What a segment-parallel transcode is asked to make of a source: the one request type of
/// `splice transcode` (``Transcoder``), `splice submit` and the cluster API (the body of SUBMIT's
/// `export`, stored with the job as its settings). Checked once where it enters
/// (``validate()``: the CLI's `validate()`, the coordinator's SUBMIT) and typed from there on;
/// planned by ``SegmentPlanner/plan(source:request:)`` in both modes.
///
/// **One set of defaults.** Decoding applies the defaults the CLI applies to flags not given, so
/// every client that leaves a field out gets what `splice transcode` makes without that flag:
/// video encoded (``VideoSettings/defaults(for:)``) unless `includesVideo` is false or it is
/// copied, every audio track encoded (``AudioSettings/defaults(for:)``) unless `audioTracks` is
/// `none` or it is copied, 10 s segments, no fast start, no tags. The JSON Schema of this type
/// is docs/schema/transcode-request.json (docs/protocol.md, The export settings).
public struct TranscodeRequest: Sendable, Codable, Hashable {
    /// Video settings; nil leaves video out of the output (or copies it, with ``copiesVideo``).
    /// In JSON, an absent `video` is the default video unless `includesVideo` is false.
    public var video: VideoSettings?
    /// Audio settings for every selected audio track; nil leaves audio out (or copies it, with
    /// ``copiesAudio``): ``audioTracks`` is then `none` unless copied. In JSON, an absent `audio`
    /// is the default audio unless `audioTracks` is `none`.
    public var audio: AudioSettings?
    public var fileType: OutputFileType
    /// Part of the source to transcode; nil for all of it.
    public var range: MediaTimeRange?
    /// The MP4/MOV index first (`--faststart`).
    public var optimizesForNetworkUse: Bool
    /// Global tags for the output, over the source's own (``OutputMetadata``).
    public var metadata: [String: String]
    /// Target segment length (`--segment-seconds`); nil: not asked for, ``defaultSegmentDuration``
    /// — which the planner may lengthen where each segment's rate-control warm-up costs more than
    /// shorter segments buy (``SegmentPlanner/warmedTarget(length:warmUp:lanes:)``). A length
    /// asked for is kept.
    public var segmentDuration: MediaTime?
    /// The segment length planning starts from: the one asked for, else the default.
    public var targetSegmentDuration: MediaTime { segmentDuration ?? Self.defaultSegmentDuration }
    /// Whether an existing output may be replaced (`-y`); never the source.
    public var overwrite: Bool
    /// Which audio tracks the output carries (`--audio-tracks`; default all).
    public var audioTracks: AudioTrackSelection
    /// The video packets are copied from the source by the stitcher (`--copy-video`); cuts then
    /// fall on keyframes only.
    public var copiesVideo: Bool
    /// The selected audio tracks are copied from the source by the stitcher (`--copy-audio`).
    public var copiesAudio: Bool
    /// Subtitle tracks: carried (converted where the container needs it) or left out.
    public var subtitles: TrackPolicy
    /// Data tracks (timed metadata, timecode): carried or left out.
    public var dataTracks: TrackPolicy
    /// Timed annotations written as a metadata track beside the video (`--annotations`).
    public var annotations: [TimedAnnotation]
    /// Length of audio segments; nil: the longer of ``segmentDuration`` and 60 s (see
    /// ``SegmentPlanner/audioTargetDuration``).
    public var audioSegmentDuration: MediaTime?
    /// A streaming package (an HLS/DASH ladder) instead of one file; nil for a file.
    public var package: PackageRequest?
    /// Quality measured and checked (`--verify`), or aimed for per segment (`--target-quality`);
    /// nil for neither.
    public var quality: QualityRequest?

    /// The shortest segment a request may ask for.
    public static let minimumSegmentDuration = MediaTime(seconds: 1)
    /// The segment length when none is asked for (`--segment-seconds`, `segmentDuration`).
    public static let defaultSegmentDuration = MediaTime(seconds: 10)

    /// Whether the output has video, encoded or copied (`includesVideo` in JSON).
    public var includesVideo: Bool { video != nil || copiesVideo }

    public init(video: VideoSettings?, audio: AudioSettings?, fileType: OutputFileType, range: MediaTimeRange? = nil,
                optimizesForNetworkUse: Bool = false, metadata: [String: String] = [:],
                segmentDuration: MediaTime? = nil, overwrite: Bool = false,
                audioTracks: AudioTrackSelection = .all, copiesVideo: Bool = false, copiesAudio: Bool = false,
                subtitles: TrackPolicy = .copy, dataTracks: TrackPolicy = .copy, annotations: [TimedAnnotation] = [],
                audioSegmentDuration: MediaTime? = nil, package: PackageRequest? = nil, quality: QualityRequest? = nil) {
        self.video = video
        self.audio = audio
        self.fileType = fileType
        self.range = range
        self.optimizesForNetworkUse = optimizesForNetworkUse
        self.metadata = metadata
        self.segmentDuration = segmentDuration
        self.overwrite = overwrite
        // No audio settings and nothing copied is no audio, whatever the selection: said as
        // `none`, so the request means the same once encoded and decoded.
        self.audioTracks = audio == nil && !copiesAudio ? .none : audioTracks
        self.copiesVideo = copiesVideo
        self.copiesAudio = copiesAudio
        self.subtitles = subtitles
        self.dataTracks = dataTracks
        self.annotations = annotations
        self.audioSegmentDuration = audioSegmentDuration
        self.package = package
        self.quality = quality
    }

    private enum CodingKeys: String, CodingKey {
        case video, audio, fileType, range, optimizesForNetworkUse, metadata, segmentDuration, overwrite, audioTracks,
             copiesVideo, copiesAudio, subtitles, dataTracks, annotations, audioSegmentDuration, package, includesVideo,
             quality
    }

    /// Decodes a request, with the defaults every client gets for what it leaves out (the type's
    /// comment); only `fileType` is required. Jobs stored before a field existed decode the same way.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        fileType = try container.decode(OutputFileType.self, forKey: .fileType)
        copiesVideo = try container.decodeIfPresent(Bool.self, forKey: .copiesVideo) ?? false
        copiesAudio = try container.decodeIfPresent(Bool.self, forKey: .copiesAudio) ?? false
        audioTracks = try container.decodeIfPresent(AudioTrackSelection.self, forKey: .audioTracks) ?? .all
        video = try container.decodeIfPresent(VideoSettings.self, forKey: .video)
        audio = try container.decodeIfPresent(AudioSettings.self, forKey: .audio)
        if try container.decodeIfPresent(Bool.self, forKey: .includesVideo) ?? true {
            if video == nil && !copiesVideo { video = VideoSettings.defaults(for: fileType) }
        } else if video != nil || copiesVideo {
            throw DecodingError.dataCorruptedError(
                forKey: .includesVideo, in: container, debugDescription: "false, yet `video` or `copiesVideo` is given")
        }
        if audio == nil && !copiesAudio && audioTracks != .none { audio = AudioSettings.defaults(for: fileType) }
        range = try container.decodeIfPresent(MediaTimeRange.self, forKey: .range)
        optimizesForNetworkUse = try container.decodeIfPresent(Bool.self, forKey: .optimizesForNetworkUse) ?? false
        metadata = try container.decodeIfPresent([String: String].self, forKey: .metadata) ?? [:]
        segmentDuration = try container.decodeIfPresent(MediaTime.self, forKey: .segmentDuration)
        overwrite = try container.decodeIfPresent(Bool.self, forKey: .overwrite) ?? false
        subtitles = try container.decodeIfPresent(TrackPolicy.self, forKey: .subtitles) ?? .copy
        dataTracks = try container.decodeIfPresent(TrackPolicy.self, forKey: .dataTracks) ?? .copy
        annotations = try container.decodeIfPresent([TimedAnnotation].self, forKey: .annotations) ?? []
        audioSegmentDuration = try container.decodeIfPresent(MediaTime.self, forKey: .audioSegmentDuration)
        package = try container.decodeIfPresent(PackageRequest.self, forKey: .package)
        quality = try container.decodeIfPresent(QualityRequest.self, forKey: .quality)
    }

    /// Encodes every field, so that decoding gives the same request: no video is said
    /// (`includesVideo: false`), no audio is `audioTracks: none` (the initializer sees to it).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(video, forKey: .video)
        try container.encodeIfPresent(audio, forKey: .audio)
        try container.encode(fileType, forKey: .fileType)
        try container.encodeIfPresent(range, forKey: .range)
        try container.encode(optimizesForNetworkUse, forKey: .optimizesForNetworkUse)
        try container.encode(metadata, forKey: .metadata)
        try container.encodeIfPresent(segmentDuration, forKey: .segmentDuration)
        try container.encode(overwrite, forKey: .overwrite)
        try container.encode(audioTracks, forKey: .audioTracks)
        try container.encode(copiesVideo, forKey: .copiesVideo)
        try container.encode(copiesAudio, forKey: .copiesAudio)
        try container.encode(subtitles, forKey: .subtitles)
        try container.encode(dataTracks, forKey: .dataTracks)
        try container.encode(annotations, forKey: .annotations)
        try container.encodeIfPresent(audioSegmentDuration, forKey: .audioSegmentDuration)
        try container.encodeIfPresent(package, forKey: .package)
        try container.encodeIfPresent(quality, forKey: .quality)
        if !includesVideo { try container.encode(false, forKey: .includesVideo) }
    }

    /// Whether the output has audio (encoded or copied).
    var hasAudio: Bool { (audio != nil || copiesAudio) && audioTracks != .none }

    /// Checks every setting on its own terms and against the container (the source-dependent
    /// checks happen when it is planned). Throws ``SettingsError`` naming the field as the CLI
    /// spells it.
    public func validate() throws(SettingsError) {
        try video?.validate()
        try video?.validate(for: fileType)
        try audio?.validate()
        try audio?.validate(for: fileType)
        if copiesVideo && video != nil {
            throw SettingsError(field: "copy-video", value: "with video settings", allowed: "alone: copied video is not encoded")
        }
        if copiesAudio && audio != nil {
            throw SettingsError(field: "copy-audio", value: "with audio settings", allowed: "alone: copied audio is not encoded")
        }
        guard includesVideo || hasAudio else {
            throw SettingsError(field: "no-video", value: "with no audio either", allowed: "not asked for: nothing would be made")
        }
        guard video != nil || (audio != nil && audioTracks != .none) else {
            throw SettingsError(field: "copy-video", value: "with copied or no audio",
                                allowed: "combined with something to encode; `splice export` copies tracks without segments")
        }
        if let segmentDuration, segmentDuration < Self.minimumSegmentDuration {
            throw SettingsError(field: "segment-seconds", value: "\(segmentDuration)", allowed: "at least 1 second")
        }
        if let audioSegmentDuration, audioSegmentDuration < Self.minimumSegmentDuration {
            throw SettingsError(field: "audio-segment-seconds", value: "\(audioSegmentDuration)", allowed: "at least 1 second")
        }
        if let range, range.duration <= .zero {
            throw SettingsError(field: "duration", value: "\(range.duration)", allowed: "longer than zero")
        }
        if !annotations.isEmpty && !fileType.isQuickTime {
            throw SettingsError(field: "annotations", value: "\(annotations.count) annotations",
                                allowed: "written to an .mp4 or .mov output (a .\(fileType) file has no timed-metadata tracks)")
        }
        try TimedAnnotation.validate(annotations)
        try quality?.validate(video: video, package: package != nil, copiesVideo: copiesVideo)
        if let package {
            if copiesVideo || copiesAudio {
                throw SettingsError(field: copiesVideo ? "copy-video" : "copy-audio", value: "with a streaming package",
                                    allowed: "left out: every rendition of a package is encoded")
            }
            try package.validate(video: video)
            guard fileType == .mp4 else {
                throw SettingsError(field: "format", value: "\(fileType)", allowed: "mp4 for a streaming package (CMAF)")
            }
        }
    }
}

/// The global tags an output carries: the source's, less those that describe the source's own
/// container or encoder (they would be wrong on ours), then the requested ones over them.
public enum OutputMetadata {
    /// Tags FFmpeg writes about a container and its encoder.
    static let containerTags: Set<String> = ["major_brand", "minor_version", "compatible_brands", "encoder", "ENCODER"]

    /// `source`'s tags without the container's own, with `requested` over them.
    public static func merging(source: [String: String], requested: [String: String]) -> [String: String] {
        source.filter { !containerTags.contains($0.key) }.merging(requested) { _, requested in requested }
    }
}

extension SegmentPlanner {
    /// The one planning entry point of `splice transcode` and the cluster: opens `source`, and
    /// cuts it as `request` asks for `lanes` encoders at once (``VideoCuts``), with the output's
    /// tags (``OutputMetadata``).
    public static func plan(source: String, request: TranscodeRequest, lanes: Int = 1) async throws -> SegmentPlan {
        let asset = try await Asset.open(source)
        var planner = SegmentPlanner(targetDuration: request.targetSegmentDuration, lanes: lanes)
        planner.lengthensWarmedSegments = request.segmentDuration == nil
        planner.audioTargetDuration = request.audioSegmentDuration
        return try await planner.plan(asset: asset, request: request,
                                      metadata: OutputMetadata.merging(source: asset.metadata, requested: request.metadata))
    }
}
