import Foundation
import Testing
@testable import SpliceMedia

@Suite("Segment planning")
struct SegmentPlannerTests {
    static func asset(seconds: Int64, video: Bool = true, audioRate: Int? = 48000) -> Asset {
        var tracks: [Track] = []
        if video {
            var track = ResolveTests.videoTrack(width: 640, height: 360)
            track.duration = MediaTime(seconds: seconds)
            tracks.append(track)
        }
        if let rate = audioRate {
            tracks.append(Track(id: 1, kind: .audio, codecName: "aac", codecLongName: "AAC", profile: "LC", timeBase: Rational(1, Int32(rate)),
                                startTime: .zero, duration: MediaTime(seconds: seconds), bitRate: nil, language: nil, isDefault: true,
                                declaredFrameCount: nil, metadata: [:], width: nil, height: nil, sampleAspectRatio: nil, rotation: 0,
                                frameRate: nil, pixelFormat: nil, hasReordering: false, sampleRate: rate, channels: 2,
                                channelLayout: "stereo", sampleFormat: "fltp"))
        }
        return Asset(location: "test.mp4", formatName: "mov,mp4", formatLongName: "MP4", duration: MediaTime(seconds: seconds),
                     origin: .zero, bitRate: nil, metadata: [:], tracks: tracks, preferredVideoTrackID: video ? 0 : nil,
                     preferredAudioTrackID: audioRate == nil ? nil : 1)
    }

    static let aac = AudioFraming(sampleRate: 48000, samplesPerPacket: 1024, priming: 1024, preRollPackets: 2, tailPackets: 2)
    static let opus = AudioFraming(sampleRate: 48000, samplesPerPacket: 960, priming: 312, preRollPackets: 4, tailPackets: 2)

    /// A timeline of `seconds` of 1024-sample packets, stamped exactly (or by `stamp`).
    static func timeline(seconds: Int64, rate: Int = 48000, stamp: (Int64) -> Int64 = { $0 * 1024 }) -> AudioTrackTimeline {
        var t = AudioTrackTimeline(streamIndex: 1, timeBase: Rational(1, Int32(rate)), sampleRate: rate)
        let packets = (seconds * Int64(rate) + 1023) / 1024
        for k in 0..<packets {
            t.append(AudioPacketInfo(stamp: stamp(k), samples: 1024, skipStart: 0, skipEnd: 0, discard: false))
        }
        t.finish()
        return t
    }

    /// `target` nil: the request leaves the length to the default (and the planner may lengthen it).
    private func plan(_ asset: Asset, keyframes: [MediaTime], target: Int64? = 10, framing: AudioFraming? = aac,
                      range: MediaTimeRange? = nil, audioTarget: Int64? = nil, lanes: Int = 1,
                      video: VideoSettings = VideoSettings(codec: .h264), package: PackageRequest? = nil) throws -> SegmentPlan {
        let request = TranscodeRequest(video: asset.videoTrack == nil ? nil : video,
                                       audio: framing == nil ? nil : AudioSettings(codec: .aac), fileType: .mp4, range: range,
                                       segmentDuration: target.map { MediaTime(seconds: $0) }, package: package)
        let tracks = try OutputTracks.resolve(
            OutputTracks.Request(video: request.video.map { .encode($0) } ?? .drop,
                                 audio: request.audio.map { .encode($0) } ?? .drop),
            asset: asset, fileType: .mp4)
        let inputs = tracks.audio.map { track, _ in
            SegmentPlanner.AudioInput(track: track, framing: framing!, timeline: Self.timeline(seconds: asset.duration!.wholeSeconds))
        }
        var planner = SegmentPlanner(targetDuration: request.targetSegmentDuration,
                                     audioTargetDuration: audioTarget.map { MediaTime(seconds: $0) }, lanes: lanes)
        planner.lengthensWarmedSegments = request.segmentDuration == nil
        return try planner.plan(asset: asset, tracks: tracks, keyframes: keyframes, audio: inputs, request: request, metadata: [:])
    }

    private func seconds(_ values: [Double]) -> [MediaTime] {
        values.map { MediaTime(value: Int64(($0 * 1000).rounded()), timescale: 1000) }
    }

    // MARK: - Video

    /// The video segment boundaries of a plan, in asset time (start and end included).
    private func bounds(_ p: SegmentPlan, end: Int64) -> [MediaTime] {
        [MediaTime.zero] + p.videoSegments.compactMap(\.videoEnd) + [MediaTime(seconds: end)]
    }

    @Test func denseKeyframesGiveEqualSegmentsCutAtKeyframes() throws {
        let keys = (0..<35).map { MediaTime(seconds: Int64($0)) }
        let p = try plan(Self.asset(seconds: 35), keyframes: keys)
        // 35 s at a 10 s target: four segments (3.5 rounds up), of 8–9 s each, every cut a keyframe.
        #expect(p.videoSegments.count == 4)
        let b = bounds(p, end: 35)
        for (a, c) in zip(b, b.dropFirst()) {
            #expect(c - a >= MediaTime(seconds: 8) && c - a <= MediaTime(seconds: 9), "\(a)…\(c)")
        }
        #expect(p.videoSegments.compactMap(\.videoEnd).allSatisfy { keys.contains($0) })
        let costs = p.videoSegments.compactMap(\.cost)
        #expect(costs.count == 4 && costs.max()! - costs.min()! <= costs.max()! / 8, "\(costs)")
    }

