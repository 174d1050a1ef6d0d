import Foundation

/// Everything one pipeline run needs, resolved and checked before any file is touched.
/// Built by ``ExportSession`` for whole-asset or time-range exports, and by the segment exporter
/// for one planned segment.
struct ExportPlan: Sendable {
    enum Request<Settings: Sendable>: Sendable {
        case encode(Settings)
        case copy
        case drop
    }

    enum VideoRoute: Sendable {
        case encode(VideoEncoding)
        case copy
    }

    enum AudioRoute: Sendable {
        case encode(AudioEncoding)
        case copy
    }

    /// A span of asset time; `end == nil` runs to the end of the track.
    struct Window: Sendable, Hashable {
        var start: MediaTime
        var end: MediaTime?
        func contains(_ t: MediaTime) -> Bool { t >= start && (end.map { t < $0 } ?? true) }
    }

    /// Audio positions in samples at the output rate, counted from asset time zero.
    struct SampleWindow: Sendable, Hashable {
        var start: Int64
        /// `nil` runs to the end of the source audio.
        var end: Int64?
    }

    /// What the run writes.
    enum Output: Sendable {
        /// A user-facing file through an FFmpeg muxer; `replacing` lets it replace a file that is
        /// at the destination when it finishes.
        case file(muxerName: String, isQuickTime: Bool, replacing: Bool)
        /// A Splice segment file (see ``SegmentFile``).
        case segment(planID: String, index: Int)
    }

    var location: String
    /// Container clock value of asset time zero.
    var origin: MediaTime
    var destination: String
    var output: Output

    var videoStream: Int?
    var video: VideoRoute?
    var audioStream: Int?
    var audio: AudioRoute?

    /// Video frames presented in this window are written.
    var videoWindow: Window
    /// Audio samples (output rate) in this window are encoded (encode route only).
    var audioSamples: SampleWindow?
    /// The asset time that becomes output time zero.
    var outputZero: MediaTime
    /// The output-rate sample position that becomes audio pts zero.
    var audioZeroSample: Int64

    var fastStart: Bool
    var metadata: [String: String]
    var muxerOptions: [String: String] = [:]
    var codecThreads: Int
    /// Extra private encoder options (the segment exporter closes GOPs this way).
    var extraVideoOptions: [String: String] = [:]
    var notices: [String]
    /// The span progress is measured against.
    var progressDuration: MediaTime?

    /// Resolves an export of `asset` (all of it, or `timeRange`) into a plan.
    static func make(asset: Asset, destination: String, fileType requested: OutputFileType?,
                     video: Request<VideoSettings>, audio: Request<AudioSettings>, timeRange: MediaTimeRange?,
                     fastStart: Bool, metadata: [String: String], codecThreads: Int,
                     replacing: Bool) throws -> ExportPlan {
        let ext = URL(fileURLWithPath: destination).pathExtension
        guard let fileType = requested ?? OutputFileType(pathExtension: ext) else {
            throw SettingsError(field: "output", value: destination,
                                allowed: "a file ending in .mp4, .mov, .mkv or .webm (or give the container explicitly)")
        }
        var notices: [String] = []
        var videoRoute: VideoRoute?
        var videoStream: Int?
        if let track = asset.videoTrack {
            switch video {
            case .encode(let settings):
                videoRoute = .encode(try VideoEncoding.resolve(settings, source: track, fileType: fileType,
                                                                threads: codecThreads, notices: &notices))
                videoStream = track.id
            case .copy:
                try checkCopy(track, into: fileType)
                videoRoute = .copy
                videoStream = track.id
            case .drop: break
            }
        } else if case .encode = video, asset.audioTrack == nil {
            throw MediaError(.noUsableTrack, "'\(asset.location)' has no video track")
        }
        var audioRoute: AudioRoute?
        var audioStream: Int?
        if let track = asset.audioTrack {
            switch audio {
            case .encode(let settings):
                audioRoute = .encode(try AudioEncoding.resolve(settings, source: track, fileType: fileType))
                audioStream = track.id
            case .copy:
                try checkCopy(track, into: fileType)
                audioRoute = .copy
                audioStream = track.id
            case .drop: break
            }
        }
        guard videoRoute != nil || audioRoute != nil else {
            throw MediaError(.noUsableTrack, "nothing to export from '\(asset.location)': no video or audio track selected")
        }

        let start = timeRange?.start ?? .zero
        if let range = timeRange {
            if range.start < .zero {
                throw SettingsError(field: "start", value: "\(range.start)", allowed: "zero or later")
            }
            if range.isEmpty {
                throw SettingsError(field: "duration", value: "\(range.duration)", allowed: "longer than zero")
            }
            if let d = asset.duration, range.start >= d {
                throw SettingsError(field: "start", value: "\(range.start)",
                                    allowed: "before the end of '\(asset.location)' (\(d))")
            }
        }
        let window = Window(start: start, end: timeRange?.end)
        var sampleWindow: SampleWindow?
        var zeroSample: Int64 = 0
        if case .encode(let enc)? = audioRoute {
            let unit = MediaTime(value: 1, timescale: Int32(enc.sampleRate))
            let s = start.count(of: unit, rounding: .nearest)
            sampleWindow = SampleWindow(start: s, end: window.end.map { $0.count(of: unit, rounding: .nearest) })
            zeroSample = s
        }
        let progressDuration = timeRange?.duration ?? asset.duration
        return ExportPlan(
            location: asset.location, origin: asset.origin, destination: destination,
            output: .file(muxerName: fileType.muxerName, isQuickTime: fileType.isQuickTime, replacing: replacing),
            videoStream: videoStream, video: videoRoute, audioStream: audioStream, audio: audioRoute,
            videoWindow: window, audioSamples: sampleWindow, outputZero: start, audioZeroSample: zeroSample,
            fastStart: fastStart, metadata: metadata, codecThreads: codecThreads, notices: notices,
            progressDuration: progressDuration)
    }

