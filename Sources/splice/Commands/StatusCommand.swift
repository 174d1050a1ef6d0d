import Foundation
import SpliceCore
import SpliceWire

/// `splice status JOB [--json]`: one job's state and progress, and its segments with what each
/// one's video came to.
struct StatusCommand: ClientCommand {
    static let job = Positional<JobID>(
        "job", help: "The job id `splice submit` printed.", expected: "a job id (the UUID `splice submit` printed)"
    ) { JobID($0) }
    static let json = Flag("json", help: "Print the coordinator's JOB_STATUS as JSON.")

    static let configuration = CommandConfiguration(
        name: "status", abstract: "Show a job's state, progress and segments (video bytes, bit rate, mean QP).",
        arguments: [job, json] + ClientOptions.arguments)

    let job: JobID
    let json: Bool
    let client: ClientOptions

    init(_ arguments: ParsedArguments) throws {
        job = try arguments.value(Self.job)
        json = arguments[Self.json]
        client = try ClientOptions(arguments)
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let status = try await client.withClient { try await $0.status(of: job) }
        if json {
            try context.output.writeJSON(status)
        } else {
            for line in Self.lines(for: status) { context.output.writeLine(line) }
        }
        return .success
    }

    /// The text form: one `label  value` line per field, then the segments' table.
    static func lines(for status: JobStatus) -> [String] {
        fieldLines(for: status) + (status.segments.map { [""] + segmentTable($0).lines } ?? [])
    }

    /// Each segment's state and, once done, its video: KiB, bit rate over its span, the encoder's
    /// mean frame QP (`-` where there is none: audio segments, segments not done yet); for a
    /// measured job (`--verify`, `--target-quality`) also its CRF, PSNR and SSIM (luma) and the
    /// PSNR of its worst second.
    static func segmentTable(_ segments: [SegmentStatus]) -> TextTable {
        let measured = segments.contains { $0.figures?.quality != nil || $0.figures?.crf != nil }
        var headers = ["SEGMENT", "STATE", "VIDEO KiB", "KBIT/S", "MEAN QP"]
        if measured { headers += ["CRF", "PSNR Y", "SSIM Y", "WORST 1S"] }
        return TextTable(headers: headers, rows: segments.map { segment in
            let figures = segment.figures
            var row = [
                String(segment.index), segment.state.rawValue, figures.map { String($0.videoBytes / 1024) } ?? "-",
                figures?.videoBitsPerSecond.map { String(($0 + 500) / 1000) } ?? "-",
                figures?.meanQP.map { String(format: "%.2f", $0) } ?? "-",
            ]
            if measured {
                let q = figures?.quality
                row += [figures?.crf.map { String(format: "%g", $0) } ?? "-", q.map { String(format: "%.2f", $0.psnrY) } ?? "-",
                        q.map { String(format: "%.4f", $0.ssimY) } ?? "-",
                        q.map { String(format: "%.2f", $0.worstSecondPSNRY) } ?? "-"]
            }
            return row
        })
    }

    /// The measured segments' figures as one line (`quality` field): PSNR of their frames' mean
    /// squared error and mean SSIM (luma), and the worst second.
    static func qualityLine(_ segments: [SegmentStatus]) -> String? {
        guard let q = SegmentQuality.combined(segments.compactMap { $0.figures?.quality }) else { return nil }
        let measured = segments.filter { $0.figures?.quality != nil }.count
        return String(format: "PSNR Y %.2f dB, SSIM Y %.4f over %d frames of %d segments; worst second %.2f dB",
                      q.psnrY, q.ssimY, q.frames, measured, q.worstSecondPSNRY)
    }

    private static func fieldLines(for status: JobStatus) -> [String] {
        var fields = [
            ("job", status.job.description),
            ("state", status.state.rawValue),
            ("progress", progress(of: status)),
            ("input", status.input),
            ("output", status.output),
            ("priority", String(status.priority)),
            ("submitted", ClusterText.time(millisecondsSinceEpoch: status.submittedAtMilliseconds) + " UTC"),
        ]
        if let finished = status.finishedAtMilliseconds {
            fields.append(("finished", ClusterText.time(millisecondsSinceEpoch: finished) + " UTC"))
        }
        if let line = status.segments.flatMap(qualityLine) { fields.append(("quality", line)) }
        if let error = status.error { fields.append(("error", error)) }
        if let waiting = status.waiting { fields.append(("waiting", waiting)) }
        if let started = status.backupsStarted {
            fields.append(("backups", "\(started) started, \(status.backupsWon ?? 0) won"))
        }
        return TextTable(headers: ["", ""], rows: fields.map { [$0.0, $0.1] }).lines.dropFirst().map { $0 }
    }

    /// `5/12 segments (41%)`, or `not planned yet` before the segment count is known.
    static func progress(of status: JobStatus) -> String {
        guard let total = status.segmentsTotal else { return "not planned yet" }
        return "\(status.segmentsDone)/\(total) segments (\(percent(status.fraction))%)"
    }

    /// The whole percent of a 0…1 fraction, rounded down (99% until the output exists).
    static func percent(_ fraction: Double) -> Int {
        guard fraction.isFinite else { return 0 }
        return Int((min(max(fraction, 0), 1) * 100).rounded(.down))
    }
}