    @Test func theCountFillsTheLanesAndCutsFallBetweenKeyframesWhereThatBalancesThem() throws {
        // Keyframes every 2 s, 20 s, 5 s target, two lanes: four segments of 5 s (not five of 4 s,
        // which left one lane idle for the last); the cut at 10 s is a keyframe, those at 5 and
        // 15 s are not (the nearest keyframes are a fifth of a segment away) and decode a lead-in.
        let keys = stride(from: 0, to: 20, by: 2).map { MediaTime(seconds: Int64($0)) }
        let p = try plan(Self.asset(seconds: 20), keyframes: keys, target: 5, framing: nil, lanes: 2)
        #expect(p.videoSegments.count == 4)
        let cuts = p.videoSegments.compactMap(\.videoEnd)
        #expect(cuts.contains(MediaTime(seconds: 10)))
        #expect(cuts.filter { !keys.contains($0) }.count == 2)
        // With keyframes every second, the count fills the lanes whatever their number.
        let dense = (0..<30).map { MediaTime(seconds: Int64($0)) }
        for lanes in [1, 2, 3, 8] {
            let q = try plan(Self.asset(seconds: 30), keyframes: dense, target: 4, framing: nil, lanes: lanes)
            #expect(q.videoSegments.count % lanes == 0 && q.videoSegments.count >= 7,
                    "\(lanes) lanes: \(q.videoSegments.count)")
        }
    }

    @Test func withSeveralLanesACutStaysWhereTheWorkIsEqualRatherThanMoveOntoAKeyframe() throws {
        // Keyframes every 2 s, 22 s, an 11 s target. One lane: the cut at 11 s moves onto a keyframe
        // a second away (it saves a lead-in and unbalances nothing). Two lanes: it stays within a
        // hundredth of a segment of where the two cost the same (moving it a second would leave one
        // lane a second of work alone at the end), and decodes its lead-in.
        let keys = stride(from: 0, to: 22, by: 2).map { MediaTime(seconds: Int64($0)) }
        let one = try plan(Self.asset(seconds: 22), keyframes: keys, target: 11, framing: nil, lanes: 1)
        #expect(one.videoSegments.count == 2)
        #expect(one.videoSegments.compactMap(\.videoEnd).allSatisfy { keys.contains($0) })
        let two = try plan(Self.asset(seconds: 22), keyframes: keys, target: 11, framing: nil, lanes: 2)
        #expect(two.videoSegments.count == 2)
        let cut = try #require(two.videoSegments.first?.videoEnd)
        #expect(!keys.contains(cut))
        let costs = two.videoSegments.compactMap(\.cost)
        #expect(costs.count == 2 && abs(costs[0] - costs[1]) <= costs[0] / 100, "\(costs)")
        // (1 + r)·c = (1 + r)·(22 − c) + r·(c − 10) with r = 0.1: c = 23.2 / 2.1 ≈ 11.05 s.
        #expect(cut > MediaTime(value: 10_900, timescale: 1000) && cut < MediaTime(value: 11_200, timescale: 1000), "\(cut)")
    }

    @Test func oneKeyframeStillCutsAndLaterSegmentsAreShorterForTheirLeadIn() throws {
        let p = try plan(Self.asset(seconds: 20), keyframes: [.zero], framing: nil, lanes: 2)
        #expect(p.videoSegments.count == 2)
        let cut = try #require(p.videoSegments[0].videoEnd)
        // (1 + r)·c = (1 + r)·(20 − c) + r·c with r = 0.1: c = 22 / 2.1 ≈ 10.476 s.
        #expect(cut > MediaTime(value: 10_470, timescale: 1000) && cut < MediaTime(value: 10_480, timescale: 1000))
        let costs = p.videoSegments.compactMap(\.cost)
        #expect(abs(costs[0] - costs[1]) <= costs[0] / 1000, "\(costs)")
        // A long one-keyframe file is not cut into its 36 target-length pieces for two lanes: each
        // would decode everything before it. Two segments finish soonest; eight lanes get eight.
        for (lanes, expected) in [(2, 2), (8, 8)] {
            let long = try plan(Self.asset(seconds: 360), keyframes: [.zero], framing: nil, lanes: lanes)
            #expect(long.videoSegments.count == expected, "\(lanes) lanes")
        }
    }

    @Test func bitRateSegmentsAfterTheFirstWarmUpOnTheVideoBeforeThem() throws {
        let keys = (0..<30).map { MediaTime(seconds: Int64($0)) }
        let rate = try plan(Self.asset(seconds: 30), keyframes: keys, framing: nil,
                            video: VideoSettings(codec: .h264, bitrate: 2_000_000))
        #expect(rate.videoSegments.count == 3)
        #expect(rate.videoSegments.map(\.videoWarmUp) == [nil, RateControl.warmUp, RateControl.warmUp])
        // The warm-up is encoded too: it weighs in the segment's cost.
        #expect(rate.videoSegments[1].cost! > rate.videoSegments[0].cost!)
        // Constant quality needs none; under a peak rate it warms up (its buffer model settles as
        // an average rate's control does), and so does an average rate under a peak rate.
        let quality = try plan(Self.asset(seconds: 30), keyframes: keys, framing: nil)
        #expect(quality.videoSegments.allSatisfy { $0.videoWarmUp == nil })
        let cappedQuality = try plan(Self.asset(seconds: 30), keyframes: keys, framing: nil,
                                     video: VideoSettings(codec: .h264, quality: 20, maxBitrate: 3_000_000, bufferSize: 6_000_000))
        #expect(cappedQuality.videoSegments.map(\.videoWarmUp) == [nil, RateControl.warmUp, RateControl.warmUp])
        let peak = try plan(Self.asset(seconds: 30), keyframes: keys, framing: nil,
                            video: VideoSettings(codec: .h264, bitrate: 2_000_000, maxBitrate: 3_000_000, bufferSize: 6_000_000))
        #expect(peak.videoSegments.map(\.videoWarmUp) == [nil, RateControl.warmUp, RateControl.warmUp])
        // A streaming ladder's rungs all have bit rates (the base settings have none): its work
        // segments after the first warm up too, once each however many streaming segments they hold.
        let ladder = try plan(Self.asset(seconds: 30), keyframes: keys, framing: nil, lanes: 2,
                              package: PackageRequest(ladder: [LadderRung(width: 640, height: 360, bitrate: 1_000_000)],
                                                      segmentDuration: MediaTime(seconds: 6)))
        // Five 6 s streaming segments do not share out over two lanes: 12 + 12 + 6 s with 2 s of
        // warm-up for the second and third end after 20 s, five of 6 s after 22 s; four Splice
        // segments of equal work — 9 s, then 7 s each plus its warm-up — after 18 s.
        #expect(ladder.videoSegments.count == 4)
        #expect(ladder.videoSegments.map(\.videoWarmUp) == [nil, RateControl.warmUp, RateControl.warmUp, RateControl.warmUp])
        #expect(bounds(ladder, end: 30) == [0, 9, 16, 23, 30].map { MediaTime(seconds: $0) })
        #expect(Set(ladder.videoSegments.compactMap(\.cost)) == [9_000_000])
    }

    /// Each bit-rate segment after the first encodes a 2 s warm-up: where the length was not
    /// asked for, few lanes get fewer, longer segments (docs/media.md, "Fewer segments where each
    /// warms up").
    @Test func aLengthNotAskedForGrowsWhereEverySegmentWarmsUp() throws {
        let planner = SegmentPlanner(targetDuration: MediaTime(seconds: 10))
        let warm = RateControl.warmUp
        func length(_ seconds: Int64, lanes: Int) -> MediaTime {
            planner.warmedTarget(length: MediaTime(seconds: seconds), warmUp: warm, lanes: lanes)
        }
        // 66 s on two lanes: 2 segments (1 warm-up) against 6 (5): 34 s and 38 s a lane.
        #expect(length(66, lanes: 2) == MediaTime(seconds: 33))
        // 22 s: the target's two segments are already one a lane.
        #expect(length(22, lanes: 2) == MediaTime(seconds: 10))
        // A two-hour film: on one lane or two, the longest segment (60 s); on sixteen, the first
        // whole number of rounds no longer (128 segments); on 1,024 lanes the target (each round
        // of the lanes costs its spread: more, shorter rounds win).
        for lanes in [1, 2] { #expect(length(7200, lanes: lanes) == MediaTime(seconds: 60), "\(lanes) lanes") }
        #expect(length(7200, lanes: 16) == MediaTime(value: 7200 * 1_000_000 / 128, timescale: 1_000_000))
        #expect(length(7200, lanes: 1024) == MediaTime(seconds: 10))
        // 64 lanes: between, a whole number of rounds.
        let farm = length(7200, lanes: 64)
        let count = (7200 * 1_000_000) / farm.converted(to: 1_000_000).value
        #expect(farm > MediaTime(seconds: 10) && farm < MediaTime(seconds: 60) && count % 64 == 0, "\(farm), \(count)")

        let keys = (0..<66).map { MediaTime(seconds: Int64($0)) }
        let bitRate = VideoSettings(codec: .h264, bitrate: 2_000_000)
        let lengthened = try plan(Self.asset(seconds: 66), keyframes: keys, target: nil, framing: nil, lanes: 2, video: bitRate)
        #expect(bounds(lengthened, end: 66) == [0, 34, 66].map { MediaTime(seconds: $0) }, "\(bounds(lengthened, end: 66))")
        #expect(lengthened.videoSegments.map(\.videoWarmUp) == [nil, warm])
        #expect(lengthened.notices.contains { $0.contains("video segments of about 33 s") && $0.contains("--segment-seconds") },
                "\(lengthened.notices)")
        // Asked for, the length is kept; constant quality warms nothing up and keeps the target.
        let asked = try plan(Self.asset(seconds: 66), keyframes: keys, target: 10, framing: nil, lanes: 2, video: bitRate)
        #expect(asked.videoSegments.count == 8 && asked.notices.isEmpty)
        let quality = try plan(Self.asset(seconds: 66), keyframes: keys, target: nil, framing: nil, lanes: 2)
        #expect(quality.videoSegments.count == 8)
        // A ladder (every rung a bit rate) on its 6 s grid: two segments of whole streaming segments.
        let ladder = try plan(Self.asset(seconds: 66), keyframes: keys, target: nil, framing: nil, lanes: 2,
                              package: PackageRequest(ladder: [LadderRung(width: 640, height: 360, bitrate: 1_000_000)],
                                                      segmentDuration: MediaTime(seconds: 6)))
        #expect(ladder.videoSegments.count == 2, "\(bounds(ladder, end: 66))")
        // The request says whether its length was asked for, in JSON by the field's presence.
        let unasked = TranscodeRequest(video: bitRate, audio: nil, fileType: .mp4)
        let json = try JSONEncoder().encode(unasked)
        #expect(!String(decoding: json, as: UTF8.self).contains("segmentDuration"))
        let back = try JSONDecoder().decode(TranscodeRequest.self, from: json)
        #expect(back == unasked && back.segmentDuration == nil && back.targetSegmentDuration == MediaTime(seconds: 10))
        let given = TranscodeRequest(video: bitRate, audio: nil, fileType: .mp4, segmentDuration: MediaTime(seconds: 10))
        #expect(try JSONDecoder().decode(TranscodeRequest.self, from: JSONEncoder().encode(given)).segmentDuration
            == MediaTime(seconds: 10))
    }

    @Test func aStreamingPackageKeepsItsCutsOnTheGridWhereTheLanesShareThemEvenly() throws {
        let keys = stride(from: 0, to: 40, by: 2).map { MediaTime(seconds: Int64($0)) }
        let package = PackageRequest(ladder: [LadderRung(width: 640, height: 360, bitrate: 1_000_000)],
                                     segmentDuration: MediaTime(seconds: 6))
        // 22 s: 12 s, and 10 s with its 2 s warm-up, is even work: cut on the grid.
        let even = try plan(Self.asset(seconds: 22), keyframes: keys, framing: nil, lanes: 2, package: package)
        #expect(bounds(even, end: 22) == [0, 12, 22].map { MediaTime(seconds: $0) })
        // 24 s: 12 s against 12 + 2 s would leave a lane idle 2 s; the first is longer by the
        // warm-up the second encodes, and the cut falls between grid marks.
        let uneven = try plan(Self.asset(seconds: 24), keyframes: keys, framing: nil, lanes: 2, package: package)
        #expect(bounds(uneven, end: 24) == [0, 13, 24].map { MediaTime(seconds: $0) })
        #expect(uneven.videoSegments.compactMap(\.cost) == [13_000_000, 13_000_000])
        // Four lanes on 24 s: one streaming segment each (6 s, then 6 + 2 s) ends after 8 s, 7 %
        // later than four of equal work (7.5 s), so equal work again.
        let four = try plan(Self.asset(seconds: 24), keyframes: keys, framing: nil, lanes: 4, package: package)
        #expect(Set(four.videoSegments.compactMap(\.cost)).count == 1, "\(four.videoSegments.compactMap(\.cost))")
        // One lane: whole streaming segments as before, whatever the remainder.
        let one = try plan(Self.asset(seconds: 24), keyframes: keys, framing: nil, lanes: 1, package: package)
        #expect(bounds(one, end: 24) == [0, 12, 24].map { MediaTime(seconds: $0) })
    }

    @Test func noSegmentIsShorterThanOneSecond() throws {
        let keys = seconds([0, 0.4, 0.9, 1.2, 1.8, 2.5, 9.5, 10.2, 10.4])
        for lanes in [1, 2, 4, 16] {
            let p = try plan(Self.asset(seconds: 11), keyframes: keys, target: 1, lanes: lanes)
            let b = bounds(p, end: 11)
            for (a, c) in zip(b, b.dropFirst()) { #expect(c - a >= MediaTime(seconds: 1), "\(lanes) lanes: \(a)…\(c)") }
        }
    }

    @Test func videoOnlyAssetsHaveNoAudioSegments() throws {
        let p = try plan(Self.asset(seconds: 25, audioRate: nil), keyframes: (0..<25).map { MediaTime(seconds: Int64($0)) },
                         framing: nil)
        #expect(p.segments.count == 3)
        #expect(p.segments.allSatisfy { $0.audio == nil })
        #expect(p.audioTracks.isEmpty)
    }

    // MARK: - Audio

    @Test func audioIsCutOnItsOwnOnThePacketGridWithLongSegments() throws {
        let keys = (0..<300).map { MediaTime(value: Int64($0) * 1001, timescale: 1000) }
        let p = try plan(Self.asset(seconds: 300), keyframes: keys, framing: Self.aac)
        // Five one-minute audio segments beside thirty video segments.
        let audio = p.audioSegments(track: 0).compactMap(\.audio)
        #expect(audio.count == 5)
        #expect(p.videoSegments.count == 30)
        #expect(p.audioTracks.count == 1 && p.audioTracks[0].source == 1 && p.audioTracks[0].framing == Self.aac)
        for (i, range) in audio.enumerated() {
            if i == 0 {
                #expect(range.keepStart == nil && range.encodeStart == 0)
            } else {
                let start = try #require(range.keepStart)
                #expect((start + 1024) % 1024 == 0, "keep start \(start) is off the grid")
                #expect(start == audio[i - 1].keepEnd)
                // Packet D + R of the segment's encoder begins exactly at the cut.
                #expect(range.encodeStart - 1024 + Int64(1 + 2) * 1024 == start)
                // About a minute apart.
                #expect(abs(start - Int64(i) * 60 * 48000) <= 512)
            }
            if i < audio.count - 1 {
                #expect(range.encodeEnd == range.keepEnd.map { $0 + 2 * 1024 })
            } else {
                #expect(range.keepEnd == nil && range.encodeEnd == nil)
            }
            // Every segment starts from a packet at or before the first sample it feeds.
            let anchor = try #require(range.anchor)
            #expect(anchor.position <= range.encodeStart)
            #expect(anchor.stamp == anchor.position)
        }
    }

    @Test func shortAudioSegmentsWhenAskedAndOpusGrid() throws {
        let p = try plan(Self.asset(seconds: 30), keyframes: (0..<30).map { MediaTime(seconds: Int64($0)) },
                         framing: Self.opus, audioTarget: 4)
        let audio = p.audioSegments(track: 0).compactMap(\.audio)
        #expect(audio.count == 8)
        for range in audio.dropFirst() {
            let start = try #require(range.keepStart)
            #expect((start + 312) % 960 == 0)
            #expect(range.encodeStart == max(0, start - Int64(1 + 4) * 960 + 312))
        }
    }

    @Test func audioOnlyAssetsAreCutByTheAudioTarget() throws {
        let p = try plan(Self.asset(seconds: 25, video: false), keyframes: [], audioTarget: 10)
        #expect(p.videoSettings == nil)
        #expect(p.segments.count == 3)
        #expect(p.segments[1].audio?.keepStart == Self.aac.nearestGridPoint(to: 400_000))
    }

    @Test func aRequestedRangeBoundsTheFirstAndLastSegments() throws {
        let keys = (0..<60).map { MediaTime(seconds: Int64($0)) }
        let range = MediaTimeRange(start: MediaTime(value: 55, timescale: 10), duration: MediaTime(seconds: 20))
        let p = try plan(Self.asset(seconds: 60), keyframes: keys, range: range)
        #expect(p.videoSegments.first?.videoStart == range.start)
        #expect(p.videoSegments.last?.videoEnd == range.end)
        #expect(p.outputZero == range.start)
        #expect(p.audioTracks.first?.firstSample == 264_000)
        #expect(p.audioTracks.first?.lead == 0)
        #expect(p.audioSegments(track: 0).last?.audio?.keepEnd == Int64(960_000))
        #expect(p.audioSegments(track: 0).last?.audio?.encodeEnd == Int64(960_000))
        #expect(p.videoSegments.dropFirst().allSatisfy { $0.videoStart! > range.start })
    }

    @Test func aShortAssetIsOneVideoAndOneAudioSegment() throws {
        let p = try plan(Self.asset(seconds: 4), keyframes: seconds([0, 2]))
        #expect(p.segments.count == 2)
        #expect(p.segments[0].videoStart == nil && p.segments[0].videoEnd == nil)
        #expect(p.segments[1].audio?.keepStart == nil && p.segments[1].audio?.keepEnd == nil)
    }

    // MARK: - Travelling

    @Test func plansTravelAsJSONAndWorkOrdersLeaveStitcherFieldsOut() throws {
        var p = try plan(Self.asset(seconds: 35), keyframes: (0..<35).map { MediaTime(seconds: Int64($0)) })
        p.annotations = [TimedAnnotation(time: .zero, duration: MediaTime(seconds: 1), value: "hello")]
        p.chapters = [Chapter(start: .zero, end: MediaTime(seconds: 3), metadata: ["title": "One"])]
        p.segments[1].videoWarmUp = RateControl.warmUp
        let decoded = try JSONDecoder().decode(SegmentPlan.self, from: JSONEncoder().encode(p))
        #expect(decoded == p)
        let slim = String(decoding: try JSONEncoder().encode(p.forWorkers()), as: UTF8.self)
        #expect(!slim.contains("annotations") && !slim.contains("chapters") && slim.contains("audioTracks"))
    }

    @Test func aPlanStoredBeforeMultiTrackOutputsStillDecodes() throws {
        let json = """
            {"id": "p", "source": "/in.mp4", "outputFileType": "mp4", "optimizesForNetworkUse": false, "metadata": {},
             "outputZero": {"value": 0, "timescale": 1}, "targetDuration": {"value": 10, "timescale": 1},
             "segments": [{"index": 0, "audio": {"encodeStart": 0}}]}
            """
        let plan = try JSONDecoder().decode(SegmentPlan.self, from: Data(json.utf8))
        #expect(plan.segments[0].audio?.track == 0 && plan.audioTracks.isEmpty && plan.passThrough.isEmpty)
        // …but names an audio track it does not describe, which validation refuses.
        #expect(throws: MediaError.self) { try plan.validate() }
    }

    @Test func plansFromElsewhereAreCheckedBeforeUse() throws {
        let good = try plan(Self.asset(seconds: 35), keyframes: (0..<35).map { MediaTime(seconds: Int64($0)) })
        try good.validate()
        var badFraming = good
        badFraming.audioTracks[0].framing?.samplesPerPacket = 0
        #expect(throws: MediaError.self) { try badFraming.validate() }
        var farAway = good
        let audioIndex = try #require(good.segments.firstIndex { $0.isAudio })
        farAway.segments[audioIndex].audio?.encodeStart = Int64.max - 10
        #expect(throws: MediaError.self) { try farAway.validate() }
        var badAnchor = good
        badAnchor.segments[audioIndex].audio?.anchor?.position = Int64.min + 1
        #expect(throws: MediaError.self) { try badAnchor.validate() }
        var empty = good
        empty.segments = []
        #expect(throws: MediaError.self) { try empty.validate() }
        var badSettings = good
        badSettings.videoSettings?.width = -4
        #expect(throws: MediaError.self) { try badSettings.validate() }
        var longWarmUp = good
        longWarmUp.segments[1].videoWarmUp = MediaTime(seconds: 3600)
        #expect(throws: MediaError.self) { try longWarmUp.validate() }
        var backwardWarmUp = good
        backwardWarmUp.segments[1].videoWarmUp = MediaTime(seconds: -1)
        #expect(throws: MediaError.self) { try backwardWarmUp.validate() }
        // A time with a zero timescale never decodes (it would divide by zero later).
        let json = #"{"value": 5, "timescale": 0}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(MediaTime.self, from: Data(json.utf8)) }
    }

    @Test func framingArithmetic() {
        #expect(Self.aac.primingPackets == 1 && Self.opus.primingPackets == 1)
        #expect(Self.aac.nearestGridPoint(to: 1500) == 1024)
        #expect(Self.opus.nearestGridPoint(to: 1500) == 1608)
        #expect(Self.aac.encodeStart(forKeepStart: 10240) == 10240 - 3 * 1024 + 1024)
        // Never before the start of the audio: a segment near it encodes from 0, as a single pass does.
        #expect(Self.aac.encodeStart(forKeepStart: 2048) == 0)
        let fdk = AudioFraming(sampleRate: 48000, samplesPerPacket: 1024, priming: 2112, preRollPackets: 2, tailPackets: 1)
        #expect(fdk.primingPackets == 3)
        // pad = D·F − P = 960: the encoder starts 960 samples before its R pre-roll packets.
        #expect(fdk.encodeStart(forKeepStart: 20480) == 20480 - 2 * 1024 - 960)
    }
}

