import Foundation

/// Cuts an asset into segments.
///
/// **Video** cuts are chosen by ``VideoCuts``: segments of equal work (encoding plus the decoding
/// of each one's lead-in from the keyframe before it), as many as fill the ``lanes`` that encode
/// them evenly, near ``targetDuration`` each, none shorter than ``minimumDuration``, moved onto
/// source keyframes where one is close.
///
/// **Audio** is cut independently, per track, in segments of about ``audioTargetDuration``
/// (longer than video's by default: audio encodes at hundreds of times real time, and FFmpeg's
/// AAC settles its rate control over about ten seconds), on the output packet grid (k·F − P).
/// Each audio segment starts encoding ``AudioFraming/preRollPackets`` before its cut (12 s for
/// AAC) and hands the stitcher whole packets that continue the previous segment's exactly.
/// Positions are samples by ``AudioTimeline``'s rule; each segment gets the ``AudioAnchor`` it
/// starts from.
///
/// Copied tracks, subtitles and data are not segmented: the stitcher takes them from the source.
public struct SegmentPlanner: Sendable {
    public var targetDuration: MediaTime
    public var minimumDuration: MediaTime
    /// Length of audio segments; nil: the longer of ``targetDuration`` and 60 s.
    public var audioTargetDuration: MediaTime?
    /// Encoders that run at once (`transcode --jobs`, the cluster's free slots): the video
    /// segment count fills them evenly.
    public var lanes: Int
    /// Whether segments may be longer than ``targetDuration`` where each one after the first
    /// encodes a rate-control warm-up (the length was not asked for): ``warmedTarget(length:warmUp:lanes:)``.
    public var lengthensWarmedSegments = false

    public init(targetDuration: MediaTime = MediaTime(seconds: 10), minimumDuration: MediaTime = MediaTime(seconds: 1),
                audioTargetDuration: MediaTime? = nil, lanes: Int = 1) {
        self.targetDuration = targetDuration
        self.minimumDuration = minimumDuration
        self.audioTargetDuration = audioTargetDuration
        self.lanes = max(1, lanes)
    }

    /// The audio segment length in effect.
    var effectiveAudioTarget: MediaTime { audioTargetDuration ?? MediaTime.max(targetDuration, MediaTime(seconds: 60)) }

    /// Plans `asset` as `request` asks: resolves the tracks, scans the source once without
    /// decoding (keyframes, audio packets), learns each audio encoder's framing, then cuts.
    public func plan(asset: Asset, request: TranscodeRequest, metadata: [String: String]) async throws -> SegmentPlan {
        let planner = self
        return try await BlockingThread.run("splice.plan") {
            let tracksRequest = OutputTracks.Request(
                video: request.video.map { .encode($0) } ?? (request.copiesVideo ? .copy : .drop),
                audio: request.audio.map { .encode($0) } ?? (request.copiesAudio ? .copy : .drop),
                audioTracks: request.audioTracks, subtitles: request.subtitles, dataTracks: request.dataTracks,
                closedGOP: true, codecThreads: 1)
            let tracks = try OutputTracks.resolve(tracksRequest, asset: asset, fileType: request.fileType)
            var encoded: [(track: Track, encoding: AudioEncoding)] = []
            for (track, route) in tracks.audio {
                if case .encode(let encoding) = route { encoded.append((track, encoding)) }
            }
            let scan = try MediaScan.scan(location: asset.location, origin: asset.origin, video: tracks.video?.track.id,
                                          audio: encoded.map(\.track.id))
            var inputs: [AudioInput] = []
            for (track, encoding) in encoded {
                guard let timeline = scan.audio[track.id] else { continue }
                inputs.append(AudioInput(track: track, framing: try encoding.framing(), timeline: timeline))
            }
            return try planner.plan(asset: asset, tracks: tracks, keyframes: scan.keyframes, audio: inputs,
                                    request: request, metadata: metadata, videoTrackEnd: scan.videoEnd)
        }
    }