    /// The plan for one segment of a ``SegmentPlan``: encode only, exact windows, absolute audio
    /// positions, written to a segment file.
    static func segment(_ plan: SegmentPlan, spec: SegmentSpec, asset: Asset, destination: String,
                        codecThreads: Int) throws -> ExportPlan {
        var notices: [String] = []
        var videoRoute: VideoRoute?, videoStream: Int?
        if let settings = plan.videoSettings {
            guard let track = asset.videoTrack else {
                throw MediaError(.noUsableTrack, "'\(asset.location)' has no video track")
            }
            videoRoute = .encode(try VideoEncoding.resolve(settings, source: track, fileType: plan.outputFileType,
                                                           threads: codecThreads, closedGOP: true, notices: &notices))
            videoStream = track.id
        }
        var audioRoute: AudioRoute?, audioStream: Int?, samples: SampleWindow?, zeroSample: Int64 = 0
        if let settings = plan.audioSettings, let range = spec.audio {
            guard let track = asset.audioTrack else {
                throw MediaError(.noUsableTrack, "'\(asset.location)' has no audio track")
            }
            let encoding = try AudioEncoding.resolve(settings, source: track, fileType: plan.outputFileType)
            audioRoute = .encode(encoding)
            audioStream = track.id
            zeroSample = plan.outputZero.count(of: MediaTime(value: 1, timescale: Int32(encoding.sampleRate)), rounding: .nearest)
            samples = SampleWindow(start: zeroSample + range.encodeStart, end: range.encodeEnd.map { zeroSample + $0 })
        }
        guard videoRoute != nil || audioRoute != nil else {
            throw MediaError(.noUsableTrack, "segment \(spec.index) of '\(asset.location)' has nothing to encode")
        }
        return ExportPlan(
            location: asset.location, origin: asset.origin, destination: destination,
            output: .segment(planID: plan.id, index: spec.index),
            videoStream: videoStream, video: videoRoute, audioStream: audioStream, audio: audioRoute,
            videoWindow: Window(start: spec.videoStart ?? .distantPast, end: spec.videoEnd),
            audioSamples: samples, outputZero: plan.outputZero, audioZeroSample: zeroSample,
            fastStart: false, metadata: [:], codecThreads: codecThreads, notices: notices,
            progressDuration: plan.approximateDuration(of: spec))
    }

    /// What a run says when its window held no video frame that could be decoded, in the terms
    /// of what it was writing: the requested range of a file, or one segment of a job.
    var noDecodableVideo: MediaError {
        switch output {
        case .file:
            MediaError(.decodeFailed, "no video frame of '\(location)' could be decoded in the requested range",
                       isRetryable: false)
        case .segment(_, let index):
            MediaError(.decodeFailed, "segment \(index) of '\(location)' has no decodable video frame in its range; "
                       + "the source may be damaged there", isRetryable: false)
        }
    }

    /// Pass-through needs a container that can hold the source codec.
    private static func checkCopy(_ track: Track, into fileType: OutputFileType) throws {
        if !ContainerSupport.canHold(codecName: track.codecName, in: fileType.muxerName) {
            let kind = track.kind == .video ? "video" : "audio"
            throw SettingsError(field: "copy-\(kind)", value: track.codecName,
                                allowed: "a codec the .\(fileType) container can hold; re-encode with --\(kind)-codec instead")
        }
    }
}
