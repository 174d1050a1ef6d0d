/// A streaming package instead of one file (`splice transcode IN OUT.m3u8`, `OUT.mpd`): an
/// adaptive-bitrate ladder as CMAF fMP4 renditions with HLS playlists and/or a DASH manifest.
/// Part of ``TranscodeRequest`` (its ``TranscodeRequest/package``).
public struct PackageRequest: Sendable, Codable, Hashable {
    /// The rungs; nil: ``LadderRung/automatic(sourceHeight:)``.
    public var ladder: [LadderRung]?
    /// Length of the streaming segments: every rendition has an IDR picture at each multiple.
    public var segmentDuration: MediaTime
    /// Write the HLS master and media playlists.
    public var hls: Bool
    /// Write a DASH manifest over the same segments.
    public var dash: Bool

    public static let defaultSegmentDuration = MediaTime(seconds: 6)

    public init(ladder: [LadderRung]? = nil, segmentDuration: MediaTime = PackageRequest.defaultSegmentDuration,
                hls: Bool = true, dash: Bool = false) {
        self.ladder = ladder
        self.segmentDuration = segmentDuration
        self.hls = hls
        self.dash = dash
    }

    /// Checks the request on its own terms.
    public func validate(video: VideoSettings?) throws(SettingsError) {
        guard hls || dash else {
            throw SettingsError(field: "dash", value: "no manifest", allowed: "an .m3u8 or .mpd output")
        }
        guard segmentDuration >= MediaTime(seconds: 1), segmentDuration <= MediaTime(seconds: 60) else {
            throw SettingsError(field: "hls-segment-seconds", value: "\(segmentDuration)", allowed: "from 1 to 60 seconds")
        }
        guard let video, video.codec == .h264 else {
            throw SettingsError(field: "video-codec", value: video?.codec.rawValue ?? "none",
                                allowed: "h264 for a streaming package (CMAF avc1 renditions need a video track)")
        }
        if video.quality != nil || video.bitrate != nil || video.width != nil || video.height != nil {
            throw SettingsError(field: "ladder", value: "with a video quality, bit rate, width or height",
                                allowed: "the only source of sizes and rates: each rung has its own")
        }
        if let ladder, ladder.isEmpty {
            throw SettingsError(field: "ladder", value: "empty", allowed: "at least one rung, or auto")
        }
    }

    /// Parses `--ladder`: `auto` (nil) or comma-separated rungs.
    public static func parseLadder(_ text: String) throws(SettingsError) -> [LadderRung]? {
        if text == "auto" { return nil }
        var rungs: [LadderRung] = []
        for piece in text.split(separator: ",") { rungs.append(try LadderRung(parsing: String(piece))) }
        guard !rungs.isEmpty else { throw SettingsError(field: "ladder", value: text, allowed: "auto or rungs like 1280x720@3M") }
        return rungs
    }
}

/// What a plan records of a package: every rung's full video settings (the plan's
/// ``SegmentPlan/videoSettings`` is the first) and the segment grid.
public struct PlannedPackage: Sendable, Codable, Hashable {
    public var renditions: [VideoSettings]
    public var segmentDuration: MediaTime
    public var hls: Bool
    public var dash: Bool

    public init(renditions: [VideoSettings], segmentDuration: MediaTime, hls: Bool, dash: Bool) {
        self.renditions = renditions
        self.segmentDuration = segmentDuration
        self.hls = hls
        self.dash = dash
    }

    /// Resolves `request` against the source's upright size: each rung the base settings with its
    /// size and capped rate.
    static func resolve(_ request: PackageRequest, base: VideoSettings, source: Track) throws(SettingsError) -> PlannedPackage {
        guard let display = source.displaySize else {
            throw SettingsError(field: "ladder", value: "auto", allowed: "used on a source whose picture size is known")
        }
        let rungs = request.ladder ?? LadderRung.automatic(sourceHeight: display.height)
        let renditions = rungs.map { rung in
            var settings = base
            settings.width = rung.width
            settings.height = rung.height
            settings.bitrate = rung.bitrate
            settings.maxBitrate = rung.maxBitrate
            settings.bufferSize = rung.bufferSize
            settings.quality = nil
            return settings
        }
        return PlannedPackage(renditions: renditions, segmentDuration: request.segmentDuration, hls: request.hls,
                              dash: request.dash)
    }
}