    /// What planning knows about one encoded audio track.
    struct AudioInput: Sendable {
        var track: Track
        var framing: AudioFraming
        var timeline: AudioTrackTimeline
    }

    /// The pure planning step: no I/O, deterministic but for the plan's id.
    /// `videoTrackEnd`: where the video's packets end, when the container gives the track no
    /// duration (``MediaScan/videoEnd``).
    func plan(asset: Asset, tracks: OutputTracks, keyframes: [MediaTime], audio: [AudioInput], request: TranscodeRequest,
              metadata: [String: String], videoTrackEnd: MediaTime? = nil) throws -> SegmentPlan {
        guard targetDuration >= minimumDuration, minimumDuration > .zero else {
            throw SettingsError(field: "segment-seconds", value: "\(targetDuration)", allowed: "at least \(minimumDuration)")
        }
        var notices = tracks.notices
        var zero = request.range?.start ?? .zero
        var end = request.range?.end
        if let d = asset.duration, zero >= d {
            throw SettingsError(field: "start", value: "\(zero)", allowed: "before the end of '\(asset.location)' (\(d))")
        }
        // Copied video can only begin and end at keyframes: the range widens to them.
        if let video = tracks.video, case .copy = video.route {
            let snappedStart = keyframes.last { $0 <= zero } ?? keyframes.first ?? zero
            if snappedStart != zero {
                notices.append("the output starts at the keyframe at \(snappedStart), not \(zero): copied video cuts at keyframes only")
            }
            zero = snappedStart
            if let e = end {
                let snappedEnd = keyframes.first { $0 >= e }
                if snappedEnd != e {
                    notices.append("the output ends at \(snappedEnd.map { "the keyframe at \($0)" } ?? "the end of the source"), "
                                   + "not \(e): copied video cuts at keyframes only")
                }
                end = snappedEnd
            }
        }

        var package: PlannedPackage?
        if let requested = request.package {
            guard let video = tracks.video, case .encode = video.route, let base = request.video else {
                throw MediaError(.noUsableTrack, "'\(asset.location)' has no video track to make a streaming ladder of")
            }
            package = try PlannedPackage.resolve(requested, base: base, source: video.track)
        }
        var segments: [SegmentSpec] = []
        if let video = tracks.video, case .encode = video.route {
            // A bit-rate segment after the first warms its rate control up on the video before it
            // (``RateControl``), never before the video's first frame; that encoding is part of its cost.
            // A package's rungs are what is encoded (every rung has a bit rate): they decide, not the base.
            let encoded = package?.renditions ?? request.video.map { [$0] } ?? []
            let warmUp = encoded.contains(where: RateControl.warmsUp) ? RateControl.warmUp : nil
            let videoStart = video.track.startTime ?? .zero
            var cutter = self
            if let warmUp, lengthensWarmedSegments,
               let videoEnd = Self.videoEnd(asset: asset, end: end, scanned: videoTrackEnd) {
                let from = request.range != nil ? zero : videoStart
                let longer = warmedTarget(length: videoEnd - from, warmUp: warmUp, lanes: lanes)
                if longer > targetDuration {
                    cutter.targetDuration = longer
                    let seconds = { (t: MediaTime) in "\(t.converted(to: 1, rounding: .nearest).value) s" }
                    notices.append("video segments of about \(seconds(longer)), not \(seconds(targetDuration)): "
                                   + "each segment after the first encodes a \(seconds(warmUp)) rate-control warm-up, "
                                   + "and on \(lanes) lane\(lanes == 1 ? "" : "s") fewer, longer segments spend less "
                                   + "on them (--segment-seconds keeps a length)")
                }
            }
            let cuts = package.map { cutter.gridCuts(asset: asset, zero: zero, end: end, hasRange: request.range != nil,
                                              grid: $0.segmentDuration, warmUp: warmUp, videoTrackEnd: videoTrackEnd) }
                ?? cutter.videoCuts(asset: asset, keyframes: keyframes, zero: zero, end: end, hasRange: request.range != nil,
                                    warmUp: warmUp, videoTrackEnd: videoTrackEnd)
            // Both count each segment's warm-up in its cost.
            for (start, stop, cost) in cuts {
                var spec = SegmentSpec(index: segments.count, videoStart: start, videoEnd: stop)
                spec.cost = cost
                if let warmUp, let start, start > videoStart { spec.videoWarmUp = MediaTime.min(warmUp, start - videoStart) }
                segments.append(spec)
            }
        }

        var audioTracks: [PlannedAudioTrack] = []
        var passThrough: [PlannedPassThrough] = []
        if let video = tracks.video, case .copy = video.route {
            passThrough.append(PlannedPassThrough(source: video.track.id, kind: .video))
        }
        for (track, route) in tracks.audio {
            switch route {
            case .copy:
                audioTracks.append(PlannedAudioTrack(source: track.id, copies: true, framing: nil,
                                                     description: StreamDescription(track)))
                passThrough.append(PlannedPassThrough(source: track.id, kind: .audio))
            case .encode:
                guard let input = audio.first(where: { $0.track.id == track.id }) else { continue }
                let index = audioTracks.count
                let range = AudioPlacement.range(timeline: input.timeline, origin: asset.origin, zero: zero, end: end,
                                                 outputRate: input.framing.sampleRate)
                audioTracks.append(PlannedAudioTrack(source: track.id, copies: false, framing: input.framing,
                                                     firstSample: range.firstSample, lead: range.lead,
                                                     description: StreamDescription(track)))
                for unit in audioUnits(input, firstSample: range.firstSample, length: range.length) {
                    var spec = SegmentSpec(index: segments.count)
                    spec.audio = AudioSegmentRange(track: index, anchor: unit.anchor, encodeStart: unit.encodeStart,
                                                   encodeEnd: unit.encodeEnd, keepStart: unit.keepStart, keepEnd: unit.keepEnd)
                    // Audio encodes at a few hundred times real time; in the video's units (µs of
                    // encoding) a second of it weighs about a fiftieth of a video second.
                    let samples = (unit.encodeEnd ?? unit.encodeStart + (range.length ?? 0)) - unit.encodeStart
                    spec.cost = max(1, samples * 1_000_000 / Int64(input.framing.sampleRate) / 50)
                    segments.append(spec)
                }
            }
        }
        guard !segments.isEmpty else {
            throw MediaError(.noUsableTrack, "nothing to transcode in '\(asset.location)': no video or audio track to encode")
        }
        for subtitle in tracks.subtitles {
            passThrough.append(PlannedPassThrough(source: subtitle.track.id, kind: .subtitle, convertTo: subtitle.convertTo))
        }
        passThrough += tracks.data.map { PlannedPassThrough(source: $0.id, kind: .data) }
        passThrough += tracks.timedMetadata.map { PlannedPassThrough(source: $0.id, kind: .timedMetadata) }
        if package != nil && (!passThrough.isEmpty || !asset.chapters.isEmpty) {
            notices.append("subtitles, data tracks and chapters are not carried into a streaming package (video and audio renditions only)")
        }
        var timecode = tracks.timecode
        if let tc = timecode, zero > .zero {
            timecode = OutputTracks.timecode(tc, advancedBy: zero, rate: tracks.video?.track.frameRate)
        }
        var hdr: HDRMetadata?
        if let video = tracks.video, case .encode(let encoding) = video.route { hdr = encoding.hdr }
        var plan = SegmentPlan(
            id: UUID().uuidString.lowercased(), source: asset.location, videoSettings: package?.renditions.first ?? request.video,
            audioSettings: audioTracks.contains { !$0.copies } ? request.audio : nil,
            outputFileType: request.fileType, optimizesForNetworkUse: request.optimizesForNetworkUse, metadata: metadata,
            outputZero: zero, outputEnd: end, assetDuration: asset.duration, targetDuration: targetDuration,
            segments: segments, videoTrack: tracks.video?.track.id,
            videoDescription: tracks.video.map { StreamDescription($0.track) }, audioTracks: audioTracks, passThrough: passThrough,
            chapters: Chapter.retimed(asset.chapters, zero: zero, end: end), timecode: timecode, videoHDR: hdr,
            annotations: request.annotations, notices: notices, package: package)
        plan.quality = request.quality
        plan.videoTrackEnd = videoTrackEnd
        return plan
    }

