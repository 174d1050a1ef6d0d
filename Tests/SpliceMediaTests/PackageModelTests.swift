import Foundation
import Testing
@testable import SpliceMedia

@Suite("Streaming package model: ladder, grid, playlist arithmetic")
struct PackageModelTests {
    @Test("--ladder rungs parse with their capped rates; bad ones are refused naming the flag")
    func rungs() throws {
        let rung = try LadderRung(parsing: "1280x720@3M")
        #expect(rung.width == 1280 && rung.height == 720 && rung.bitrate == 3_000_000)
        #expect(rung.maxBitrate == 3_300_000 && rung.bufferSize == 6_000_000)
        let byHeight = try LadderRung(parsing: "720p@1.5M")
        #expect(byHeight.width == nil && byHeight.height == 720 && byHeight.bitrate == 1_500_000)
        #expect(try LadderRung(parsing: "640x360@800k").bitrate == 800_000)
        for bad in ["1280x720", "abc@3M", "1280x720@0", "1280x@3M", "8x8@1M", "1280x720@3.M"] {
            #expect(throws: SettingsError.self, "\(bad)") { try LadderRung(parsing: bad) }
        }
        #expect(try PackageRequest.parseLadder("auto") == nil)
        #expect(try PackageRequest.parseLadder("1280x720@3M,640x360@1M")?.map(\.height) == [720, 360])
    }

    @Test("auto ladder: the reference rungs at or below the source's height")
    func automatic() {
        #expect(LadderRung.automatic(sourceHeight: 1080).map(\.height) == [1080, 720, 540, 432, 360, 234])
        #expect(LadderRung.automatic(sourceHeight: 720).map(\.height) == [720, 540, 432, 360, 234])
        #expect(LadderRung.automatic(sourceHeight: 600).first?.height == 540)
        #expect(LadderRung.automatic(sourceHeight: 181).map(\.height) == [180])
    }

