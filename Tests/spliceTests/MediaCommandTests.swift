import Foundation
import SpliceMedia
import Testing

@testable import splice

/// `splice probe`, `export` and `transcode`: their flags, their errors, and what they tell people.
@Suite("Media commands")
struct MediaCommandTests {
    static let clip = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/media/h264_aac_320x240_60fps_5s.mp4").path

    @Test(arguments: [
        (["in.mp4", "out.mp4", "--video-codec", "h263"], "--video-codec: 'h263' is not one of h264, hevc, vp9, av1, prores"),
        (["in.mp4", "out.mp4", "--width", "0"], "--width: '0' is not valid; it must be a whole number of pixels"),
        (["in.mp4", "out.mp4", "--width", "-640"], "--width: '-640' is not valid"),
        (["in.mp4", "out.mp4", "--crf", "60"], "--crf: '60' is not valid; it must be from 0 to 51 for h264"),
        (["in.mp4", "out.mp4", "--crf", "20", "--video-bitrate", "2M"], "--crf: '20' is not valid"),
        (["in.mp4", "out.mp4", "--copy-video", "--width", "640"], "--copy-video copies the video unchanged"),
        (["in.mp4", "out.mp4", "--no-audio", "--no-video"], "leaves nothing to export"),
        (["in.mp4", "out.avi"], "cannot tell the container of 'out.avi'"),
        (["in.mp4", "out.webm", "--video-codec", "h264"], "--video-codec: 'h264' is not valid; it must be one of vp9, av1"),
        (["in.mp4", "out.mp4", "--start", "1:75"], "--start: '1:75' is not a time like 90, 1.5, 01:30 or 00:01:30.5"),
        (["in.mp4", "out.mp4", "--video-bitrate", "fast"], "--video-bitrate: 'fast' is not a bit rate like 128k"),
    ])
    func exportRefusesNonsenseByName(words: [String], message: String) {
        let error = usageError(words, for: ExportCommand.self)
        #expect(error?.contains(message) == true, "got: \(error ?? "no error")")
    }

