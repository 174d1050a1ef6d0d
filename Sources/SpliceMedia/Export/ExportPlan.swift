import Foundation

/// Everything one pipeline run needs, resolved and checked before any file is touched.
/// Built by ``ExportSession`` for whole-asset or time-range exports, and by the segment exporter
/// for one planned segment (a video range, or one audio track's sample range).
struct ExportPlan: Sendable {
    enum Request<Settings: Sendable>: Sendable {
        case encode(Settings)
        case copy
        case drop
    }

    typealias VideoRoute = OutputTracks.VideoRoute

    enum AudioRoute: Sendable {
        case encode(AudioEncoding, AudioPlacement)
        case copy
    }

    /// One output audio track.
    struct AudioTrack: Sendable {
        var stream: Int
        var route: AudioRoute
    }

    /// A span of asset time; `end == nil` runs to the end of the track.
    struct Window: Sendable, Hashable {
        var start: MediaTime
        var end: MediaTime?
        func contains(_ t: MediaTime) -> Bool { t >= start && (end.map { t < $0 } ?? true) }
    }

    /// What the run writes.
    enum Output: Sendable {
        /// A user-facing file through an FFmpeg muxer; `replacing` lets it replace a file that is
        /// at the destination when it finishes.
        case file(muxerName: String, isQuickTime: Bool, replacing: Bool)
        /// A Splice segment file (see ``SegmentFile``).
        case segment(planID: String, index: Int)
        /// Nothing: a quality target's probe encodes (``Probe``) are measured, then thrown away.
        case discard
    }

    /// A quality target's probe encodes of one segment (``TargetQualityEncode``): the frames of
    /// ``chunks`` only, each chunk starting with an IDR picture, encoded once per CRF in ``crfs``
    /// from the same decoded pictures (one rendition each), measured and discarded.
    struct Probe: Sendable {
        var crfs: [Double]
        /// Asset-time spans inside the segment's window, in order.
        var chunks: [Window]
    }

    var location: String
    /// Container clock value of asset time zero.
    var origin: MediaTime
    var destination: String
    var output: Output

    var videoStream: Int?
    var video: VideoRoute?
    var audio: [AudioTrack] = []
    /// Subtitle tracks copied or converted (files only).
    var subtitles: [OutputTracks.Subtitle] = []
    /// Data tracks FFmpeg copies (files only).
    var data: [Int] = []
    /// Timed-metadata tracks written after FFmpeg is done (QuickTime files only).
    var timedMetadata: [Int] = []
    var annotations: [TimedAnnotation] = []
    /// Chapters in output time.
    var chapters: [Chapter] = []
    /// The timecode of output time zero, on the video stream.
    var timecode: String?
    /// HDR10 metadata for the output video stream's container boxes.
    var videoHDR: HDRMetadata?

    /// Video frames presented in this window are written; copied tracks are cut to it.
    var videoWindow: Window
    /// The video window's end while it may still move forward (``SegmentEnd``); nil: fixed.
    var movableEnd: SegmentEnd?
    /// Where helper threads of the run (a ladder's rung encoders) add their CPU time; nil: not counted.
    var helperCPU: ThreadCPUTally?
    /// Whether several renditions encode on threads of their own (``RenditionThread``) where the
    /// output allows it.
    var rungsSideBySide = true
    /// Rate-control warm-up (``RateControl/warmUp``): frames presented this long before the window
    /// are encoded and their packets dropped; the window's first frame is then a forced IDR.
    var videoWarmUp: MediaTime = .zero
    /// The asset time that becomes output time zero.
    var outputZero: MediaTime