@Suite("Audio placed by samples")
struct AudioTimelineTests {
    private func walk(_ stamps: [Int64?], samples: Int64 = 1024, rate: Int = 48000) -> [Int64] {
        var walker = AudioTimelineWalker(timeBase: Rational(1, Int32(rate)), sampleRate: rate)
        return stamps.map { walker.place(stamp: $0, samples: samples) }
    }

    @Test func jitteryTimestampsAreIgnored() {
        // The phone file: second packet stamped 259 instead of 1024, then steps of 1030 and 1032.
        var stamps: [Int64?] = [0, 259]
        for k in 2..<2000 { stamps.append(259 + Int64(k - 1) * 1031 + Int64(k % 2)) }
        let positions = walk(stamps)
        #expect(positions == (0..<2000).map { Int64($0) * 1024 })
        // Matroska's whole milliseconds (21 or 22 ms per 1024 samples at 48 kHz).
        let ms = (0..<500).map { k -> Int64? in Int64((Double(k) * 1024 / 48).rounded()) }
        var walker = AudioTimelineWalker(timeBase: Rational(1, 1000), sampleRate: 48000)
        let mkv = ms.map { walker.place(stamp: $0, samples: 1024) }
        #expect(mkv == (0..<500).map { Int64($0) * 1024 })
    }

