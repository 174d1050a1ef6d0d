import SpliceMedia
import Testing

@testable import splice

@Suite("Package flags")
struct PackageOptionsTests {
    @Test("an .m3u8 or .mpd output makes a package; its flags are refused for a file")
    func packageFromOutput() throws {
        let hls = try parse(["in.mov", "out/show.m3u8", "--ladder", "1280x720@3M,640x360@1M", "--dash"], as: TranscodeCommand.self)
        let package = try #require(hls.request.package)
        #expect(package.hls && package.dash)
        #expect(package.ladder?.map(\.height) == [720, 360])
        #expect(package.segmentDuration == MediaTime(seconds: 6))
        #expect(hls.request.fileType == .mp4)
        let dash = try parse(["in.mov", "show.mpd", "--hls-segment-seconds", "4"], as: SubmitCommand.self)
        #expect(dash.request.package == PackageRequest(ladder: nil, segmentDuration: MediaTime(seconds: 4), hls: false, dash: true))
        #expect(try parse(["in.mov", "out.mp4"], as: TranscodeCommand.self).request.package == nil)
    }

    @Test("package flags with a file output, a single rate or size, or --dash on an .mpd are usage errors")
    func refusals() {
        for words in [["in.mov", "out.mp4", "--ladder", "auto"], ["in.mov", "out.mp4", "--dash"],
                      ["in.mov", "show.mpd", "--dash"], ["in.mov", "show.m3u8", "--crf", "20"],
                      ["in.mov", "show.m3u8", "--ladder", "1280x720"], ["in.mov", "show.m3u8", "--video-codec", "hevc"],
                      ["in.mov", "show.m3u8", "--hls-segment-seconds", "0.5"]] {
            #expect(throws: UsageError.self, "\(words)") { try parse(words, as: TranscodeCommand.self) }
        }
    }
}
