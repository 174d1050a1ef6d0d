public import SpliceMedia

/// What a client asks the cluster to make: the body of the API's `SUBMIT.export` field, stored
/// with the job as its settings. The same choices `splice export` and `splice transcode` take.
public struct JobRequest: Sendable, Codable, Hashable {
    /// Video settings; nil leaves video out of the output.
    public var video: VideoSettings?
    /// Audio settings; nil leaves audio out of the output.
    public var audio: AudioSettings?
    public var fileType: OutputFileType
    /// Part of the source to transcode; nil for all of it.
    public var range: MediaTimeRange?
    public var optimizesForNetworkUse: Bool
    public var metadata: [String: String]
    /// Target segment length.
    public var segmentDuration: MediaTime
    /// Whether an existing output may be replaced (`-y`). Without it the coordinator refuses a
    /// SUBMIT whose output exists.
    public var overwrite: Bool

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

    /// Checks every setting on its own terms (the coordinator re-checks against the source when
    /// it plans). Throws `SettingsError` naming the field.
    public func validate() throws {
        try video?.validate()
        try audio?.validate()
        guard video != nil || audio != nil else {
            throw SettingsError(field: "no-audio", value: "with --no-video", allowed: "not both: nothing would be made")
        }
        guard segmentDuration >= MediaTime(seconds: 1) else {
            throw SettingsError(field: "segment-seconds", value: "\(segmentDuration)", allowed: "at least 1 second")
        }
    }
}