    @Test func aRealGapIsSilenceAndARealOverlapIsDropped() {
        // 200 ms missing after packet 10: positions jump by it; 100 ms is still jitter.
        var stamps = (0..<20).map { Int64($0) * 1024 }
        for k in 11..<20 { stamps[k] += 9600 }
        #expect(walk(stamps)[11] == 11 * 1024 + 9600)
        var small = (0..<20).map { Int64($0) * 1024 }
        for k in 11..<20 { small[k] += 4800 }
        #expect(walk(small)[11] == 11 * 1024)
        var back = (0..<20).map { Int64($0) * 1024 }
        for k in 11..<20 { back[k] -= 9600 }
        #expect(walk(back)[11] == 11 * 1024 - 9600)
    }

    @Test func packetsWithoutTimestampsFollowOn() {
        #expect(walk([0, nil, nil, 3072]) == [0, 1024, 2048, 3072])
    }

    @Test func theTimelineMapsTimesAndAnchorsThroughTheJitter() {
        // The first packet is priming the container drops (an MP4 edit list).
        var t = AudioTrackTimeline(streamIndex: 1, timeBase: Rational(1, 48000), sampleRate: 48000)
        t.append(AudioPacketInfo(stamp: -1024, samples: 1024, skipStart: 0, skipEnd: 0, discard: true))
        t.append(AudioPacketInfo(stamp: 0, samples: 1024, skipStart: 0, skipEnd: 0, discard: false))
        t.append(AudioPacketInfo(stamp: 259, samples: 1024, skipStart: 0, skipEnd: 0, discard: false))
        for k in 3..<100 {
            t.append(AudioPacketInfo(stamp: 259 + Int64(k - 2) * 1031, samples: 1024, skipStart: 0, skipEnd: 0, discard: false))
        }
        t.finish()
        #expect(t.length == 99 * 1024)
        #expect(t.startTime == .zero)
        // 0.5 s into the track by its stamps: through packet k stamped at or before it.
        let k = 2 + (24000 - 259) / 1031
        let stamp = 259 + Int64(k - 2) * 1031
        #expect(t.position(at: MediaTime(value: 24000, timescale: 48000)) == Int64(k - 1) * 1024 + (24000 - stamp))
        let anchor = t.anchor(atOrBefore: 50 * 1024, back: 1)
        #expect(anchor == AudioAnchor(stamp: 259 + 48 * 1031, position: 49 * 1024, samples: 1024))
    }