    @Test func transcodeCopiesOneKindOfTrackButRefusesARemuxAndTinySegments() throws {
        // Copied tracks are taken from the source by the stitcher; something must still be encoded.
        #expect(usageError(["in.mp4", "out.mp4", "--copy-audio"], for: TranscodeCommand.self) == nil)
        #expect(usageError(["in.mp4", "out.mp4", "--copy-video"], for: TranscodeCommand.self) == nil)
        let copying = try parse(["in.mp4", "out.mp4", "--copy-audio", "--audio-tracks", "eng,fra", "--subtitles", "none"],
                                as: TranscodeCommand.self).request
        #expect(copying.copiesAudio && copying.audio == nil && copying.video != nil)
        #expect(copying.audioTracks == .languages(["eng", "fra"]) && copying.subtitles == .none && copying.dataTracks == .copy)
        #expect(usageError(["in.mp4", "out.mp4", "--copy-video", "--copy-audio"], for: TranscodeCommand.self)?
            .contains("splice export") == true)
        #expect(usageError(["in.mp4", "out.mp4", "--copy-video", "--no-audio"], for: TranscodeCommand.self)?
            .contains("splice export") == true)
        #expect(usageError(["in.mp4", "out.mp4", "--audio-tracks", "1,x"], for: TranscodeCommand.self)?
            .contains("--audio-tracks") == true)
        #expect(usageError(["in.mp4", "out.mp4", "--no-audio", "--audio-tracks", "2"], for: TranscodeCommand.self)?
            .contains("--no-audio") == true)
        #expect(usageError(["in.mp4", "out.mkv", "--annotations", "/nonexistent.json"], for: TranscodeCommand.self)?
            .contains("--annotations") == true)
        #expect(usageError(["in.mp4", "out.mp4", "--segment-seconds", "0.5"], for: TranscodeCommand.self)?
            .contains("at least 1") == true)
        #expect(usageError(["in.mp4", "out.mp4", "--jobs", "0"], for: TranscodeCommand.self)?.contains("--jobs") == true)
        #expect(usageError(["in.mp4", "out.mp4", "--segment-seconds", "2.5", "-j", "2"], for: TranscodeCommand.self) == nil)
    }

    @Test func squarePixelsIsAVideoSettingOfEveryEncodingCommand() throws {
        #expect(try parse(["in.mp4", "out.mp4", "--square-pixels"], as: TranscodeCommand.self).request.video?.squarePixels == true)
        #expect(try parse(["in.mp4", "out.mp4"], as: TranscodeCommand.self).request.video?.squarePixels == nil)
        #expect(try parse(["/in.mp4", "/out.mp4", "--square-pixels"], as: SubmitCommand.self).request.video?.squarePixels == true)
        #expect(usageError(["in.mp4", "out.mp4", "--square-pixels"], for: ExportCommand.self) == nil)
        #expect(usageError(["in.mp4", "out.mp4", "--copy-video", "--square-pixels"], for: ExportCommand.self)?
            .contains("--copy-video copies the video unchanged") == true)
    }

    @Test func minusYAndOverwriteAllowReplacingTheOutputAndHelpSaysSo() throws {
        #expect(try parse(["in.mp4", "out.mp4"], as: ExportCommand.self).destination.overwrite == false)
        #expect(try parse(["in.mp4", "out.mp4", "-y"], as: ExportCommand.self).destination.overwrite)
        #expect(try parse(["-y", "in.mp4", "out.mp4"], as: TranscodeCommand.self).destination.overwrite)
        #expect(try parse(["in.mp4", "out.mp4", "--overwrite"], as: TranscodeCommand.self).destination.overwrite)
        #expect(try parse(["kept", "out.mp4", "-y"], as: StitchCommand.self).destination.overwrite)
        #expect(try parse(["kept", "out.mp4"], as: StitchCommand.self).destination.overwrite == false)
        for path in [[SpliceCommand.self, ExportCommand.self], [SpliceCommand.self, TranscodeCommand.self],
                     [SpliceCommand.self, StitchCommand.self]] as [[any Command.Type]] {
            let help = HelpFormatter.help(for: path).split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(help.contains("-y, --overwrite Replace the output file if it already exists (never the input)."))
            #expect(help.contains("refused unless -y (--overwrite) is given;"))
        }
    }

    @Test func bitRatesAreExactIntegers() throws {
        #expect(try BitRate(argument: "128k").bitsPerSecond == 128_000)
        #expect(try BitRate(argument: "2.5M").bitsPerSecond == 2_500_000)
        #expect(try BitRate(argument: "4000000").bitsPerSecond == 4_000_000)
        #expect(throws: InvalidArgumentValue.self) { try BitRate(argument: "0") }
        #expect(throws: InvalidArgumentValue.self) { try BitRate(argument: "1.2.3k") }
    }

    @Test func aMissingInputIsOneLineNamingIt() async {
        let result = await runCLI(["export", "/nonexistent/in.mp4", "/tmp/out.mp4"], root: SpliceCommand.self)
        #expect(result.code == .failure)
        #expect(result.stderr == "splice export: cannot open '/nonexistent/in.mp4': no such file; check the path\n")
    }

    @Test func oddSizesAreRoundedAndTheCommandSaysSo() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("splice-cli-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("odd.mp4").path
        let result = await runCLI(["export", Self.clip, output, "--width", "161", "--preset", "ultrafast", "--duration", "0.5"],
                                  root: SpliceCommand.self)
        #expect(result.code == .success)
        #expect(result.stderr.contains("note: width 161 rounded to 162: yuv420p needs multiples of 2"))
        #expect(result.stdout.hasPrefix("wrote \(output): 30 video frames"))
    }

    @Test func probePrintsTracksAndKeyframes() async throws {
        let text = await runCLI(["probe", Self.clip], root: SpliceCommand.self)
        #expect(text.code == .success)
        #expect(text.stdout.contains("video  h264") && text.stdout.contains("320x240") && text.stdout.contains("60 fps"))
        #expect(text.stdout.contains("audio  aac") && text.stdout.contains("48000 Hz"))
        let json = await runCLI(["probe", Self.clip, "--json"], root: SpliceCommand.self)
        struct Report: Decodable { var keyframes: [MediaTime]; var asset: Asset }
        let report = try JSONDecoder().decode(Report.self, from: Data(json.stdout.utf8))
        #expect(report.asset.tracks.count == 2)
        #expect(report.keyframes.first == .zero)
    }
}
