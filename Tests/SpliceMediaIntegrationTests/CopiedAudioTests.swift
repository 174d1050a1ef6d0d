import Foundation
import SpliceMedia
import SpliceTestSupport
import Testing

/// Issue 21: copied audio (`--copy-audio`) keeps every packet, its priming and its edit list, so
/// ffmpeg decodes the output to exactly the source's samples — in a single export and in a
/// segmented transcode, whose stitcher copies the track from the source.
@Suite("Copied audio decodes to the source's samples")
struct CopiedAudioTests {
    /// How a source states the samples its decoder must drop before the first real one.
    enum Priming: String, CaseIterable, CustomTestStringConvertible {
        /// FFmpeg's AAC encoder: first packet at pts −1024, an edit list with media time 1024.
        case ffmpegAAC
        /// A camera's HEVC file (the shared clip): an edit list with media time 1698, so its
        /// first packet is dropped whole and the second in part.
        case editList
        /// No edit list; an `iTunSMPB` tag gives 1024 priming samples (iTunes, Apple's encoders).
        case iTunSMPB
        /// Opus in MP4: 312 samples of pre-skip, first packet at pts −312.
        case opusPreSkip

        var testDescription: String { rawValue }
    }

    static func aacClip() async throws -> String {
        try await Fixtures.generated("copy-aac.mp4", ffmpeg: [
            "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=30:duration=6",
            "-f", "lavfi", "-i", Fixtures.sweepSource(rate: 48000, seconds: "6"), "-map", "0:v", "-map", "1:a",
            "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k"])
    }

    static func source(_ priming: Priming) async throws -> String {
        switch priming {
        case .ffmpegAAC:
            return try await aacClip()
        case .editList:
            return Fixtures.shared("hevc10_bframes_editlist.mp4")
        case .iTunSMPB:
            let plain = try await Fixtures.generated("copy-no-edit-list.mp4", ffmpeg: [
                "-i", try await aacClip(), "-c", "copy", "-use_editlist", "0"])
            let tagged = Fixtures.temporaryDirectory("smpb").appendingPathComponent("itunsmpb.mp4").path
            try MP4Boxes.addingITunSMPB(plain, priming: 1024, to: tagged)
            // The tag is what tells ffmpeg's decode to drop the priming (not the file's layout).
            let differs = try await decoded(tagged) != decoded(plain)
            #expect(differs, "the iTunSMPB tag had no effect")
            return tagged
        case .opusPreSkip:
            return try await Fixtures.generated("copy-opus.mp4", ffmpeg: [
                "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=30:duration=6",
                "-f", "lavfi", "-i", Fixtures.sweepSource(rate: 48000, seconds: "6"), "-map", "0:v", "-map", "1:a",
                "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p", "-c:a", "libopus",
                "-b:a", "96k"])
        }
    }

    /// The first audio track decoded by ffmpeg, every channel, 32-bit float as the decoder gives it.
    static func decoded(_ path: String) async throws -> Data {
        try await ExternalTool.check("ffmpeg", ["-v", "error", "-i", path, "-map", "0:a:0", "-f", "f32le", "-"]).stdout
    }

    static let video = VideoSettings(codec: .h264, width: 96, quality: 30, preset: "ultrafast")

    /// Decoded samples and packet count equal to the source's, and the priming stated as an edit list.
    func expectSameAudio(_ output: String, as source: String, _ what: String) async throws {
        let ours = try await Self.decoded(output), theirs = try await Self.decoded(source)
        #expect(!theirs.isEmpty)
        // Compared as one Bool: Swift Testing would diff two megabyte collections element by element.
        let identical = ours == theirs
        let firstDifference = (0..<min(ours.count, theirs.count))
            .first { ours[ours.startIndex + $0] != theirs[theirs.startIndex + $0] }.map { $0 / 4 }
        #expect(identical, "\(what): decoded audio differs (\(ours.count) bytes, source \(theirs.count); first at float \(firstDifference.map(String.init) ?? "-"))")
        let packets = try await Probe.packets(output, select: "a:0").count
        #expect(packets == (try await Probe.packets(source, select: "a:0").count), "\(what): packets")
        let first = try #require(await Probe.packets(output, select: "a:0").first?.pts)
        #expect(first < 0, "\(what): the priming is not before zero (first pts \(first))")
    }

    @Test(arguments: Priming.allCases)
    func aSingleExportKeepsThePriming(_ priming: Priming) async throws {
        let source = try await Self.source(priming)
        let output = Fixtures.temporaryDirectory("copy-export").appendingPathComponent("out.mp4")
        let session = ExportSession(asset: try await Asset.open(source), outputURL: output)
        session.videoSettings = Self.video
        session.audioSettings = nil
        try await session.export()
        try await expectSameAudio(output.path, as: source, "export")
    }

    @Test(arguments: Priming.allCases)
    func aSegmentedTranscodeKeepsThePriming(_ priming: Priming) async throws {
        let source = try await Self.source(priming)
        let output = Fixtures.temporaryDirectory("copy-transcode").appendingPathComponent("out.mp4")
        let request = TranscodeRequest(video: Self.video, audio: nil, fileType: .mp4,
                                       segmentDuration: MediaTime(seconds: priming == .editList ? 1 : 2),
                                       copiesAudio: true)
        let summary = try await Transcoder(options: .init(source: source, output: output, request: request, jobs: 2)).run()
        #expect(summary.plan.segments.filter { !$0.isAudio }.count >= 2, "no video join")
        try await expectSameAudio(output.path, as: source, "transcode")
    }
}