    @Test func opusPacketsAreSizedFromTheirTOC() {
        func size(_ bytes: [UInt8]) -> Int64? { bytes.withUnsafeBufferPointer { AudioPacketSizer.opusSamples($0) } }
        #expect(size([0xF8]) == 960)          // CELT FB 20 ms, one frame
        #expect(size([0xF9]) == 1920)         // two frames
        #expect(size([0xFB, 0x03]) == 2880)   // code 3, three frames
        #expect(size([0x08]) == 960)          // SILK NB 20 ms
        #expect(size([0x18]) == 2880)         // SILK NB 60 ms
        #expect(size([0xE0]) == 120)          // CELT 2.5 ms
    }
}

@Suite("Track selection and annotations")
struct TrackSelectionTests {
    @Test func audioTrackSelectionsParse() {
        #expect(AudioTrackSelection(parsing: "all") == .all)
        #expect(AudioTrackSelection(parsing: "NONE") == AudioTrackSelection.none)
        #expect(AudioTrackSelection(parsing: "1,3") == .tracks([1, 3]))
        #expect(AudioTrackSelection(parsing: "eng,FRA") == .languages(["eng", "fra"]))
        for bad in ["", "1,", "1,eng", "-1", "english!"] { #expect(AudioTrackSelection(parsing: bad) == nil, "\(bad)") }
        #expect(AudioTrackSelection.tracks([2, 1]).description == "2,1")
    }

    @Test func annotationsReadSecondsAsWrittenAndRoundTrip() throws {
        let json = #"[{"time": 0.1, "duration": "1/3", "value": "a"}, {"time": "00:00:02.5", "duration": 1, "value": "b"},"#
            + #" {"time": {"value": 7, "timescale": 2}, "duration": 0.25, "value": "c"}]"#
        let list = try JSONDecoder().decode([TimedAnnotation].self, from: Data(json.utf8))
        #expect(list[0].time == MediaTime(value: 1, timescale: 10))
        #expect(list[0].duration == MediaTime(value: 1, timescale: 3))
        #expect(list[1].time == MediaTime(value: 5, timescale: 2))
        #expect(list[2].time == MediaTime(value: 7, timescale: 2))
        #expect(try JSONDecoder().decode([TimedAnnotation].self, from: JSONEncoder().encode(list)) == list)
        #expect(throws: SettingsError.self) {
            try TimedAnnotation.validate([TimedAnnotation(time: .zero, duration: .zero, value: "x")])
        }
    }