    var fastStart: Bool
    var metadata: [String: String]
    var muxerOptions: [String: String] = [:]
    var codecThreads: Int
    /// Extra private encoder options (the segment exporter closes GOPs this way; a quality target
    /// sets the segment's CRF this way).
    var extraVideoOptions: [String: String] = [:]
    /// Whether the (first) video rendition's pictures are measured against the pictures encoded
    /// (``QualityMeter``): `--verify` and quality targets.
    var measuresQuality = false
    /// Probe encodes instead of the segment's own (with ``Output/discard``).
    var probe: Probe?
    /// Further renditions of the video, each encoded from the same decoded frames (a streaming
    /// ladder's rungs after the first, which is ``video``).
    var ladder: [VideoEncoding] = []
    /// An IDR picture is forced at the first frame at or after every multiple of this (output
    /// time): the streaming segment grid.
    var keyframeGrid: MediaTime?
    var notices: [String]
    /// The span progress is measured against.
    var progressDuration: MediaTime?
    /// A source excerpt to read instead of `location` (``SourceExcerpt``); `location` still names
    /// the source in messages.
    var excerpt: String? = nil

    var audioStreams: [Int] { audio.map(\.stream) }
    /// Subtitle, data and timed-metadata streams: they ride along with audio and video.
    var cueStreams: [Int] { subtitles.map(\.track.id) + data + timedMetadata }
    /// Every stream a run reads (the demuxer discards the rest).
    var streamsRead: Set<Int> {
        var streams = Set(audioStreams + cueStreams)
        if let videoStream { streams.insert(videoStream) }
        return streams
    }

    /// Resolves an export of `asset` (all of it, or `timeRange`) into a plan. Reads the source's
    /// index (timed-metadata descriptions, and for a range the audio packets): call on a blocking thread.
    static func make(asset: Asset, destination: String, fileType requested: OutputFileType?, tracks request: OutputTracks.Request,
                     timeRange: MediaTimeRange?, fastStart: Bool, metadata: [String: String],
                     annotations: [TimedAnnotation], codecThreads: Int, replacing: Bool) throws -> ExportPlan {
        let ext = URL(fileURLWithPath: destination).pathExtension
        guard let fileType = requested ?? OutputFileType(pathExtension: ext) else {
            throw SettingsError(field: "output", value: destination,
                                allowed: "a file ending in .mp4, .mov, .mkv or .webm (or give the container explicitly)")
        }
        if !annotations.isEmpty && !fileType.isQuickTime {
            throw SettingsError(field: "annotations", value: "\(annotations.count) annotations",
                                allowed: "written to an .mp4 or .mov output (a .\(fileType) file has no timed-metadata tracks)")
        }
        try TimedAnnotation.validate(annotations)
        let tracks = try OutputTracks.resolve(request, asset: asset, fileType: fileType)
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
        let start = timeRange?.start ?? .zero
        let window = Window(start: start, end: timeRange?.end)

        // Audio placed by the rule: from the track's first packet for a whole export, through a
        // scan of the audio packets when a range starts or ends inside the track.
        var audio: [AudioTrack] = []
        let encoded = tracks.audio.filter { if case .encode = $0.route { return true } else { return false } }.map(\.track)
        let scan = timeRange != nil && !encoded.isEmpty
            ? try MediaScan.scan(location: asset.location, origin: asset.origin, video: nil, audio: encoded.map(\.id)) : nil
        for (track, route) in tracks.audio {
            switch route {
            case .copy:
                audio.append(AudioTrack(stream: track.id, route: .copy))
            case .encode(let encoding):
                let placement: AudioPlacement
                if let timeline = scan?.audio[track.id] {
                    placement = AudioPlacement.forRange(timeline: timeline, origin: asset.origin, zero: start,
                                                        end: timeRange?.end, outputRate: encoding.sampleRate)
                } else {
                    placement = AudioPlacement(anchor: nil, firstSample: 0, lead: nil, encodeStart: 0, encodeEnd: nil)
                }
                audio.append(AudioTrack(stream: track.id, route: .encode(encoding, placement)))
            }
        }
        var timecode = tracks.timecode
        if let tc = timecode, start > .zero {
            timecode = OutputTracks.timecode(tc, advancedBy: start, rate: tracks.video?.track.frameRate)
        }
        var hdr: HDRMetadata?
        if case .encode(let enc)? = tracks.video?.route { hdr = enc.hdr }
        return ExportPlan(
            location: asset.location, origin: asset.origin, destination: destination,
            output: .file(muxerName: fileType.muxerName, isQuickTime: fileType.isQuickTime, replacing: replacing),
            videoStream: tracks.video?.track.id, video: tracks.video?.route, audio: audio, subtitles: tracks.subtitles,
            data: tracks.data.map(\.id), timedMetadata: tracks.timedMetadata.map(\.id), annotations: annotations,
            chapters: Chapter.retimed(asset.chapters, zero: start, end: window.end), timecode: timecode, videoHDR: hdr,
            videoWindow: window, outputZero: start, fastStart: fastStart, metadata: metadata, codecThreads: codecThreads,
            notices: tracks.notices, progressDuration: timeRange?.duration ?? asset.duration)
    }

