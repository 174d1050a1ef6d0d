import Foundation
import SpliceCore
import SpliceMedia
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing

// Per-segment figures in the cluster's job status (issue 12): a bit-rate job on a real local
// cluster (`splice coordinator`, two `splice worker`s, Postgres), then `splice status --json`.
// Oracles: ffprobe's packet sizes of the stitched output, summed over each segment's
// presentation range, and `splice transcode --json` of the same input with the same flags
// (the cluster and transcode cut and encode the same segments, ClusterEndToEndTests).

@Suite("Segment figures in splice status", .timeLimit(.minutes(5)))
struct SegmentFiguresTests {
    /// Average bit rate, so the segments' sizes differ and a starved one would show.
    static let flags = ["--video-codec", "h264", "--preset", "veryfast", "--video-bitrate", "600k",
                        "--audio-codec", "aac", "--audio-bitrate", "128k", "--segment-seconds", "1"]

    @Test("status --json lists every segment; each video segment's bytes are its packets in the stitched file")
    func statusReportsEachSegmentsFigures() async throws {
        let cluster = try await LocalCluster.start(workers: 2)
        let source = try await EndToEndMedia.source()
        let output = cluster.outputPath("figures.mp4")
        let submit = try await SpliceProcess.run(["submit", source, output, "--wait", "--coordinator",
                                                  cluster.coordinator.api] + Self.flags, timeout: .seconds(300))
        #expect(submit.status == 0, "submit: \(submit.stderr)\n\(cluster.logs)")
        let job = try #require(EndToEndMedia.job(in: submit.stderr))

        let json = try await SpliceProcess.run(["status", job, "--json", "--coordinator", cluster.coordinator.api])
        #expect(json.status == 0, "\(json.stderr)")
        let status = try JSONDecoder().decode(JobStatus.self, from: Data(json.stdout.utf8))
        let segments = try #require(status.segments, "no segments in \(json.stdout)")
        #expect(segments.map(\.index) == Array(0..<EndToEndMedia.segments))
        #expect(segments.allSatisfy { $0.state == .done })

        // Which rows are video, and the range each covers, from the plan the store recorded.
        let rows = try await cluster.segments(of: job)
        let specs = try rows.map { try $0.plan.spec.decode(SegmentSpec.self) }
        let video = rows.indices.filter { specs[$0].audio == nil }
        #expect(video.count == EndToEndMedia.segments - 1, "six video segments and one audio segment")
        for (row, spec) in zip(rows, specs) where spec.audio != nil {
            #expect(segments[row.plan.index].figures == nil, "audio segment \(row.plan.index) has no video figures")
        }

        // The oracle: the stitched file's video packets, by presentation time. The first
        // segment starts at the output's zero, so a packet's time after the first picture is its
        // time in the source.
        let packets = try await Probe.packets(output, select: "v:0")
        let probe = try await Probe(output)
        let timeBase = try #require(probe.first("video")?.time_base).split(separator: "/")
        let (numerator, denominator) = (try #require(Int64(timeBase[0])), try #require(Int64(timeBase[1])))
        let zero = try #require(packets.compactMap(\.pts).min())
        var counted = 0
        for index in video {
            let range = rows[index].plan
            let figures = try #require(segments[range.index].figures, "video segment \(range.index) has no figures")
            // [start, end) in 1/timescale s against (pts − zero) × numerator/denominator s, exactly.
            let inside = packets.filter { packet in
                guard let pts = packet.pts else { return false }
                let scaled = (pts - zero) * numerator * Int64(range.timescale)
                return scaled >= range.rangeStart * denominator && scaled < range.rangeEnd * denominator
            }
            counted += inside.count
            let bytes = inside.reduce(Int64(0)) { $0 + (Int64($1.size ?? "") ?? 0) }
            // The MP4 muxer writes each NAL unit with a 4-byte length where x264 may have used a
            // 3-byte start code, so the file may hold up to a byte more per packet, never less
            // (measured: 1 byte more in the first segment, the same bytes in every other).
            #expect(bytes >= figures.videoBytes && bytes - figures.videoBytes <= Int64(inside.count),
                    "segment \(range.index): reported \(figures.videoBytes) bytes, its \(inside.count) packets hold \(bytes)")
            // The rate is the bytes over the segment's span (1 s here; the last one ends with the source).
            let rate = try #require(figures.videoBitsPerSecond)
            let span = range.rangeEnd - range.rangeStart
            let bits = figures.videoBytes * 8 * Int64(range.timescale)
            #expect(abs(rate * span - bits) * 100 <= bits, "segment \(range.index): \(rate) bit/s over \(span)")
            #expect(figures.meanQP.map { (0...51).contains($0) } == true, "an H.264 QP: \(figures.meanQP as Any)")
        }
        #expect(counted == packets.count, "every packet of the stitched video lies in one segment's range")

        // The same figures `splice transcode --json` reports for the same input and flags.
        let reference = Fixtures.temporaryDirectory("figures-reference").appendingPathComponent("transcode.mp4").path
        let transcode = try await SpliceProcess.run(["transcode", source, reference, "--jobs", "2", "--json"] + Self.flags,
                                                    timeout: .seconds(300))
        #expect(transcode.status == 0, "\(transcode.stderr)")
        let summary = try JSONDecoder().decode(Transcoder.Summary.self, from: Data(transcode.stdout.utf8))
        #expect(summary.segments.map(\.figures) == segments.map(\.figures))

        // The text form: a row per segment with its state and figures.
        let text = try await SpliceProcess.run(["status", job, "--coordinator", cluster.coordinator.api])
        #expect(text.status == 0, "\(text.stderr)")
        let table = Array(text.stdout.split(separator: "\n").drop { !$0.hasPrefix("SEGMENT") })
        try #require(table.count == segments.count + 1, "\(text.stdout)")
        #expect(table[0].split(separator: " ") == ["SEGMENT", "STATE", "VIDEO", "KiB", "KBIT/S", "MEAN", "QP"])
        for segment in segments {
            let cells = table[1 + segment.index].split(separator: " ")
            let expected = segment.figures.map { [String($0.videoBytes / 1024)] } ?? ["-"]
            #expect(cells.prefix(3).map(String.init) == [String(segment.index), "done"] + expected, "\(cells)")
        }
        try await cluster.stop()
    }
}