    @Test func annotationsBecomeContiguousBoxedSamples() throws {
        let list = [TimedAnnotation(time: MediaTime(seconds: 1), duration: MediaTime(seconds: 2), value: "hi"),
                    TimedAnnotation(time: MediaTime(seconds: 4), duration: MediaTime(seconds: 1), value: "yo")]
        let track = TimedAnnotation.track(list)
        #expect(track.timescale == 1000)
        let samples = track.contiguousSamples
        #expect(samples.map(\.time) == [0, 1000, 3000, 4000])
        #expect(samples.map(\.duration) == [1000, 2000, 1000, 1000])
        #expect(samples.map(\.data.count) == [0, 10, 0, 10])
        #expect(Array(samples[1].data) == [0, 0, 0, 10, 0, 0, 0, 1] + Array("hi".utf8))
        let entry = TimedAnnotation.sampleEntry
        #expect(String(decoding: entry[4..<8], as: UTF8.self) == "mebx")
        #expect(entry.range(of: Data("mdta\(TimedAnnotation.key)".utf8)) != nil)
    }
}

@Suite("The transcode request")
struct TranscodeRequestTests {
    @Test func theNewFieldsTravelAndOldRequestsStillDecode() throws {
        let request = TranscodeRequest(
            video: nil, audio: AudioSettings(codec: .aac), fileType: .mov, segmentDuration: MediaTime(seconds: 4),
            audioTracks: .languages(["eng"]), copiesVideo: true, subtitles: .none, dataTracks: .copy,
            annotations: [TimedAnnotation(time: MediaTime(value: 1, timescale: 3), duration: MediaTime(seconds: 1), value: "x")],
            audioSegmentDuration: MediaTime(seconds: 30))
        try request.validate()
        #expect(try JSONDecoder().decode(TranscodeRequest.self, from: JSONEncoder().encode(request)) == request)
        let old = #"{"fileType": "mp4", "optimizesForNetworkUse": false, "metadata": {}, "segmentDuration": {"value": 10, "timescale": 1},"#
            + #" "video": {"codec": "h264"}}"#
        let decoded = try JSONDecoder().decode(TranscodeRequest.self, from: Data(old.utf8))
        #expect(decoded.audioTracks == .all && !decoded.copiesVideo && decoded.subtitles == .copy && decoded.annotations.isEmpty)
    }

