import Foundation
import SpliceMedia

/// `splice transcode INPUT OUTPUT [flags] --segment-seconds S --jobs N`: the embedded
/// single-machine mode — segments encoded in parallel here, then stitched.
struct TranscodeCommand: Command {
    static let input = Positional<String>("input", help: "The source media file or URL, or an object: s3://BUCKET/KEY.") { $0 }
    static let output = Positional<String>("output",
        help: "The file to write (.mp4, .mov, .mkv, .webm), or a streaming package: OUT.m3u8 (HLS) or OUT.mpd (DASH); "
            + "a path or an object location s3://BUCKET/KEY.") { $0 }
    static let segmentSeconds = Option<MediaTime>("segment-seconds", valueName: "time",
        help: "Target segment length; cuts fall on source keyframes. Not given, bit-rate video (and ladders) "
            + "on few lanes gets fewer, longer segments, up to 60 s: each one after the first encodes a 2 s "
            + "rate-control warm-up.", default: TranscodeRequest.defaultSegmentDuration)
    static let audioSegmentSeconds = Option<MediaTime>("audio-segment-seconds", valueName: "time",
        help: "Target length of audio segments, cut independently of the video (default: the longer of "
            + "--segment-seconds and 60; each AAC segment also encodes 12 s before its cut).")
    static let jobs = Option<Int>("jobs", short: "j", valueName: "count",
        help: "Segments encoded at once (default: number of cores).", default: ProcessInfo.processInfo.activeProcessorCount)
    static let keepSegments = Option<String>("keep-segments", valueName: "dir",
        help: "Keep the plan and segment files in this folder (for inspection or `splice stitch`).")
    static let json = Flag("json", help: "Print a JSON summary (segments, CPU time, timings) instead of a line.")
    static let noHandover = Flag("no-handover",
        help: "Never split a running segment to give part of it to a lane that fell idle (each segment then "
            + "keeps its planned range).")

    static let configuration = CommandConfiguration(
        name: "transcode", abstract: "Transcode one file on this machine, segment-parallel.",
        discussion: """
            Cuts the source at keyframes into segments of about --segment-seconds, encodes --jobs of \
            them at once and stitches them into one file that plays like a single-pass encode. Audio \
            is cut on its own, in longer segments, placed by its samples; copied tracks, subtitles, \
            timed metadata and chapters are taken straight from the source by the stitcher. \
            Temporary segments are removed on success, failure and Ctrl-C. An existing output file \
            is kept and the transcode refused unless -y (--overwrite) is given; the input is never \
            replaced.

            An output named OUT.m3u8 or OUT.mpd makes a streaming package instead: an adaptive-bitrate \
            ladder (--ladder) of CMAF fMP4 renditions, each in a folder beside OUT (init.mp4 + .m4s), one \
            AAC rendition per audio track, HLS playlists and/or a DASH manifest. Every segment is \
            decoded once and encoded into every rung; the master playlist appears last, only when \
            the package is complete.

            Input and output may be objects in S3 or an S3-compatible store (s3://BUCKET/KEY, \
            credentials from AWS_* and ~/.aws). A package to s3://BUCKET/show/OUT.m3u8 is made in \
            the temporary folder, then every rendition's files are uploaded and the master playlist \
            last.
            """,
        arguments: [input, output, segmentSeconds, audioSegmentSeconds, jobs, keepSegments, json, noHandover] + ExportOptions.arguments
            + PackageOptions.arguments + QualityOptions.jobArguments + OutputOptions.arguments, environment: [.ffmpegLog, .objectStorage])

    let input: String
    let output: String
    /// nil: not given (the default, which the planner may lengthen).
    let segmentSeconds: MediaTime?
    let jobs: Int
    let keepSegments: String?
    let json: Bool
    let handsOver: Bool
    let destination: OutputOptions
    /// What to make, checked once here.
    let request: TranscodeRequest