    @Test("a package takes its sizes and rates from the ladder only, and needs h264")
    func validation() {
        let package = PackageRequest()
        #expect(throws: SettingsError.self) { try package.validate(video: VideoSettings(codec: .h264, quality: 20)) }
        #expect(throws: SettingsError.self) { try package.validate(video: VideoSettings(codec: .hevc)) }
        #expect(throws: SettingsError.self) { try package.validate(video: nil) }
        #expect(throws: SettingsError.self) {
            try PackageRequest(segmentDuration: MediaTime(value: 1, timescale: 2)).validate(video: VideoSettings(codec: .h264))
        }
        #expect(throws: Never.self) { try package.validate(video: VideoSettings(codec: .h264, preset: "fast")) }
    }

    @Test("video is cut on whole streaming segments, fewer per Splice segment when the lanes need them")
    func gridCuts() {
        let asset = SegmentPlannerTests.asset(seconds: 30)
        let seconds = { (cuts: [(MediaTime?, MediaTime?, Int64?)]) in cuts.dropFirst().compactMap { $0.0?.converted(to: 1).value } }
        let grid = MediaTime(seconds: 6)
        var planner = SegmentPlanner(targetDuration: MediaTime(seconds: 10))
        #expect(seconds(planner.gridCuts(asset: asset, zero: .zero, end: nil, hasRange: false, grid: grid)) == [12, 24])
        // Four lanes: five 6 s streaming segments would end after 12 s; four equal Splice segments
        // of 7.5 s end after 7.5 s (each cut between grid marks costs an extra IDR picture).
        planner.lanes = 4
        #expect(planner.gridCuts(asset: asset, zero: .zero, end: nil, hasRange: false, grid: grid).dropFirst().compactMap(\.0)
                == [15, 30, 45].map { MediaTime(value: $0, timescale: 2) })
        // Five lanes: one streaming segment each, on the grid, end as soon as any split can.
        planner.lanes = 5
        #expect(seconds(planner.gridCuts(asset: asset, zero: .zero, end: nil, hasRange: false, grid: grid)) == [6, 12, 18, 24])
        // A remainder under the minimum joins the segment before (its IDR is still forced on the grid).
        let short = SegmentPlannerTests.asset(seconds: 12)
        planner.lanes = 1
        planner.targetDuration = MediaTime(seconds: 4)
        let end = MediaTime(value: 125, timescale: 10)
        #expect(seconds(planner.gridCuts(asset: short, zero: .zero, end: end, hasRange: true, grid: MediaTime(seconds: 4))) == [4, 8])
    }

    @Test("keyframe grid: the next multiple strictly after a time")
    func nextMultiple() {
        let grid = MediaTime(seconds: 6)
        #expect(grid.nextMultiple(after: .zero) == MediaTime(seconds: 6))
        #expect(grid.nextMultiple(after: MediaTime(value: 5999, timescale: 1000)) == MediaTime(seconds: 6))
        #expect(grid.nextMultiple(after: MediaTime(seconds: 6)) == MediaTime(seconds: 12))
    }

    @Test("playlist numbers: exact decimals, the target duration rule")
    func arithmetic() {
        #expect(decimal(1, 3, places: 6) == "0.333333")
        #expect(decimal(2, 3, places: 6) == "0.666667")
        #expect(decimal(193_536, 48000, places: 6) == "4.032000")
        #expect(decimal(30000, 1001, places: 3) == "29.970")
        let segment = { (d: Int64) in WrittenSegment(name: "s", start: 0, duration: d, mediaStart: 0, mediaDuration: d, bytes: 1) }
        var rendition = WrittenRendition(folder: "v", timescale: 1000, presentationOffset: 0,
                                         segments: [segment(6000), segment(6499), segment(2000)],
                                         reference: try! JSONDecoder().decode(CodecParameters.self, from: Data(Self.h264.utf8)), packets: 3)
        #expect(HLSPlaylist.targetDuration(rendition) == 6)
        rendition.segments.append(segment(6500))
        #expect(HLSPlaylist.targetDuration(rendition) == 7)
        #expect(CodecString.of(rendition.reference) == "avc1.64001f")
    }

    @Test("BANDWIDTH's peak is RFC 8216's: runs of segments lasting half to one and a half target durations")
    func peakSegmentBitRate() throws {
        let reference = try JSONDecoder().decode(CodecParameters.self, from: Data(Self.h264.utf8))
        let segment = { (d: Int64, bytes: Int64) in
            WrittenSegment(name: "s", start: 0, duration: d, mediaStart: 0, mediaDuration: d, bytes: bytes)
        }
        // 6 s segments at 1.5, 2.5 and 2.0 Mbit/s, then a 0.1 s tail of a keyframe and two pictures
        // at 4 Mbit/s: alone the tail lasts less than half the target (6 s) and does not count.
        var rendition = WrittenRendition(folder: "v", timescale: 1000, presentationOffset: 0,
                                         segments: [segment(6000, 1_125_000), segment(6000, 1_875_000),
                                                    segment(6000, 1_500_000), segment(100, 50_000)],
                                         reference: reference, packets: 4)
        #expect(rendition.peakBitrate == 2_500_000)
        // Runs count too: two 3 s segments at 2 and 3.2 Mbit/s, then a 6 s one at 2 Mbit/s; the
        // runs 3 + 6 s (9 s) qualify, 3 + 3 + 6 s (12 s) does not (more than 1.5 × 6 s).
        rendition.segments = [segment(3000, 750_000), segment(3000, 1_200_000), segment(6000, 1_500_000)]
        #expect(rendition.peakBitrate == 3_200_000)
        // The tail counts with the segment before it when that run qualifies and is the dearest.
        rendition.segments = [segment(6000, 1_500_000), segment(2000, 1_000_000)]
        #expect(rendition.peakBitrate == 2_500_000)
        // Under a second: the target is 1 s, so a 0.4 s segment at 4 Mbit/s counts only in runs of
        // 0.5 s or more (0.4 + 0.2 s: 3.33 Mbit/s); one 0.3 s segment in all: its average.
        rendition.segments = [segment(400, 100_000), segment(400, 200_000), segment(200, 50_000)]
        #expect(HLSPlaylist.targetDuration(rendition) == 1)
        #expect(rendition.peakBitrate == 3_333_333)
        rendition.segments = [segment(300, 75_000)]
        #expect(rendition.peakBitrate == 2_000_000 && rendition.averageBitrate == 2_000_000)
    }

    @Test("DASH bandwidth: the least rate that plays from every segment start after the buffer, as a direct reckoning finds")
    func deliveryBandwidth() {
        typealias Sample = DeliveryBandwidth.Sample
        // One second of 25 pictures of 100 kbit (2.5 Mbit/s), one segment, 2 s of buffer: all
        // 2.5 Mbit must be there by the last picture's decode time, 2 + 0.96 s after the first bit.
        let steady = (0..<25).map { Sample(decodeTime: Int64($0) * 512, bits: 100_000, startsSegment: $0 == 0) }
        #expect(DeliveryBandwidth.least(steady, timeBase: Rational(1, 12800), bufferSeconds: 2) == 844_595)
        // Against a direct reckoning — every segment start, every later sample, the least whole
        // rate meeting them all — on uneven streams: big keyframes at segment starts, quiet
        // stretches, decode times that repeat.
        var generator = SystemRandomNumberGenerator()
        for round in 0..<40 {
            var time: Int64 = 0
            let samples = (0..<(20 + round * 3)).map { k -> Sample in
                let starts = k == 0 || Int.random(in: 0..<12, using: &generator) == 0
                defer { time += Int64.random(in: 0...3, using: &generator) * 400 }
                return Sample(decodeTime: time, bits: starts ? Int64.random(in: 200_000...900_000, using: &generator)
                                : Int64.random(in: 0...120_000, using: &generator), startsSegment: starts)
            }
            let rate = DeliveryBandwidth.least(samples, timeBase: Rational(1, 12000), bufferSeconds: 2)
            // The least rate meeting `bits ≤ rate · (2 + Δt)` for every start and later sample.
            var needed: Int64 = 0
            for s in samples.indices where samples[s].startsSegment {
                var bits: Int64 = 0
                for k in s..<samples.count {
                    bits += samples[k].bits
                    let span = 2 * 12000 + samples[k].decodeTime - samples[s].decodeTime  // in 1/12000 s
                    needed = max(needed, (bits * 12000 + span - 1) / span)
                }
            }
            #expect(rate == needed, "round \(round): \(rate) against \(needed)")
        }
        #expect(DeliveryBandwidth.least([], timeBase: Rational(1, 1000), bufferSeconds: 2) == 0)
    }

    /// An H.264 stream's parameters with avcC extradata (High, level 3.1).
    static let h264 = """
        {"mediaType":"video","codecName":"h264","extradata":"AWQAH//hAAA=","bitRate":0,"bitsPerCodedSample":0,
         "bitsPerRawSample":0,"profile":100,"level":31,"width":1280,"height":720,"sampleAspectRatio":{"numerator":1,"denominator":1},
         "fieldOrder":0,"colorRange":0,"colorPrimaries":2,"colorTransfer":2,"colorSpace":2,"chromaLocation":0,"videoDelay":0,
         "channels":0,"sampleRate":0,"blockAlign":0,"frameSize":0,"initialPadding":0,"trailingPadding":0,"seekPreroll":0,
         "timeBase":{"numerator":1,"denominator":12800}}
        """

    /// A rung as the pipeline resolves it: `width`×`height` upright, the picture filling
    /// `content` of the pre-rotation canvas (nil: all of it).
    func rung(_ width: Int, _ height: Int, rotation: Int = 0, content: (Int, Int)? = nil,
              pixelFormat: String = "yuv420p") -> VideoEncoding {
        let canvas = rotation % 180 == 0 ? (width, height) : (height, width)
        let c = content ?? canvas
        return VideoEncoding(codec: .h264, encoderName: "libx264", width: width, height: height, rotation: rotation,
                             contentX: (canvas.0 - c.0) / 2, contentY: (canvas.1 - c.1) / 2, contentWidth: c.0,
                             contentHeight: c.1, pixelFormat: pixelFormat, timeBase: Rational(1, 30), constantFrameRate: nil,
                             nominalFrameRate: nil, bitrate: 1_000_000, maxBitrate: nil, bufferSize: nil, keyframeInterval: 300,
                             level: nil, profileNumber: nil, options: [:])
    }

    @Test("a rung scales from an earlier rung's picture only when that one is twice its size, unpadded, alike, and one scaling from the source")
    func pictureSources() {
        // 2160p's auto ladder: 540p and 432p from 1080p, 360p and 234p from 720p (the smallest
        // picture twice as large that was scaled from the decoded one); 1080p and 720p from the source.
        let auto = [rung(1920, 1080), rung(1280, 720), rung(960, 540), rung(768, 432), rung(640, 360), rung(416, 234)]
        #expect(VideoEncodePath.pictureSources(auto) == [nil, nil, 0, 0, 1, 1])
        // 720p → 540p is too close a step; 360p is exactly half of 720p.
        #expect(VideoEncodePath.pictureSources([rung(1280, 720), rung(960, 540), rung(640, 360)]) == [nil, nil, 0])
        // Never from a rung that comes later, nor from one that was itself scaled from a rung.
        #expect(VideoEncodePath.pictureSources([rung(640, 360), rung(1280, 720)]) == [nil, nil])
        #expect(VideoEncodePath.pictureSources([rung(1280, 720), rung(640, 360), rung(320, 180)]) == [nil, 0, 0])
        // Padded pictures, another rotation or pixel format: from the decoded picture.
        #expect(VideoEncodePath.pictureSources([rung(1280, 720, content: (960, 720)), rung(640, 360)]) == [nil, nil])
        #expect(VideoEncodePath.pictureSources([rung(1280, 720), rung(640, 480, content: (640, 360))]) == [nil, nil])
        #expect(VideoEncodePath.pictureSources([rung(720, 1280, rotation: 90), rung(360, 640, rotation: 90)]) == [nil, 0])
        #expect(VideoEncodePath.pictureSources([rung(1280, 720, rotation: 180), rung(640, 360)]) == [nil, nil])
        #expect(VideoEncodePath.pictureSources([rung(1280, 720, pixelFormat: "yuv420p10le"), rung(640, 360)]) == [nil, nil])
    }
}