    @Test func copyingEverythingOrAnnotatingMatroskaIsRefused() {
        let both = TranscodeRequest(video: nil, audio: nil, fileType: .mp4, copiesVideo: true, copiesAudio: true)
        #expect(throws: SettingsError.self) { try both.validate() }
        let mkv = TranscodeRequest(video: VideoSettings(codec: .h264), audio: nil, fileType: .mkv,
                                   annotations: [TimedAnnotation(time: .zero, duration: MediaTime(seconds: 1), value: "x")])
        #expect((try? mkv.validate()) == nil)
        let copyWithSettings = TranscodeRequest(video: VideoSettings(codec: .h264), audio: nil, fileType: .mp4, copiesVideo: true)
        #expect(throws: SettingsError.self) { try copyWithSettings.validate() }
    }
}

@Suite("HDR settings")
struct HDRSettingsTests {
    static func hdrTrack(depth: Int = 10, transfer: String = "smpte2084") -> Track {
        var t = ResolveTests.videoTrack(width: 320, height: 240)
        t.pixelFormat = depth > 8 ? "yuv420p10le" : "yuv420p"
        t.bitDepth = depth
        t.colorPrimaries = "bt2020"
        t.colorTransfer = transfer
        t.colorSpace = "bt2020nc"
        t.hdr = HDRMetadata(masteringDisplay: .init(red: [Rational(17, 25), Rational(8, 25)], green: [Rational(53, 200), Rational(69, 100)],
                                                    blue: [Rational(3, 20), Rational(3, 50)], whitePoint: [Rational(3127, 10000), Rational(329, 1000)],
                                                    minLuminance: Rational(1, 10000), maxLuminance: Rational(1000, 1)),
                            contentLightLevel: .init(maxContent: 1000, maxFrameAverage: 400))
        return t
    }

