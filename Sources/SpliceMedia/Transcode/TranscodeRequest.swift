/// What a segment-parallel transcode is asked to make of a source: the one request type of
/// `splice transcode` (``Transcoder``), `splice submit` and the cluster API (the body of SUBMIT's
/// `export`, stored with the job as its settings). Checked once where it enters
/// (``validate()``: the CLI's `validate()`, the coordinator's SUBMIT) and typed from there on;
/// planned by ``SegmentPlanner/plan(source:request:)`` in both modes.
public struct TranscodeRequest: Sendable, Codable, Hashable {
    /// Video settings; nil leaves video out of the output (or copies it, with ``copiesVideo``).
    public var video: VideoSettings?
    /// Audio settings for every selected audio track; nil leaves audio out (or copies it, with
    /// ``copiesAudio``).
    public var audio: AudioSettings?
    public var fileType: OutputFileType
    /// Part of the source to transcode; nil for all of it.
    public var range: MediaTimeRange?
    /// The MP4/MOV index first (`--faststart`).
    public var optimizesForNetworkUse: Bool
    /// Global tags for the output, over the source's own (``OutputMetadata``).
    public var metadata: [String: String]
    /// Target segment length.
    public var segmentDuration: MediaTime
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

    /// The shortest segment a request may ask for.
    public static let minimumSegmentDuration = MediaTime(seconds: 1)

    public init(video: VideoSettings?, audio: AudioSettings?, fileType: OutputFileType, range: MediaTimeRange? = nil,
                optimizesForNetworkUse: Bool = false, metadata: [String: String] = [:],
                segmentDuration: MediaTime = MediaTime(seconds: 10), overwrite: Bool = false,
                audioTracks: AudioTrackSelection = .all, copiesVideo: Bool = false, copiesAudio: Bool = false,
                subtitles: TrackPolicy = .copy, dataTracks: TrackPolicy = .copy, annotations: [TimedAnnotation] = [],
                audioSegmentDuration: MediaTime? = nil, package: PackageRequest? = nil) {
        self.video = video
        self.audio = audio
        self.fileType = fileType
        self.range = range
        self.optimizesForNetworkUse = optimizesForNetworkUse
        self.metadata = metadata
        self.segmentDuration = segmentDuration
        self.overwrite = overwrite
        self.audioTracks = audioTracks
        self.copiesVideo = copiesVideo
        self.copiesAudio = copiesAudio
        self.subtitles = subtitles
        self.dataTracks = dataTracks
        self.annotations = annotations
        self.audioSegmentDuration = audioSegmentDuration
        self.package = package
    }

    private enum CodingKeys: String, CodingKey {
        case video, audio, fileType, range, optimizesForNetworkUse, metadata, segmentDuration, overwrite, audioTracks,
             copiesVideo, copiesAudio, subtitles, dataTracks, annotations, audioSegmentDuration, package
    }

    /// Decodes a request; fields added after the first release may be missing (jobs stored
    /// before they existed) and take their defaults.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        video = try container.decodeIfPresent(VideoSettings.self, forKey: .video)
        audio = try container.decodeIfPresent(AudioSettings.self, forKey: .audio)
        fileType = try container.decode(OutputFileType.self, forKey: .fileType)
        range = try container.decodeIfPresent(MediaTimeRange.self, forKey: .range)
        optimizesForNetworkUse = try container.decode(Bool.self, forKey: .optimizesForNetworkUse)
        metadata = try container.decode([String: String].self, forKey: .metadata)
        segmentDuration = try container.decode(MediaTime.self, forKey: .segmentDuration)
        overwrite = try container.decodeIfPresent(Bool.self, forKey: .overwrite) ?? false
        audioTracks = try container.decodeIfPresent(AudioTrackSelection.self, forKey: .audioTracks) ?? .all
        copiesVideo = try container.decodeIfPresent(Bool.self, forKey: .copiesVideo) ?? false
        copiesAudio = try container.decodeIfPresent(Bool.self, forKey: .copiesAudio) ?? false
        subtitles = try container.decodeIfPresent(TrackPolicy.self, forKey: .subtitles) ?? .copy
        dataTracks = try container.decodeIfPresent(TrackPolicy.self, forKey: .dataTracks) ?? .copy
        annotations = try container.decodeIfPresent([TimedAnnotation].self, forKey: .annotations) ?? []
        audioSegmentDuration = try container.decodeIfPresent(MediaTime.self, forKey: .audioSegmentDuration)
        package = try container.decodeIfPresent(PackageRequest.self, forKey: .package)
    }

    /// Whether the output has video (encoded or copied) and audio.
    var hasVideo: Bool { video != nil || copiesVideo }
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
        guard hasVideo || hasAudio else {
            throw SettingsError(field: "no-video", value: "with no audio either", allowed: "not asked for: nothing would be made")
        }
        guard video != nil || (audio != nil && audioTracks != .none) else {
            throw SettingsError(field: "copy-video", value: "with copied or no audio",
                                allowed: "combined with something to encode; `splice export` copies tracks without segments")
        }
        guard segmentDuration >= Self.minimumSegmentDuration else {
            throw SettingsError(field: "segment-seconds", value: "\(segmentDuration)",
                                allowed: "at least 1 second")
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
        var planner = SegmentPlanner(targetDuration: request.segmentDuration, lanes: lanes)
        planner.audioTargetDuration = request.audioSegmentDuration
        return try await planner.plan(asset: asset, request: request,
                                      metadata: OutputMetadata.merging(source: asset.metadata, requested: request.metadata))
    }
}
