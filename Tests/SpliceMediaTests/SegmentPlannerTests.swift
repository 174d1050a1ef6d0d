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

    private func plan(_ asset: Asset, keyframes: [MediaTime], target: Int64 = 10, framing: AudioFraming? = aac,
                      range: MediaTimeRange? = nil) throws -> SegmentPlan {
        try SegmentPlanner(targetDuration: MediaTime(seconds: target)).plan(
            asset: asset, keyframes: keyframes, audioFraming: framing,
            video: asset.videoTrack == nil ? nil : VideoSettings(codec: .h264),
            audio: framing == nil ? nil : AudioSettings(codec: .aac), fileType: .mp4, range: range)
    }

    private func seconds(_ values: [Double]) -> [MediaTime] {
        values.map { MediaTime(value: Int64(($0 * 1000).rounded()), timescale: 1000) }
    }

    /// The segment boundaries of a plan, in asset time (start and end included).
    private func bounds(_ p: SegmentPlan, end: Int64) -> [MediaTime] {
        [MediaTime.zero] + p.segments.compactMap(\.videoEnd) + [MediaTime(seconds: end)]
    }

    @Test func denseKeyframesGiveEqualSegmentsCutAtKeyframes() throws {
        let keys = (0..<35).map { MediaTime(seconds: Int64($0)) }
        let p = try plan(Self.asset(seconds: 35), keyframes: keys)
        // 35 s at a 10 s target: four segments (3.5 rounds up), of 8–9 s each, every cut a keyframe.
        #expect(p.segments.count == 4)
        let b = bounds(p, end: 35)
        for (a, c) in zip(b, b.dropFirst()) {
            #expect(c - a >= MediaTime(seconds: 8) && c - a <= MediaTime(seconds: 9), "\(a)…\(c)")
        }
        #expect(p.segments.compactMap(\.videoEnd).allSatisfy { keys.contains($0) })
        let costs = p.segments.compactMap(\.cost)
        #expect(costs.count == 4 && costs.max()! - costs.min()! <= costs.max()! / 8, "\(costs)")
    }

    @Test func theCountFillsTheLanesAndCutsFallBetweenKeyframesWhereThatBalancesThem() throws {
        // Keyframes every 2 s, 20 s, 5 s target, two lanes: four segments of 5 s (not five of 4 s,
        // which left one lane idle for the last); the cut at 10 s is a keyframe, those at 5 and
        // 15 s are not (the nearest keyframes are a fifth of a segment away) and decode a lead-in.
        let keys = stride(from: 0, to: 20, by: 2).map { MediaTime(seconds: Int64($0)) }
        let p = try SegmentPlanner(targetDuration: MediaTime(seconds: 5), lanes: 2).plan(
            asset: Self.asset(seconds: 20), keyframes: keys, audioFraming: nil, video: VideoSettings(codec: .h264),
            audio: nil, fileType: .mp4)
        #expect(p.segments.count == 4)
        let cuts = p.segments.compactMap(\.videoEnd)
        #expect(cuts.contains(MediaTime(seconds: 10)))
        #expect(cuts.filter { !keys.contains($0) }.count == 2)
        // With keyframes every second, the count fills the lanes whatever their number.
        let dense = (0..<30).map { MediaTime(seconds: Int64($0)) }
        for lanes in [1, 2, 3, 8] {
            let q = try SegmentPlanner(targetDuration: MediaTime(seconds: 4), lanes: lanes).plan(
                asset: Self.asset(seconds: 30), keyframes: dense, audioFraming: nil, video: VideoSettings(codec: .h264),
                audio: nil, fileType: .mp4)
            #expect(q.segments.count % lanes == 0 && q.segments.count >= 7, "\(lanes) lanes: \(q.segments.count)")
        }
    }

    @Test func oneKeyframeStillCutsAndLaterSegmentsAreShorterForTheirLeadIn() throws {
        let p = try SegmentPlanner(targetDuration: MediaTime(seconds: 10), lanes: 2).plan(
            asset: Self.asset(seconds: 20), keyframes: [.zero], audioFraming: nil, video: VideoSettings(codec: .h264),
            audio: nil, fileType: .mp4)
        #expect(p.segments.count == 2)
        let cut = try #require(p.segments[0].videoEnd)
        // (1 + r)·c = (1 + r)·(20 − c) + r·c with r = 0.1: c = 22 / 2.1 ≈ 10.476 s.
        #expect(cut > MediaTime(value: 10_470, timescale: 1000) && cut < MediaTime(value: 10_480, timescale: 1000))
        let costs = p.segments.compactMap(\.cost)
        #expect(abs(costs[0] - costs[1]) <= costs[0] / 1000, "\(costs)")
        // A long one-keyframe file is not cut into its 36 target-length pieces for two lanes: each
        // would decode everything before it. Two segments finish soonest; eight lanes get eight.
        for (lanes, expected) in [(2, 2), (8, 8)] {
            let long = try SegmentPlanner(targetDuration: MediaTime(seconds: 10), lanes: lanes).plan(
                asset: Self.asset(seconds: 360), keyframes: [.zero], audioFraming: nil, video: VideoSettings(codec: .h264),
                audio: nil, fileType: .mp4)
            #expect(long.segments.count == expected, "\(lanes) lanes")
        }
    }

    @Test func noSegmentIsShorterThanOneSecond() throws {
        let keys = seconds([0, 0.4, 0.9, 1.2, 1.8, 2.5, 9.5, 10.2, 10.4])
        for lanes in [1, 2, 4, 16] {
            let p = try SegmentPlanner(targetDuration: MediaTime(seconds: 1), lanes: lanes).plan(
                asset: Self.asset(seconds: 11), keyframes: keys, audioFraming: Self.aac, video: VideoSettings(codec: .h264),
                audio: AudioSettings(codec: .aac), fileType: .mp4)
            let b = bounds(p, end: 11)
            for (a, c) in zip(b, b.dropFirst()) { #expect(c - a >= MediaTime(seconds: 1), "\(lanes) lanes: \(a)…\(c)") }
        }
    }

    @Test func audioCutsSitOnTheOutputPacketGrid() throws {
        let keys = (0..<30).map { MediaTime(value: Int64($0) * 1001, timescale: 1000) }
        for framing in [Self.aac, Self.opus] {
            let p = try plan(Self.asset(seconds: 30), keyframes: keys, framing: framing)
            let f = Int64(framing.samplesPerPacket), pr = Int64(framing.priming)
            for (i, spec) in p.segments.enumerated() {
                let audio = try #require(spec.audio)
                if i == 0 {
                    #expect(audio.keepStart == nil && audio.encodeStart == 0)
                } else {
                    let start = try #require(audio.keepStart)
                    #expect((start + pr) % f == 0, "keep start \(start) is off the grid")
                    #expect(start == p.segments[i - 1].audio?.keepEnd)
                    // Packet D + R of the segment's encoder begins exactly at the cut.
                    let firstPacket = audio.encodeStart - pr
                    #expect(firstPacket + Int64(framing.primingPackets + framing.preRollPackets) * f == start)
                    // Within half a packet of the video cut.
                    let videoCut = try #require(spec.videoStart).count(of: MediaTime(value: 1, timescale: 48000), rounding: .nearest)
                    #expect(abs(start - videoCut) <= f / 2)
                }
                if i < p.segments.count - 1 {
                    #expect(audio.encodeEnd == audio.keepEnd.map { $0 + Int64(framing.tailPackets) * f })
                } else {
                    #expect(audio.keepEnd == nil && audio.encodeEnd == nil)
                }
            }
        }
    }

    @Test func audioOnlyAssetsAreCutByTime() throws {
        let p = try plan(Self.asset(seconds: 25, video: false), keyframes: [])
        #expect(p.videoSettings == nil)
        #expect(p.segments.count == 3)
        #expect(p.segments[1].audio?.keepStart == Self.aac.nearestGridPoint(to: 480_000))
    }

    @Test func videoOnlyAssetsHaveNoAudioRanges() throws {
        let p = try plan(Self.asset(seconds: 25, audioRate: nil), keyframes: (0..<25).map { MediaTime(seconds: Int64($0)) }, framing: nil)
        #expect(p.segments.count == 3)
        #expect(p.segments.allSatisfy { $0.audio == nil })
    }

    @Test func aRequestedRangeBoundsTheFirstAndLastSegments() throws {
        let keys = (0..<60).map { MediaTime(seconds: Int64($0)) }
        let range = MediaTimeRange(start: MediaTime(value: 55, timescale: 10), duration: MediaTime(seconds: 20))
        let p = try plan(Self.asset(seconds: 60), keyframes: keys, range: range)
        #expect(p.segments.first?.videoStart == range.start)
        #expect(p.segments.last?.videoEnd == range.end)
        #expect(p.outputZero == range.start)
        #expect(p.segments.last?.audio?.keepEnd == Int64(960_000))
        #expect(p.segments.dropFirst().allSatisfy { $0.videoStart! > range.start })
    }

    @Test func aShortAssetIsOneSegment() throws {
        let p = try plan(Self.asset(seconds: 4), keyframes: seconds([0, 2]))
        #expect(p.segments.count == 1)
        #expect(p.segments[0].videoStart == nil && p.segments[0].videoEnd == nil)
        #expect(p.segments[0].audio?.keepStart == nil && p.segments[0].audio?.keepEnd == nil)
    }

    @Test func plansTravelAsJSON() throws {
        let p = try plan(Self.asset(seconds: 35), keyframes: (0..<35).map { MediaTime(seconds: Int64($0)) })
        let decoded = try JSONDecoder().decode(SegmentPlan.self, from: JSONEncoder().encode(p))
        #expect(decoded == p)
    }

    @Test func plansFromElsewhereAreCheckedBeforeUse() throws {
        let good = try plan(Self.asset(seconds: 35), keyframes: (0..<35).map { MediaTime(seconds: Int64($0)) })
        try good.validate()
        var badFraming = good
        badFraming.audioFraming?.samplesPerPacket = 0
        #expect(throws: MediaError.self) { try badFraming.validate() }
        var farAway = good
        farAway.segments[1].audio?.keepStart = Int64.max - 10
        #expect(throws: MediaError.self) { try farAway.validate() }
        var empty = good
        empty.segments = []
        #expect(throws: MediaError.self) { try empty.validate() }
        var badSettings = good
        badSettings.videoSettings?.width = -4
        #expect(throws: MediaError.self) { try badSettings.validate() }
        // A time with a zero timescale never decodes (it would divide by zero later).
        let json = #"{"value": 5, "timescale": 0}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(MediaTime.self, from: Data(json.utf8)) }
    }

    @Test func framingArithmetic() {
        #expect(Self.aac.primingPackets == 1 && Self.opus.primingPackets == 1)
        #expect(Self.aac.nearestGridPoint(to: 1500) == 1024)
        #expect(Self.opus.nearestGridPoint(to: 1500) == 1608)
        #expect(Self.aac.encodeStart(forKeepStart: 10240) == 10240 - 3 * 1024 + 1024)
        let fdk = AudioFraming(sampleRate: 48000, samplesPerPacket: 1024, priming: 2112, preRollPackets: 2, tailPackets: 1)
        #expect(fdk.primingPackets == 3)
        // pad = D·F − P = 960: the encoder starts 960 samples before its R pre-roll packets.
        #expect(fdk.encodeStart(forKeepStart: 20480) == 20480 - 2 * 1024 - 960)
    }
}

@Suite("Segment planning at scale")
struct SegmentPlanningScaleTests {
    @Test func aTenHourFilePlansQuickly() throws {
        let keys = stride(from: 0, to: 36_000, by: 2).map { MediaTime(seconds: Int64($0)) }
        let clock = ContinuousClock()
        let started = clock.now
        let p = try SegmentPlanner(targetDuration: MediaTime(seconds: 10), lanes: 16).plan(
            asset: SegmentPlannerTests.asset(seconds: 36_000), keyframes: keys, audioFraming: nil,
            video: VideoSettings(codec: .h264), audio: nil, fileType: .mp4)
        print("planned \(p.segments.count) segments of a 10 h file in \(clock.now - started)")
        #expect(p.segments.count == 3600)
    }
}