    private func resolve(_ s: VideoSettings, _ t: Track) throws -> VideoEncoding {
        var notices: [String] = []
        return try VideoEncoding.resolve(s, source: t, fileType: .mp4, threads: 1, notices: &notices)
    }

    @Test func tenBitStaysTenBitWithItsMetadata() throws {
        let hevc = try resolve(VideoSettings(codec: .hevc), Self.hdrTrack())
        #expect(hevc.pixelFormat == "yuv420p10le")
        let x265 = try #require(hevc.options["x265-params"])
        #expect(x265.contains("hdr10=1") && x265.contains("max-cll=1000,400"))
        #expect(x265.contains("master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)"))
        let h264 = try resolve(VideoSettings(codec: .h264), Self.hdrTrack())
        #expect(h264.pixelFormat == "yuv420p10le" && h264.options["x264-params"]?.contains("cll=1000,400") == true)
        #expect(h264.hdr == Self.hdrTrack().hdr && h264.colorTransfer != nil)
        #expect(HDRSettingsTests.hdrTrack().hdr?.masteringDisplay?.svtParameter
                == "G(0.2650,0.6900)B(0.1500,0.0600)R(0.6800,0.3200)WP(0.3127,0.3290)L(1000.0000,0.0001)")
    }

    @Test func eightBitHDRIsRefusedUnlessToneMapped() throws {
        #expect(throws: SettingsError.self) { try resolve(VideoSettings(codec: .h264, pixelFormat: "yuv420p"), Self.hdrTrack()) }
        #expect(throws: SettingsError.self) { try resolve(VideoSettings(codec: .h264, pixelFormat: "yuv420p"), Self.hdrTrack(transfer: "arib-std-b67")) }
        let sdr = try resolve(VideoSettings(codec: .h264, toneMap: true), Self.hdrTrack())
        #expect(sdr.pixelFormat == "yuv420p" && sdr.hdr == nil && sdr.toneMap?.peak == 1000)
        #expect(sdr.options["x264-params"] == nil)
        // A 10-bit SDR source may go to 8 bits.
        let plain = try resolve(VideoSettings(codec: .h264, pixelFormat: "yuv420p"), Self.hdrTrack(transfer: "bt709"))
        #expect(plain.pixelFormat == "yuv420p" && plain.hdr == nil)
    }
}

@Suite("Segment planning at scale")
struct SegmentPlanningScaleTests {
    @Test func aTenHourFilePlansQuickly() throws {
        let keys = stride(from: 0, to: 36_000, by: 2).map { MediaTime(seconds: Int64($0)) }
        let asset = SegmentPlannerTests.asset(seconds: 36_000, audioRate: nil)
        let request = TranscodeRequest(video: VideoSettings(codec: .h264), audio: nil, fileType: .mp4,
                                       segmentDuration: MediaTime(seconds: 10))
        let tracks = try OutputTracks.resolve(OutputTracks.Request(video: .encode(VideoSettings(codec: .h264)), audio: .drop),
                                              asset: asset, fileType: .mp4)
        let clock = ContinuousClock()
        let started = clock.now
        let p = try SegmentPlanner(targetDuration: MediaTime(seconds: 10), lanes: 16).plan(
            asset: asset, tracks: tracks, keyframes: keys, audio: [], request: request, metadata: [:])
        print("planned \(p.videoSegments.count) segments of a 10 h file in \(clock.now - started)")
        #expect(p.videoSegments.count == 3600)
    }
}
