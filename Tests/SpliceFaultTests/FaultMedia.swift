import Foundation
import SpliceTestSupport

/// The job every fault scenario runs, and the oracle that says whether its output is exact.
///
/// 24 s of 320×240 test pattern at 30 fps with a keyframe every second and stereo audio at 48 kHz
/// (a sweep over pink noise, so a lost or doubled audio frame shows), cut into 1 s segments: 24
/// segments, each encoded in about 0.1 s at `--preset ultrafast` on one codec thread, so a
/// fault-free job takes a few seconds. Twenty-four segments leave room for the storms: ten worker
/// kills land in the first pass over the segments, and five coordinator restarts (each commits at
/// most a couple of held results) fit in one job.
///
/// Why ultrafast: at this size the segment pipeline is bit-reproducible run to run only at
/// ultrafast (with `medium`, `slow` or `veryslow` two `splice transcode` runs of this clip decode
/// differently in some segments — reported in docs/reliability.md), and the oracle compares every
/// decoded picture and audio frame with the fault-free run's.
enum FaultMedia {
    static let spec = Fixtures.ClipSpec(
        seconds: "24", width: 320, height: 240,
        videoCodec: ["-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-keyint_min", "30",
                     "-sc_threshold", "0", "-pix_fmt", "yuv420p"])
    static let segments = 24

    /// The same flags for the cluster and for the fault-free reference.
    static func flags() -> [String] {
        ["--video-codec", "h264", "--preset", "ultrafast", "--crf", "26",
         "--audio-codec", "aac", "--audio-bitrate", "128k", "--segment-seconds", "1"]
    }

    static func source() async throws -> String { try await Fixtures.clip(spec) }

    /// Pictures in the source, as ffprobe decodes them.
    static let sourceFrames = Task { () throws -> Int in
        guard let frames = try await Probe(try await source(), countFrames: true).first("video")?.readFrames else {
            throw TestFailure("ffprobe counted no video frames in the fault clip")
        }
        return frames
    }

    /// The fault-free run: `splice transcode` of the source with the same flags, every encoder
    /// single-threaded as on the workers (`--jobs 2`). The end-to-end tests show a cluster job
    /// decodes exactly like it.
    static let reference = Task { () throws -> Digests in
        let output = Fixtures.temporaryDirectory("fault-reference").appendingPathComponent("reference.mp4").path
        let result = try await SpliceProcess.run(["transcode", try await source(), output, "--jobs", "2"] + flags(),
                                                 timeout: .seconds(300))
        guard result.status == 0 else { throw TestFailure("splice transcode (the reference) failed: \(result.stderr)") }
        return try await Digests(of: output)
    }
}

/// The oracle's verdict on a job's output, against the fault-free run.
struct OutputCheck: Sendable, CustomStringConvertible {
    var exists: Bool
    /// Pictures `ffprobe -count_frames` decodes from the output.
    var frames: Int
    /// Pictures in the source and in the fault-free run (ffprobe / ffmpeg).
    var sourceFrames: Int
    var referenceFrames: Int
    /// Audio samples ffmpeg decodes from the output and from the fault-free run.
    var samples: Int
    var referenceSamples: Int
    /// The first decoded picture / audio frame whose MD5 differs from the fault-free run's.
    var firstDifferentPicture: Int?
    var firstDifferentAudioFrame: Int?

    /// Same pictures and samples as the fault-free run, each one decoding identically.
    var exact: Bool {
        exists && frames == referenceFrames && frames == sourceFrames && samples == referenceSamples
            && firstDifferentPicture == nil && firstDifferentAudioFrame == nil
    }

    var description: String {
        guard exists else { return "no output" }
        let picture = firstDifferentPicture.map(String.init) ?? "none"
        let audioFrame = firstDifferentAudioFrame.map(String.init) ?? "none"
        return "frames \(frames) (reference \(referenceFrames), source \(sourceFrames)), samples \(samples) "
            + "(reference \(referenceSamples)), first different picture \(picture), "
            + "first different audio frame \(audioFrame)"
    }

    /// Decodes `output` (ffprobe for the picture count, ffmpeg for per-frame MD5s and samples).
    static func of(_ output: String) async throws -> OutputCheck {
        let reference = try await FaultMedia.reference.value
        let sourceFrames = try await FaultMedia.sourceFrames.value
        guard FileManager.default.fileExists(atPath: output) else {
            return OutputCheck(exists: false, frames: 0, sourceFrames: sourceFrames,
                               referenceFrames: reference.video.count, samples: 0,
                               referenceSamples: reference.audioSamples)
        }
        let frames = try await Probe(output, countFrames: true).first("video")?.readFrames ?? 0
        let written = try await Digests(of: output)
        let differences = written.firstDifferences(from: reference)
        return OutputCheck(
            exists: true, frames: frames, sourceFrames: sourceFrames, referenceFrames: reference.video.count,
            samples: written.audioSamples, referenceSamples: reference.audioSamples,
            firstDifferentPicture: differences.video ?? (written.video.count != reference.video.count
                ? min(written.video.count, reference.video.count) : nil),
            firstDifferentAudioFrame: differences.audio ?? (written.audio.count != reference.audio.count
                ? min(written.audio.count, reference.audio.count) : nil))
    }
}