    /// Video segment bounds for a streaming package: whole streaming segments (`grid` long, from
    /// the output's zero), as many per Splice segment as come nearest the target while still
    /// filling the lanes; the rest of the video joins the last segment when it would be shorter
    /// than the minimum. Costs are the lengths and each one's warm-up (no lead-in: every cut gets
    /// an IDR anyway).
    ///
    /// Whole streaming segments do not always share out evenly: 30 s on a 6 s grid is 12 + 12 + 6 s,
    /// and each Splice segment after the first also encodes its rate control's `warmUp` (a ladder's
    /// rungs have bit rates), so two lanes carry 12 + 8 s and 14 s. When the lanes would end more
    /// than 3 % later than with segments of equal work, and one streaming segment per Splice
    /// segment does no better, the video is cut for equal work instead (as many segments as the
    /// target gives, filled up to a multiple of the lanes, none shorter than the minimum; the first
    /// longer by the warm-up the others encode), each cut kept on the grid when one lies within a
    /// hundredth of a segment: a cut between grid marks costs one more IDR picture in its
    /// streaming segment (the grid's own IDRs are forced wherever a segment starts).
    func gridCuts(asset: Asset, zero: MediaTime, end: MediaTime?, hasRange: Bool,
                  grid: MediaTime, warmUp: MediaTime? = nil, videoTrackEnd: MediaTime? = nil) -> [(MediaTime?, MediaTime?, Int64?)] {
        let start = hasRange ? zero : (asset.videoTrack?.startTime ?? .zero)
        let videoEnd = Self.videoEnd(asset: asset, end: end, scanned: videoTrackEnd)
        guard let videoEnd, videoEnd > start else { return [(hasRange ? zero : nil, end, nil)] }
        let gridCount = max(1, (videoEnd - zero).count(of: grid, rounding: .up))
        var perSegment = max(1, targetDuration.count(of: grid, rounding: .nearest))
        while perSegment > 1 && (gridCount + perSegment - 1) / perSegment < Int64(lanes) { perSegment -= 1 }
        let micros = { (t: MediaTime) in max(1, t.converted(to: 1_000_000).value) }
        func onGrid(every units: Int64) -> [MediaTime] {
            var cuts: [MediaTime] = []
            var n = units
            while zero + grid * n < videoEnd {
                let cut = zero + grid * n
                if videoEnd - cut >= minimumDuration { cuts.append(cut) }
                n += units
            }
            return cuts
        }
        // The work of each segment: its length, and the warm-up every one after the first encodes.
        let warm = warmUp.map { micros($0) } ?? 0
        func work(_ cuts: [MediaTime]) -> [Int64] {
            zip([start] + cuts, cuts + [videoEnd]).map { from, to in
                micros(to - from) + (from > start ? min(warm, micros(from - start)) : 0)
            }
        }
        var cuts = onGrid(every: perSegment)
        if lanes > 1 {
            let total = micros(videoEnd - start)
            let atMost = max(1, Int(total / max(1, micros(minimumDuration))))
            let nearest = Int((total + micros(targetDuration) / 2) / micros(targetDuration))
            let count = min(atMost, (max(nearest, lanes) + lanes - 1) / lanes * lanes)
            // Equal work: the first segment `share` long, each later one `share − warm`.
            let share = (total + Int64(count - 1) * warm + Int64(count) - 1) / Int64(count)
            let even = Int64((count + lanes - 1) / lanes) * share
            let ends = { (c: [MediaTime]) in VideoCuts.makespan(of: work(c), lanes: self.lanes) }
            if count > 1, share - warm >= micros(minimumDuration), ends(cuts) * 100 > even * 103 {
                let single = onGrid(every: 1)
                if ends(single) * 100 <= even * 103 {
                    cuts = single
                } else {
                    let tolerance = MediaTime(value: share / 100, timescale: 1_000_000)
                    cuts = (1..<count).map { i in
                        let cut = start + MediaTime(value: share + Int64(i - 1) * (share - warm), timescale: 1_000_000)
                        let mark = zero + grid * max(0, (cut - zero).count(of: grid, rounding: .nearest))
                        return (mark > cut ? mark - cut : cut - mark) <= tolerance && mark > start && mark < videoEnd ? mark : cut
                    }
                }
            }
        }
        let costs = work(cuts)
        return (0...cuts.count).map { i in
            (i == 0 ? (hasRange ? zero : nil) : cuts[i - 1], i == cuts.count ? end : cuts[i], costs[i])
        }
    }