    /// The plan for one segment of a ``SegmentPlan``: encode only, exact windows, written to a
    /// segment file. A video segment carries video only; an audio segment one audio track.
    static func segment(_ plan: SegmentPlan, spec: SegmentSpec, asset: Asset, destination: String,
                        codecThreads: Int) throws -> ExportPlan {
        var notices: [String] = []
        var videoRoute: VideoRoute?, videoStream: Int?
        var audio: [AudioTrack] = []
        var ladder: [VideoEncoding] = []
        if let audioRange = spec.audio {
            guard let settings = plan.audioSettings, plan.audioTracks.indices.contains(audioRange.track),
                  let framing = plan.audioTracks[audioRange.track].framing else {
                throw MediaError(.invalidSettings, "segment \(spec.index) of plan \(plan.id) names no encoded audio track")
            }
            let planned = plan.audioTracks[audioRange.track]
            guard let track = asset.track(planned.source), track.kind == .audio else {
                throw MediaError(.noUsableTrack, "'\(asset.location)' has no audio track #\(planned.source)")
            }
            let encoding = try AudioEncoding.resolve(settings, source: track, fileType: plan.outputFileType)
            guard encoding.sampleRate == framing.sampleRate else {
                throw MediaError(.invalidSettings, "'\(asset.location)' track #\(planned.source) changed since plan \(plan.id) was made")
            }
            let placement = AudioPlacement(anchor: audioRange.anchor, firstSample: planned.firstSample, lead: planned.lead,
                                           encodeStart: audioRange.encodeStart, encodeEnd: audioRange.encodeEnd)
            audio.append(AudioTrack(stream: track.id, route: .encode(encoding, placement)))
        } else if let settings = plan.videoSettings {
            guard let track = asset.videoTrack else {
                throw MediaError(.noUsableTrack, "'\(asset.location)' has no video track")
            }
            let start = spec.videoStart ?? plan.outputZero
            let length = (spec.videoEnd ?? plan.outputEnd ?? plan.assetDuration).map { $0 - start } ?? plan.targetDuration
            videoRoute = .encode(try VideoEncoding.resolve(settings, source: track, fileType: plan.outputFileType,
                                                           threads: codecThreads, closedGOP: true, segmentLength: length,
                                                           notices: &notices))
            videoStream = track.id
            for rung in plan.package?.renditions.dropFirst() ?? [] {
                ladder.append(try VideoEncoding.resolve(rung, source: track, fileType: plan.outputFileType,
                                                        threads: codecThreads, closedGOP: true, segmentLength: length,
                                                        notices: &notices))
            }
        }
        guard videoRoute != nil || !audio.isEmpty else {
            throw MediaError(.noUsableTrack, "segment \(spec.index) of '\(asset.location)' has nothing to encode")
        }
        var segmentPlan = ExportPlan(
            location: asset.location, origin: asset.origin, destination: destination,
            output: .segment(planID: plan.id, index: spec.index),
            videoStream: videoStream, video: videoRoute, audio: audio,
            videoWindow: Window(start: spec.videoStart ?? .distantPast, end: spec.videoEnd),
            outputZero: plan.outputZero, fastStart: false, metadata: [:], codecThreads: codecThreads, notices: notices,
            progressDuration: plan.approximateDuration(of: spec))
        if videoRoute != nil, let warmUp = spec.videoWarmUp { segmentPlan.videoWarmUp = warmUp }
        if let package = plan.package, videoRoute != nil {
            segmentPlan.ladder = ladder
            segmentPlan.keyframeGrid = package.segmentDuration
            // x264 makes a forced I picture an IDR only when asked.
            segmentPlan.extraVideoOptions["forced-idr"] = "1"
        }
        return segmentPlan
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
        case .discard:
            MediaError(.decodeFailed, "no video frame of '\(location)' could be decoded where a quality target "
                       + "probes it; the source may be damaged there", isRetryable: false)
        }
    }
}

