import Foundation

/// Cuts an asset into segments.
///
/// Video cuts are chosen by ``VideoCuts``: segments of equal work (encoding plus the decoding of
/// each one's lead-in from the keyframe before it), as many as fill the `lanes` that encode them
/// evenly, near ``targetDuration`` each, none shorter than ``minimumDuration``, moved onto source
/// keyframes where one is close. Audio is cut independently on the output's packet grid (k·F − P)
/// at the grid point nearest each video cut, so segments carry about the same span of both.
public struct SegmentPlanner: Sendable {
    public var targetDuration: MediaTime
    public var minimumDuration: MediaTime
    /// Encoders that run at once (`transcode --jobs`, the cluster's free slots): the segment
    /// count fills them evenly.
    public var lanes: Int

    public init(targetDuration: MediaTime = MediaTime(seconds: 10), minimumDuration: MediaTime = MediaTime(seconds: 1),
                lanes: Int = 1) {
        self.targetDuration = targetDuration
        self.minimumDuration = minimumDuration
        self.lanes = max(1, lanes)
    }

    /// Plans `asset` (all of it, or `range`) for the given output. Probes keyframes and the audio
    /// encoder's framing, then calls ``plan(asset:keyframes:audioFraming:video:audio:fileType:range:fastStart:metadata:)``.
    public func plan(asset: Asset, video: VideoSettings?, audio: AudioSettings?, fileType: OutputFileType,
                     range: MediaTimeRange? = nil, fastStart: Bool = false, metadata: [String: String] = [:]) async throws -> SegmentPlan {
        let videoTrack = video == nil ? nil : asset.videoTrack
        var keyframes: [MediaTime] = []
        if let videoTrack { keyframes = try await asset.keyframes(of: videoTrack) }
        var framing: AudioFraming?
        if let audio, let track = asset.audioTrack {
            framing = try AudioEncoding.resolve(audio, source: track, fileType: fileType).framing()
        }
        return try plan(asset: asset, keyframes: keyframes, audioFraming: framing, video: video, audio: audio,
                        fileType: fileType, range: range, fastStart: fastStart, metadata: metadata)
    }

    /// The pure planning step: no I/O, deterministic.
    public func plan(asset: Asset, keyframes: [MediaTime], audioFraming: AudioFraming?, video: VideoSettings?,
                     audio: AudioSettings?, fileType: OutputFileType, range: MediaTimeRange? = nil,
                     fastStart: Bool = false, metadata: [String: String] = [:]) throws -> SegmentPlan {
        guard targetDuration >= minimumDuration, minimumDuration > .zero else {
            throw SettingsError(field: "segment-seconds", value: "\(targetDuration)",
                                allowed: "at least \(minimumDuration)")
        }
        let hasVideo = video != nil && asset.videoTrack != nil
        let hasAudio = audio != nil && asset.audioTrack != nil && audioFraming != nil
        guard hasVideo || hasAudio else {
            throw MediaError(.noUsableTrack, "nothing to transcode in '\(asset.location)': no video or audio track selected")
        }
        let zero = range?.start ?? .zero
        let end = range?.end
        // Cut times in asset time.
        var cuts: [MediaTime] = []
        var costs: [Int64]?
        if hasVideo {
            let videoStart = range?.start ?? asset.videoTrack?.startTime ?? .zero
            let videoEnd = end ?? asset.videoTrack.flatMap { t in t.duration.map { (t.startTime ?? .zero) + $0 } } ?? asset.duration
            if let videoEnd, videoEnd > videoStart {
                let chosen = VideoCuts(start: videoStart, end: videoEnd, keyframes: keyframes, target: targetDuration,
                                       minimum: minimumDuration, lanes: lanes).choose()
                cuts = chosen.cuts
                costs = chosen.costs
            }
        } else if let total = end ?? audioEnd(asset) {
            var t = zero + targetDuration
            while total - t >= minimumDuration {
                cuts.append(t)
                t += targetDuration
            }
        }

        // Audio cut points on the packet grid, relative to output zero, one per cut.
        var audioCuts: [Int64] = []
        if hasAudio, let framing = audioFraming {
            let unit = MediaTime(value: 1, timescale: Int32(framing.sampleRate))
            let minimumGap = Int64(framing.primingPackets + framing.preRollPackets + framing.tailPackets + 1)
                * Int64(framing.samplesPerPacket)
            var previous = Int64(0)
            for cut in cuts {
                let point = framing.nearestGridPoint(to: (cut - zero).count(of: unit, rounding: .nearest))
                guard point - previous >= minimumGap else {
                    throw SettingsError(field: "segment-seconds", value: "\(targetDuration)",
                                        allowed: "long enough that audio cuts are \(minimumGap) samples apart")
                }
                audioCuts.append(point)
                previous = point
            }
        }

        var segments: [SegmentSpec] = []
        for i in 0...cuts.count {
            let last = i == cuts.count
            var spec = SegmentSpec(index: i)
            spec.cost = costs?[i]
            if hasVideo {
                spec.videoStart = i == 0 ? range?.start : cuts[i - 1]
                spec.videoEnd = last ? end : cuts[i]
            }
            if hasAudio, let framing = audioFraming {
                let keepStart: Int64? = i == 0 ? nil : audioCuts[i - 1]
                let keepEnd: Int64? = last ? audioEnd(range: range, zero: zero, framing: framing) : audioCuts[i]
                spec.audio = AudioSegmentRange(
                    encodeStart: keepStart.map { framing.encodeStart(forKeepStart: $0) } ?? 0,
                    encodeEnd: last ? keepEnd : keepEnd.map { $0 + Int64(framing.tailPackets * framing.samplesPerPacket) },
                    keepStart: keepStart, keepEnd: keepEnd)
            }
            segments.append(spec)
        }
        return SegmentPlan(
            id: UUID().uuidString.lowercased(), source: asset.location,
            videoSettings: hasVideo ? video : nil, audioSettings: hasAudio ? audio : nil,
            outputFileType: fileType, optimizesForNetworkUse: fastStart, metadata: metadata,
            outputZero: zero, outputEnd: end, assetDuration: asset.duration, audioFraming: hasAudio ? audioFraming : nil,
            targetDuration: targetDuration, segments: segments)
    }

    /// With a requested range the audio ends at its end (in output samples); otherwise with the source.
    private func audioEnd(range: MediaTimeRange?, zero: MediaTime, framing: AudioFraming) -> Int64? {
        guard let end = range?.end else { return nil }
        return (end - zero).count(of: MediaTime(value: 1, timescale: Int32(framing.sampleRate)), rounding: .nearest)
    }

    private func audioEnd(_ asset: Asset) -> MediaTime? {
        if let track = asset.audioTrack, let d = track.duration { return (track.startTime ?? .zero) + d }
        return asset.duration
    }
}