    // MARK: - Video

    /// How much the encoding cost of segments of equal planned work differs (a tenth): the
    /// spread the lanes' ends are planned against. Measured: 6 s segments of the benchmark's real
    /// clip (seven sources, a 960×540 two-rung x264 ladder) cost 6.7 % apart (standard deviation
    /// over mean); a film's scenes differ more.
    static let segmentCostSpreadPerMille: Int64 = 100
    /// The longest segment a lengthened plan makes: a retried segment (a lost worker, a failed
    /// attempt) loses at most this much encoding, and progress moves at least this often.
    static let longestWarmedSegment = MediaTime(seconds: 60)

    /// The segment length to aim for when every segment after the first encodes `warmUp` of
    /// the video before it (a bit rate: ``RateControl``) and the length was not asked for: never
    /// shorter than ``targetDuration``, longer where the warm-ups more segments cost outweigh what
    /// they buy.
    ///
    /// `count` segments of `length` encode `W = length + (count − 1) · warmUp`; on `lanes` lanes
    /// that is `W ÷ lanes` each, and the job waits for the last lane, which ends later than the
    /// others by about the spread of one round's segments (``segmentCostSpreadPerMille`` of
    /// `W ÷ count`; with one lane there is no other to wait for). So
    ///
    ///     wall(count) ≈ W · (1 ÷ lanes + spread · (lanes − 1) ÷ (lanes · count))
    ///
    /// and the count is the multiple of the lanes (the lanes all start and end a round together)
    /// from the lanes up to the target's count with the least, the most segments when they tie,
    /// but none longer than ``longestWarmedSegment``. A 66 s ladder on two lanes: 2 segments
    /// (was 6 with 5 warm-ups: measured 0.967× against 1.078× one FFmpeg's wall); a two-hour film
    /// on two lanes: 60 s segments, 3 % of warm-ups (20 % with 10 s segments); on 1,024 lanes:
    /// the target's 10 s, whose rounds the lanes need.
    func warmedTarget(length: MediaTime, warmUp: MediaTime, lanes: Int) -> MediaTime {
        let micros = { (t: MediaTime) in max(1, t.converted(to: 1_000_000, rounding: .nearest).value) }
        let total = micros(length), warm = micros(warmUp), lanes = Int64(max(1, lanes))
        let targetCount = max(1, (total + micros(targetDuration) / 2) / micros(targetDuration))
        let fewest = max(1, (total + micros(Self.longestWarmedSegment) - 1) / micros(Self.longestWarmedSegment))
        guard targetCount > fewest, targetCount > lanes else { return targetDuration }
        // wall(count) in thousandths of a microsecond: exact enough, and far from overflow
        // (ten hours on ten thousand lanes stays under 10^17).
        func wall(_ count: Int64) -> Int64 {
            let work = total + (count - 1) * warm
            return work * 1000 / lanes + work * Self.segmentCostSpreadPerMille * (lanes - 1) / (lanes * count)
        }
        var best: (wall: Int64, count: Int64)?
        var count = max(lanes, (fewest + lanes - 1) / lanes * lanes)
        while count <= targetCount {
            let w = wall(count)
            if best.map({ w <= $0.wall }) ?? true { best = (w, count) }
            count += lanes
        }
        guard let chosen = best?.count, chosen < targetCount else { return targetDuration }
        return MediaTime.max(targetDuration, MediaTime(value: total / chosen, timescale: 1_000_000))
    }