/// Where one audio run's samples come from and go (see ``AudioTimeline`` for positions).
///
/// Output sample `y` is source position `firstSample + y·inputRate/outputRate` and is written
/// with pts `lead + y` (the encoder's priming before it). The run encodes output samples
/// `[encodeStart, encodeEnd)`.
struct AudioPlacement: Sendable, Hashable {
    /// The packet to start the rule from; nil: the track's first packet.
    var anchor: AudioAnchor?
    /// The source position (samples from the track's first) that becomes output sample 0.
    var firstSample: Int64
    /// Output samples between output time zero and output sample 0 (audio that starts after the
    /// video or the range); nil: taken from the track's first packet's time.
    var lead: Int64?
    var encodeStart: Int64
    /// nil: to the end of the track.
    var encodeEnd: Int64?

    /// The source position where feeding the resampler may stop (nil: the end of the track): past
    /// `encodeEnd` by a margin when resampling, so the resampler's filter has real samples to look at.
    func sourceLimit(inputRate: Int, outputRate: Int) -> Int64? {
        guard let encodeEnd else { return nil }
        let margin = inputRate == outputRate ? 0 : Int64(max(2048, inputRate / 20))
        return firstSample + MediaTime.rescale(encodeEnd, multiplier: Int64(inputRate), divisor: Int64(outputRate),
                                               rounding: .up) + margin
    }

    /// The placement of a whole range `[zero, end)` (asset time) of a scanned track.
    static func forRange(timeline: AudioTrackTimeline, origin: MediaTime, zero: MediaTime, end: MediaTime?,
                         outputRate: Int) -> AudioPlacement {
        let range = AudioPlacement.range(timeline: timeline, origin: origin, zero: zero, end: end, outputRate: outputRate)
        let anchor = timeline.anchor(atOrBefore: range.firstSample)
        return AudioPlacement(anchor: anchor, firstSample: range.firstSample, lead: range.lead, encodeStart: 0,
                              encodeEnd: range.length)
    }

    /// Where a range of a scanned track starts and how long it is in output samples (nil: to
    /// the end of the track).
    static func range(timeline: AudioTrackTimeline, origin: MediaTime, zero: MediaTime, end: MediaTime?,
                      outputRate: Int) -> (firstSample: Int64, lead: Int64, length: Int64?) {
        let inRate = Int64(timeline.sampleRate), outRate = Int64(outputRate)
        let startPosition = timeline.position(at: zero + origin)
        let firstSample = max(0, startPosition)
        // Audio that starts after output zero keeps its distance through the timestamps.
        let leadTime: MediaTime
        if startPosition < 0, let trackStart = timeline.startTime {
            leadTime = MediaTime.max(.zero, trackStart - origin - zero)
        } else {
            leadTime = .zero
        }
        let lead = leadTime.count(of: MediaTime(value: 1, timescale: Int32(outRate)), rounding: .nearest)
        var length: Int64?
        if let end {
            let endPosition = min(timeline.length, timeline.position(at: end + origin))
            length = max(0, MediaTime.rescale(endPosition - firstSample, multiplier: outRate, divisor: inRate, rounding: .down))
        }
        return (firstSample, lead, length)
    }
}
