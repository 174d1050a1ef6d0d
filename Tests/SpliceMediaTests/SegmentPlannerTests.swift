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

    @Test func cutsAtTheKeyframeNearestEachTarget() throws {
        let keys = (0..<35).map { MediaTime(seconds: Int64($0)) }
        let p = try plan(Self.asset(seconds: 35), keyframes: keys)
        #expect(p.segments.map(\.videoStart) == [nil, MediaTime(seconds: 10), MediaTime(seconds: 20), MediaTime(seconds: 30)])
        #expect(p.segments.map(\.videoEnd) == [MediaTime(seconds: 10), MediaTime(seconds: 20), MediaTime(seconds: 30), nil])
        // Keyframes every 3 s: 9 is closer to 10 than 12 is.
        let threes = stride(from: 0, to: 40, by: 3).map { MediaTime(seconds: Int64($0)) }
        let q = try plan(Self.asset(seconds: 40), keyframes: threes)
        #expect(q.segments.compactMap(\.videoEnd) == [9, 18, 27, 36].map { MediaTime(seconds: $0) })
    }

    @Test func sparseKeyframesAreEachACut() throws {
        let keys = seconds([0, 8.333, 16.667, 25, 33.333])
        let p = try plan(Self.asset(seconds: 40), keyframes: keys)
        #expect(p.segments.compactMap(\.videoEnd) == Array(keys.dropFirst()))
    }

    @Test func noSegmentIsShorterThanOneSecondExceptTheLast() throws {
        let keys = seconds([0, 0.4, 0.9, 1.2, 1.8, 2.5, 9.5, 10.2, 10.4])
        let p = try plan(Self.asset(seconds: 11), keyframes: keys, target: 1)
        let bounds = [MediaTime.zero] + p.segments.compactMap(\.videoEnd)
        for (a, b) in zip(bounds, bounds.dropFirst()) { #expect(b - a >= MediaTime(seconds: 1)) }
        #expect(p.segments.count == 4)
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