    /// Where the video to cut ends: the requested range's end (no later than the video's), else
    /// the video track's (its duration, or where its packets were seen to end when the container
    /// gives it none), else the file's.
    static func videoEnd(asset: Asset, end: MediaTime?, scanned: MediaTime?) -> MediaTime? {
        let track = asset.videoTrack.flatMap { t in t.duration.map { (t.startTime ?? .zero) + $0 } } ?? scanned
        guard let end else { return track ?? asset.duration }
        return track.map { MediaTime.min(end, $0) } ?? end
    }

    /// Video segment bounds: `[start, end)` pairs in asset time (nil: open), each with its cost
    /// (``VideoCuts``).
    private func videoCuts(asset: Asset, keyframes: [MediaTime], zero: MediaTime, end: MediaTime?,
                           hasRange: Bool, warmUp: MediaTime?, videoTrackEnd: MediaTime?) -> [(MediaTime?, MediaTime?, Int64?)] {
        let start = hasRange ? zero : (asset.videoTrack?.startTime ?? .zero)
        let videoEnd = Self.videoEnd(asset: asset, end: end, scanned: videoTrackEnd)
        guard let videoEnd, videoEnd > start else { return [(hasRange ? zero : nil, end, nil)] }
        let chosen = VideoCuts(start: start, end: videoEnd, keyframes: keyframes, target: targetDuration,
                               minimum: minimumDuration, lanes: lanes, warmUp: warmUp).choose()
        let cuts = chosen.cuts
        return (0...cuts.count).map { i in
            (i == 0 ? (hasRange ? zero : nil) : cuts[i - 1], i == cuts.count ? end : cuts[i], chosen.costs[i])
        }
    }

