/// What a segment-parallel transcode is asked to make of a source: the one request type of
/// `splice transcode` (``Transcoder``), `splice submit` and the cluster API (the body of SUBMIT's
/// `export`, stored with the job as its settings). Checked once where it enters
/// (``validate()``: the CLI's `validate()`, the coordinator's SUBMIT) and typed from there on;
/// planned by ``SegmentPlanner/plan(source:request:)`` in both modes.
public struct TranscodeRequest: Sendable, Codable, Hashable {
    /// Video settings; nil leaves video out of the output.
    public var video: VideoSettings?
    /// Audio settings; nil leaves audio out of the output.
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

    /// The shortest segment a request may ask for.
    public static let minimumSegmentDuration = MediaTime(seconds: 1)

    public init(video: VideoSettings?, audio: AudioSettings?, fileType: OutputFileType, range: MediaTimeRange? = nil,
                optimizesForNetworkUse: Bool = false, metadata: [String: String] = [:],
                segmentDuration: MediaTime = MediaTime(seconds: 10), overwrite: Bool = false) {
        self.video = video
        self.audio = audio
        self.fileType = fileType
        self.range = range
        self.optimizesForNetworkUse = optimizesForNetworkUse
        self.metadata = metadata
        self.segmentDuration = segmentDuration
        self.overwrite = overwrite
    }

    private enum CodingKeys: String, CodingKey {
        case video, audio, fileType, range, optimizesForNetworkUse, metadata, segmentDuration, overwrite
    }

    /// Decodes a request; `overwrite` may be missing (jobs stored before it existed).
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
    }

    /// Checks every setting on its own terms and against the container (the source-dependent
    /// checks happen when it is planned). Throws ``SettingsError`` naming the field as the CLI
    /// spells it.
    public func validate() throws(SettingsError) {
        try video?.validate()
        try video?.validate(for: fileType)
        try audio?.validate()
        try audio?.validate(for: fileType)
        guard video != nil || audio != nil else {
            throw SettingsError(field: "no-audio", value: "with --no-video", allowed: "not both: nothing would be made")
        }
        guard segmentDuration >= Self.minimumSegmentDuration else {
            throw SettingsError(field: "segment-seconds", value: "\(segmentDuration)",
                                allowed: "at least 1 second")
        }
        if let range, range.duration <= .zero {
            throw SettingsError(field: "duration", value: "\(range.duration)", allowed: "longer than zero")
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
        return try await SegmentPlanner(targetDuration: request.segmentDuration, lanes: lanes).plan(
            asset: asset, video: request.video, audio: request.audio, fileType: request.fileType, range: request.range,
            fastStart: request.optimizesForNetworkUse,
            metadata: OutputMetadata.merging(source: asset.metadata, requested: request.metadata))
    }
}