    init(_ arguments: ParsedArguments) throws {
        input = try arguments.value(Self.input)
        output = try arguments.value(Self.output)
        segmentSeconds = arguments.contains(Self.segmentSeconds.spec) ? try arguments.value(Self.segmentSeconds) : nil
        jobs = try arguments.value(Self.jobs)
        keepSegments = arguments[Self.keepSegments]
        json = arguments[Self.json]
        handsOver = !arguments[Self.noHandover]
        destination = try OutputOptions(arguments)
        var request = try ExportOptions(arguments).request(output: output, segmentDuration: segmentSeconds,
                                                           audioSegmentDuration: arguments[Self.audioSegmentSeconds],
                                                           overwrite: destination.overwrite)
        try PackageOptions(arguments, output: output).apply(to: &request)
        if let quality = try QualityOptions.request(arguments) {
            request.quality = quality
            do { try request.validate() } catch { throw UsageError(error) }
        }
        self.request = request
    }

    func validate() throws {
        guard jobs >= 1 && jobs <= 256 else { throw UsageError("--jobs must be from 1 to 256; got \(jobs)") }
        try destination.check(output: output, inputs: [input])
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let transcoder = Transcoder(options: Transcoder.Options(
            source: input, output: output, request: request, jobs: jobs,
            keepSegmentsIn: keepSegments.map { URL(fileURLWithPath: $0) }, handover: handsOver ? LaneHandover() : nil))
        let bar = ProgressBar(label: OutputOptions.name(of: output), output: context.errorOutput)
        let progress = Task {
            for await p in transcoder.progressUpdates {
                bar.update(fraction: p.fraction)
            }
        }
        let summary: Transcoder.Summary
        do {
            summary = try await transcoder.run()
        } catch {
            progress.cancel()
            bar.clear()
            throw error
        }
        _ = await progress.value
        bar.update(fraction: 1)
        bar.finish()
        for notice in summary.plan.notices {
            context.errorOutput.writeLine("note: \(notice)")
        }
        if let dry = summary.stitch.videoBufferUnderflow {
            context.errorOutput.writeLine("note: the video runs the --buffer-size model dry at \(dry) (lowest "
                                          + "\(summary.stitch.videoBufferLowestPercent ?? 0) %); a player that keeps to "
                                          + "--max-bitrate may stall there: give a larger --buffer-size or a lower rate")
        }
        if let report = summary.quality, !json {
            for line in VerifyCommand.describe(report) { context.errorOutput.writeLine("verify: " + line) }
            if let path = request.quality?.reportPath ?? (report.passed ? nil : output + ".verify.html") {
                context.errorOutput.writeLine("verify: report written to \(path)")
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            // Every frame's figures are in the report file; the summary keeps the rest.
            var printed = summary
            printed.quality?.series = nil
            context.output.writeLine(String(decoding: try encoder.encode(printed), as: UTF8.self))
        } else if let package = summary.package {
            context.output.writeLine(Self.describe(package, output: output, segments: summary.plan.segments.count))
        } else {
            let audio = summary.stitch.audioPackets > 0 ? ", \(summary.stitch.audioPackets) audio packets" : ""
            let handed = summary.handovers.isEmpty ? ""
                : " (\(summary.handovers.count) handed over to idle lanes)"
            context.output.writeLine("wrote \(output): \(summary.plan.segments.count) segments\(handed), "
                                     + "\(summary.stitch.videoFrames) video frames\(audio), \(summary.stitch.bytes / 1024) KiB")
        }
        return .success
    }

    /// The line that says what a package holds (`transcode OUT.m3u8`, `stitch DIR OUT.m3u8`).
    static func describe(_ package: PackageSummary, output: String, segments: Int) -> String {
        let names = package.renditions.map { "\($0.folder) (\($0.peakBitrate / 1000) kbit/s peak)" }.joined(separator: ", ")
        return "wrote \(output): \(segments) segments, \(package.renditions.count) renditions: \(names); \(package.bytes / 1024) KiB"
    }
}
