import Foundation
import SpliceTestSupport
import Testing

// A streaming package made by the cluster: `splice submit OUT.m3u8 --ladder … --dash` on two
// workers (each segment task encodes every rung of its segment; the coordinator packages when it
// stitches), checked with ffprobe and against `splice transcode` of the same package, which the
// media tests check against ffmpeg. At --preset ultrafast x264 is repeatable, so the two packages
// must decode to the same pictures and samples.

@Suite("Cluster streaming package: splice submit OUT.m3u8", .timeLimit(.minutes(6)))
struct ClusterPackageTests {
    static let flags = ["--preset", "ultrafast", "--ladder", "640x360@800k,320x180@200k", "--hls-segment-seconds", "2",
                        "--segment-seconds", "2", "--dash"]

    @Test("the cluster's package matches `splice transcode`'s: every rung whole, IDRs on the grid, same audio")
    func packageMatchesTranscode() async throws {
        let cluster = try await LocalCluster.start(workers: 2)
        let master = cluster.outputPath("show.m3u8")
        let source = try await EndToEndMedia.source()
        let submit = try SpliceProcess(["submit", source, master, "--wait", "--coordinator", cluster.coordinator.api] + Self.flags)
        let result = await submit.finish(within: .seconds(300))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")

        let local = Fixtures.temporaryDirectory("package-reference").appendingPathComponent("show.m3u8").path
        let transcode = try await SpliceProcess.run(["transcode", source, local, "--jobs", "2"] + Self.flags, timeout: .seconds(300))
        #expect(transcode.status == 0, "transcode: \(transcode.stderr)")

        let sourceFrames = try await Probe(source, countFrames: true).first("video")?.readFrames
        let dir = URL(fileURLWithPath: master).deletingLastPathComponent()
        for rung in ["show-360p-800k", "show-180p-200k"] {
            let playlist = dir.appendingPathComponent(rung).appendingPathComponent("index.m3u8").path
            #expect(try await Probe(playlist, countFrames: true).first("video")?.readFrames == sourceFrames, "\(rung)")
            let keys = try await ExternalTool.check("ffprobe", ["-v", "error", "-select_streams", "v:0", "-skip_frame", "nokey",
                                                                "-show_entries", "frame=pts_time", "-of", "csv=p=0", playlist])
            let times = Set(keys.text.split(separator: "\n").compactMap { Probe.microseconds(String($0)) })
            #expect(Set([0, 2_000_000, 4_000_000]).isSubset(of: times), "\(rung) keyframes at \(times.sorted())")
        }
        let (written, expected) = (try await Digests(of: master), try await Digests(of: local))
        #expect(written.video == expected.video, "first rung's pictures differ from splice transcode's")
        #expect(written.audio == expected.audio && written.audioSamples == expected.audioSamples, "audio differs")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("show.mpd").path))
        #expect(cluster.spoolFiles().isEmpty, "segment files left behind: \(cluster.spoolFiles())")
        try await cluster.stop()
    }
}
