import Foundation
import SpliceMedia

/// `splice verify SOURCE OUTPUT`: an output checked against its source, frame by frame.
struct VerifyCommand: Command {
    static let source = Positional<String>("source", help: "The media file the output was made from.") { $0 }
    static let output = Positional<String>("output", help: "The file to check.") { $0 }
    static let json = Flag("json", help: "Print the whole report as JSON (every frame's figures included).")
    static let report = Option<String>("report", valueName: "file.html",
        help: "Also write the report as one self-contained HTML page (a per-frame plot with the joins, a table per segment).") { $0 }
    static let plan = Option<String>("plan", valueName: "plan.json",
        help: "The job's plan (plan.json from transcode --keep-segments, or transcode --json's output): its segments, "
            + "joins, range and frame rate. Without it each output keyframe starts a segment.") { $0 }
    static let start = Option<MediaTime>("start", valueName: "time", help: "Where in the source the output starts (its --start).")
    static let duration = Option<MediaTime>("duration", valueName: "time", help: "How much of the source the output holds (its --duration).")
    static let frameRate = Option<Rational>("frame-rate", valueName: "rate",
        help: "The output's constant frame rate, when it was made with --frame-rate: each source frame fills the slots up to the next.")
    static let threads = Option<Int>("threads", valueName: "count", help: "Threads for the decoders and the metrics (default: FFmpeg's choice).",
                                     default: 0)

    static let configuration = CommandConfiguration(
        name: "verify", abstract: "Check an output against its source: frames, PSNR/SSIM per frame and segment, joins, audio.",
        discussion: """
            The source is decoded and fitted exactly as Splice's encode fits it (scaled to the output's size, \
            padded, turned upright, tone mapped when an HDR source became SDR, from --start, on the --frame-rate \
            grid) and every output frame is scored against the source frame at its time with FFmpeg's own psnr \
            and ssim filters. Checked: frame count and presentation times (missing, extra, repeated or dropped \
            pictures, named by segment and time); each segment's PSNR and SSIM (luma), its worst frame and worst \
            second; the dip at every video join; per audio track the sample count, where it starts against the \
            video, the cross-correlation lag at the start, every join and the end, and the blocks at every join. \
            VMAF: \(QualityTarget.vmafAvailable ? "this FFmpeg has libvmaf, but Splice does not drive it yet" : "not available (this FFmpeg's libavfilter has no libvmaf, as Debian's)").

            Exit status: 0 when every check passes, 2 when one fails, 1 when the files cannot be compared.
            """,
        arguments: [source, output, json, report, plan, start, duration, frameRate, threads] + QualityOptions.thresholdArguments,
        environment: [.ffmpegLog])

    let options: OutputVerifier.Options
    let json: Bool
    let reportPath: String?

    init(_ arguments: ParsedArguments) throws {
        let source = try arguments.value(Self.source)
        let output = try arguments.value(Self.output)
        json = arguments[Self.json]
        reportPath = arguments[Self.report]
        var plan: SegmentPlan?
        if let path = arguments[Self.plan] { plan = try Self.loadPlan(path) }
        var range: MediaTimeRange?
        if arguments[Self.start] != nil || arguments[Self.duration] != nil {
            range = MediaTimeRange(start: arguments[Self.start] ?? .zero,
                                   duration: arguments[Self.duration] ?? MediaTime(seconds: 1 << 40))
        }
        let thresholds = QualityOptions.thresholds(arguments, over: plan?.quality?.thresholds ?? QualityThresholds())
        options = OutputVerifier.Options(source: source, output: output, range: range, frameRate: arguments[Self.frameRate],
                                         plan: plan, thresholds: thresholds, threads: try arguments.value(Self.threads))
    }

    func validate() throws {
        do { try options.thresholds.validate() } catch { throw UsageError(error) }
        if let duration = options.range?.duration, duration <= .zero { throw UsageError("--duration must be longer than zero") }
        guard (0...64).contains(options.threads) else { throw UsageError("--threads must be from 0 to 64; got \(options.threads)") }
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let report = try await OutputVerifier(options: options).run()
        if let reportPath {
            do {
                try Data(QualityReportPage(report: report).html.utf8).write(to: URL(fileURLWithPath: reportPath), options: .atomic)
            } catch {
                throw MediaError(.writeFailed, "cannot write the report '\(reportPath)': \(error.localizedDescription)")
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            context.output.writeLine(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            for line in Self.describe(report) { context.output.writeLine(line) }
        }
        return report.passed ? .success : ExitCode(2)
    }

    /// The report for people: a verdict line, the figures, then each problem.
    static func describe(_ report: QualityReport) -> [String] {
        var lines: [String] = []
        let q = report.overall
        let figures = q.map { String(format: "PSNR Y %.2f dB, SSIM Y %.4f, worst second %.2f dB", $0.psnrY, $0.ssimY, $0.worstSecondPSNRY) }
        lines.append("\(report.passed ? "passed" : "FAILED"): \(report.frames.output) frames (source \(report.frames.expected)), "
                     + "\(figures ?? "nothing measured"); \(report.segments.count) segments, \(report.videoJoins.count) joins"
                     + (report.audio.isEmpty ? "" : ", \(report.audio.count) audio track" + (report.audio.count == 1 ? "" : "s")))
        for problem in report.problems { lines.append("  " + problem.message) }
        return lines
    }

    /// A plan.json, or `transcode --json`'s summary (its `plan`).
    static func loadPlan(_ path: String) throws -> SegmentPlan {
        struct Summary: Decodable { var plan: SegmentPlan }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw UsageError("cannot read --plan '\(path)': \(error.localizedDescription)")
        }
        if let plan = try? JSONDecoder().decode(SegmentPlan.self, from: data) { return plan }
        if let summary = try? JSONDecoder().decode(Summary.self, from: data) { return summary.plan }
        throw UsageError("--plan '\(path)' is neither a plan.json (transcode --keep-segments) nor transcode --json's output")
    }
}