    // MARK: - Audio

    struct AudioUnit: Sendable, Hashable {
        var anchor: AudioAnchor?
        var encodeStart: Int64
        var encodeEnd: Int64?
        var keepStart: Int64?
        var keepEnd: Int64?
    }

    /// One track's audio segments: cuts on the packet grid, about ``effectiveAudioTarget`` apart,
    /// spread evenly; `length` nil runs to the end of the track.
    func audioUnits(_ input: AudioInput, firstSample: Int64, length: Int64?) -> [AudioUnit] {
        let framing = input.framing
        let inRate = Int64(input.timeline.sampleRate), outRate = Int64(framing.sampleRate)
        let total = length ?? max(0, MediaTime.rescale(input.timeline.length - firstSample, multiplier: outRate,
                                                      divisor: inRate, rounding: .down))
        let target = max(1, effectiveAudioTarget.count(of: MediaTime(value: 1, timescale: Int32(outRate)), rounding: .nearest))
        let count = max(1, Int((total + target / 2) / target))
        var cuts: [Int64] = []
        let f = Int64(framing.samplesPerPacket)
        for j in 1..<max(1, count) {
            let point = framing.nearestGridPoint(to: total * Int64(j) / Int64(count))
            if point > (cuts.last ?? 0) + f && point < total { cuts.append(point) }
        }
        let g = MediaTime.gcd(inRate, outRate)
        return (0...cuts.count).map { i in
            let last = i == cuts.count
            let keepStart: Int64? = i == 0 ? nil : cuts[i - 1]
            let keepEnd: Int64? = last ? length : cuts[i]
            let encodeStart = keepStart.map { framing.encodeStart(forKeepStart: $0) } ?? 0
            let encodeEnd: Int64? = last ? length : keepEnd.map { min(total, $0 + Int64(framing.tailPackets) * f) }
            // The packet to start placing samples from: at or before the first source sample fed.
            let periodOut = outRate / g, periodIn = inRate / g
            let feedStart = firstSample + floorDiv(encodeStart, periodOut) * periodIn
            let anchor = input.timeline.anchor(atOrBefore: feedStart)
            return AudioUnit(anchor: anchor, encodeStart: encodeStart, encodeEnd: encodeEnd, keepStart: keepStart,
                             keepEnd: keepEnd)
        }
    }
}
