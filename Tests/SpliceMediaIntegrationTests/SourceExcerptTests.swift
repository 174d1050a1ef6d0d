import Foundation
import SpliceCore
import SpliceMedia
import SpliceTestSupport
import Testing

/// A worker that cannot see the source encodes from the segment's excerpt: the segment it writes
/// must be the one it would have written from the source, byte for byte.
@Suite("Source excerpts")
struct SourceExcerptTests {
    /// Plans `source` in short segments (audio segments too), then for every segment: exports it
    /// from the source, cuts its excerpt, exports it again from the excerpt alone (in a folder of
    /// its own, the source out of reach by name), and compares the two files' bytes.
    func checkEverySegment(_ source: String, audio: AudioSettings? = AudioSettings(codec: .aac),
                           segmentSeconds: Int64 = 1) async throws {
        let dir = Fixtures.temporaryDirectory("excerpt")
        let asset = try await Asset.open(source)
        let planner = SegmentPlanner(targetDuration: MediaTime(seconds: segmentSeconds), minimumDuration: MediaTime(seconds: 1),
                                     audioTargetDuration: MediaTime(seconds: 2 * segmentSeconds))
        let request = TranscodeRequest(video: VideoSettings(codec: .h264, width: 256, quality: 30, preset: "ultrafast"),
                                       audio: asset.audioTrack == nil ? nil : audio, fileType: .mp4,
                                       segmentDuration: MediaTime(seconds: segmentSeconds),
                                       audioSegmentDuration: MediaTime(seconds: 2 * segmentSeconds))
        let plan = try await planner.plan(asset: asset, request: request, metadata: [:])
        #expect(plan.segments.count >= 2, "\(source): too few segments to exercise a cut")
        let sourceBytes = try #require(try FileManager.default.attributesOfItem(atPath: source)[.size] as? Int64)
        for spec in plan.segments {
            let fromSource = dir.appendingPathComponent("source-\(spec.index).splseg")
            let expected = try await SegmentExporter(plan: plan).export(segment: spec.index, to: fromSource)
            let excerpt = dir.appendingPathComponent("excerpt-\(spec.index).splseg")
            let cut = try await SourceExcerpt.cut(plan: plan, segment: spec.index, to: excerpt)
            #expect(cut.bytes == Int64(try Data(contentsOf: excerpt).count))
            let sum = try await ExternalTool.check("sha256sum", [excerpt.path]).text.prefix(64)
            #expect(cut.checksum.description == "sha256:" + sum)
            // The worker's copy of the plan names a source it cannot open: only the excerpt is read.
            var remote = plan
            remote.source = dir.appendingPathComponent("no-such-source.mp4").path
            let fromExcerpt = dir.appendingPathComponent("excerpt-encoded-\(spec.index).splseg")
            let actual = try await SegmentExporter(plan: remote).export(segment: spec.index, to: fromExcerpt, from: excerpt)
            #expect(actual.checksum == expected.checksum,
                    "\(source) segment \(spec.index) (\(spec.isAudio ? "audio" : "video")): excerpt of \(cut.packets) packets")
            #expect(try Data(contentsOf: fromExcerpt) == Data(contentsOf: fromSource))
            #expect(actual.videoFrames == expected.videoFrames)
            if plan.segments.count > 2 && spec.index > 0 && spec.index < plan.segments.count - 1 {
                #expect(cut.bytes < sourceBytes, "a middle segment's excerpt is smaller than the source")
            }
        }
    }

    @Test("a generated clip with AAC audio: every segment byte-identical from its excerpt")
    func generatedClip() async throws {
        let clip = try await Fixtures.clip(Fixtures.ClipSpec(seconds: "5", width: 320, height: 240, sampleRate: 48_000))
        try await checkEverySegment(clip)
    }

    @Test("B-pyramid H.264: segments that start between keyframes decode from the same lead-in")
    func bPyramid() async throws {
        try await checkEverySegment(Fixtures.shared("h264_bpyramid_800x640.mp4"))
    }

    @Test("HEVC with B-frames and an edit list, 44.1 kHz AAC, extra data tracks")
    func hevcEditList() async throws {
        try await checkEverySegment(Fixtures.shared("hevc10_bframes_editlist.mp4"))
    }

    @Test("MPEG-TS with MPEG-2 (open GOPs) and timestamps far from zero")
    func transportStream() async throws {
        try await checkEverySegment(Fixtures.shared("mpeg2_mp2_1080p.ts"))
    }

    @Test("WebM: VP9 and 5.1 Vorbis (packet sizes that depend on the packet before)")
    func webm() async throws {
        try await checkEverySegment(Fixtures.shared("vp9_vorbis51_540p.webm"))
    }

    @Test("a phone clip: 90° display matrix, NTSC rate, 44.1 kHz AAC")
    func rotated() async throws {
        try await checkEverySegment(Fixtures.shared("h264_aac44k_720p_rotated90.mp4"), segmentSeconds: 2)
    }

        @Test("a segment file that is not an excerpt, or another segment's excerpt, is refused")
    func wrongExcerpt() async throws {
        let clip = try await Fixtures.clip(Fixtures.ClipSpec(seconds: "3", width: 320, height: 240, sampleRate: nil))
        let asset = try await Asset.open(clip)
        let plan = try await SegmentPlanner(targetDuration: MediaTime(seconds: 1))
            .plan(asset: asset, video: VideoSettings(codec: .h264, preset: "ultrafast"), audio: nil, fileType: .mp4)
        let dir = Fixtures.temporaryDirectory("excerpt-wrong")
        let excerpt = dir.appendingPathComponent("excerpt-0.splseg")
        _ = try await SourceExcerpt.cut(plan: plan, segment: 0, to: excerpt)
        let encoded = dir.appendingPathComponent("encoded-0.splseg")
        _ = try await SegmentExporter(plan: plan).export(segment: 0, to: encoded)
        let output = dir.appendingPathComponent("out.splseg")
        let wrongSegment = await #expect(throws: MediaError.self) {
            _ = try await SegmentExporter(plan: plan).export(segment: 1, to: output, from: excerpt)
        }
        #expect(wrongSegment?.message.contains("not of segment 1") == true)
        let notExcerpt = await #expect(throws: MediaError.self) {
            _ = try await SegmentExporter(plan: plan).export(segment: 0, to: output, from: encoded)
        }
        #expect(notExcerpt?.message.contains("not a source excerpt") == true)
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }
}

