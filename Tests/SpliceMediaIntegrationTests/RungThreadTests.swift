import Foundation
import SpliceCore
@testable import SpliceMedia
import SpliceTestSupport
import Testing

/// A ladder's rungs encode on threads of their own (``RenditionThread``): the decoding thread
/// converts every rung's picture and hands it on, each rung's encoder runs beside the others.
/// What a user depends on: every rung gets every picture, the right one, as when the rungs
/// encode one after another; a cancelled job stops every rung's thread and leaves nothing behind.
@Suite("Ladder rungs on threads of their own")
struct RungThreadTests {
    /// 13 s at 25 fps with audio (the streaming-package clip): a ladder of two bit-rate rungs on
    /// a 4 s grid, so every segment after the first warms its rate control up.
    func request(overwrite: Bool = false) -> TranscodeRequest {
        TranscodeRequest(
            video: VideoSettings(codec: .h264, preset: "veryfast"), audio: AudioSettings(codec: .aac), fileType: .mp4,
            segmentDuration: MediaTime(seconds: 8), overwrite: overwrite, audioSegmentDuration: MediaTime(seconds: 4),
            package: PackageRequest(ladder: PackageTests.twoRungs, segmentDuration: MediaTime(seconds: PackageTests.grid),
                                    hls: true, dash: true))
    }

    /// The names of this process's threads (what `/proc` shows: at most 15 bytes each).
    static func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    /// Each frame's luma PSNR of a rung (its media playlist) against the source scaled to its size.
    func framePSNR(_ playlist: String, source: String, width: Int, height: Int) async throws -> [Double] {
        let scores = try await FFmpegQuality.measure(playlist, reference: source, filter: "scale=\(width):\(height):flags=bicubic")
        return scores.mseY.map { 10 * log10(255 * 255 / max($0, 1e-10)) }
    }

    @Test("rungs encoded side by side: every rung has every frame, each as close to its source picture as one after another makes it")
    func sideBySideEncodesTheRightPictures() async throws {
        // The oracle is the source, not the bytes of the other run: x264 does not code a ladder's
        // warm-up segment the same way twice in one process (seen before this change too), so a
        // byte comparison would fail by chance. A picture handed to the wrong rung, or overwritten
        // while its rung's thread still waits to encode it, is another frame of the moving pattern:
        // tens of dB under its neighbours.
        let source = try await Fixtures.clip(PackageTests.clip)
        let plan = try await SegmentPlanner.plan(source: source, request: request(), lanes: 2)
        #expect(plan.segments.contains { $0.videoWarmUp != nil }, "the ladder should warm a segment's rate control up")
        var scores: [Bool: [[Double]]] = [:]
        var rungThreadsSeen = false
        for sideBySide in [true, false] {
            let dir = Fixtures.temporaryDirectory("rung-threads")
            let work = dir.appendingPathComponent("segments")
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            var exporter = SegmentExporter(plan: plan)
            exporter.rungsSideBySide = sideBySide
            var paths: [Int: String] = [:], checksums: [Int: SHA256Digest] = [:]
            for spec in plan.segments {
                let url = work.appendingPathComponent("segment-\(spec.index).splseg")
                let export = Task { [exporter] in try await exporter.export(segment: spec.index, to: url, codecThreads: 1) }
                if sideBySide && !spec.isAudio && !rungThreadsSeen {
                    // The rung threads are named; look for them while the segment encodes.
                    let deadline = ContinuousClock.now + .seconds(60)
                    while !rungThreadsSeen && ContinuousClock.now < deadline && !FileManager.default.fileExists(atPath: url.path) {
                        rungThreadsSeen = Self.threadNames().contains { $0.hasPrefix("splice-rung-") }
                        try await Task.sleep(for: .milliseconds(2))
                    }
                }
                let result = try await export.value
                paths[spec.index] = result.path
                checksums[spec.index] = result.checksum
            }
            let package = dir.appendingPathComponent("package")
            try FileManager.default.createDirectory(at: package, withIntermediateDirectories: true)
            _ = try await Packager(plan: plan).package(segments: paths, checksums: checksums,
                                                       to: package.appendingPathComponent("show.m3u8").path, overwrite: false)
            scores[sideBySide] = try await [(320, 180, "show-180p-400k"), (160, 90, "show-90p-120k")].asyncMap { w, h, folder in
                try await framePSNR(package.appendingPathComponent("\(folder)/index.m3u8").path, source: source, width: w, height: h)
            }
        }
        #expect(rungThreadsSeen, "no rung thread was seen while the segments encoded side by side")
        let together = try #require(scores[true]), apart = try #require(scores[false])
        for (rung, (mine, theirs)) in zip(together, apart).enumerated() {
            #expect(mine.count == 13 * 25 && theirs.count == 13 * 25, "rung \(rung): \(mine.count) and \(theirs.count) frames")
            let worst = zip(mine, theirs).enumerated().map { ($0, $1.0 - $1.1) }.min { $0.1 < $1.1 }
            #expect(worst.map { $0.1 > -3 } ?? false,
                    "rung \(rung), frame \(worst?.0 ?? -1): \(worst?.1 ?? 0) dB under the same frame encoded one rung after another")
        }
    }

    @Test("a ladder cancelled while its rungs encode ends (every rung's thread stopped) and leaves nothing behind")
    func cancellingStopsTheRungThreads() async throws {
        let source = try await Fixtures.clip(PackageTests.clip)
        let dir = Fixtures.temporaryDirectory("rung-threads-cancel")
        let transcoder = Transcoder(options: .init(source: source, output: dir.appendingPathComponent("show.m3u8"),
                                                   request: request(), jobs: 2))
        let updates = transcoder.progressUpdates
        let transcode = Task { try await transcoder.run() }
        for await progress in updates where progress.fraction > 0.1 {
            transcode.cancel()
            break
        }
        await #expect(throws: (any Error).self) { _ = try await transcode.value }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty,
                "a cancelled package left files behind")
    }
}

extension Array {
    /// `transform` applied to each element in order, awaiting each.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}
