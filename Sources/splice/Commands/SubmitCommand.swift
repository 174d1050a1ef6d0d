import Foundation
import SpliceCore
import SpliceJSON
import SpliceMedia
import SpliceWire
import Synchronization

#if canImport(Glibc)
import Glibc
import SpliceClient
#endif

/// `splice submit INPUT OUTPUT [export flags] [--segment-seconds S] [--priority P] [--wait]`:
/// hands a job to the cluster's coordinator.
struct SubmitCommand: ClientCommand {
    static let input = Positional<String>("input",
        help: "The source: a file on storage the coordinator and the workers can read, an http(s) URL, or an "
            + "object s3://BUCKET/KEY the coordinator reads (its --source-protocols decide which).") { $0 }
    static let output = Positional<String>("output",
        help: "The file to write (.mp4, .mov, .mkv, .webm) as the coordinator sees it, or an object "
            + "s3://BUCKET/KEY the coordinator writes.") { $0 }
    static let segmentSeconds = TranscodeCommand.segmentSeconds
    static let audioSegmentSeconds = TranscodeCommand.audioSegmentSeconds
    static let priority = Option<Int>("priority", valueName: "number",
        help: "Higher runs first, from -1000 to 1000 (default 0).")
    static let wait = Flag("wait",
        help: "Wait for the job with a progress bar; exit 0 if it succeeded, 1 if it failed, 2 if it was cancelled.")
    static let json = Flag("json", help: "Print JSON: the job id, or with --wait the job's final status.")

    static let configuration = CommandConfiguration(
        name: "submit", abstract: "Submit a transcode job to the cluster.",
        discussion: """
            Relative paths are made absolute here; the coordinator and the workers must see the \
            files at those paths (shared storage). Objects (s3://BUCKET/KEY) are read and written by \
            the coordinator with its own credentials; this command needs none, and the workers never \
            see them. Without --wait, prints the job id and exits. \
            With --wait, shows segments done and an ETA until the job ends, riding out a \
            coordinator restart; Ctrl-C stops waiting but leaves the job running (`splice cancel \
            JOB` cancels it). The coordinator refuses a job at once (exit 1, with the reason) whose \
            input it cannot read, whose output folder is missing or not writable, whose output is the \
            input, or whose output exists (unless -y), and paths outside its --input-root and \
            --output-root folders. An output named OUT.m3u8 or OUT.mpd makes a streaming package \
            (see `splice help transcode`): every segment task encodes all rungs of its segment on one \
            worker, and the coordinator packages the renditions when it stitches.
            """,
        arguments: [input, output, segmentSeconds, audioSegmentSeconds, priority, wait, json] + ExportOptions.arguments
            + PackageOptions.arguments + QualityOptions.jobArguments + OutputOptions.arguments + ClientOptions.arguments)

    let input: String
    let output: String
    /// nil: not given (the default, which the planner may lengthen).
    let segmentDuration: MediaTime?
    let priority: Int?
    let wait: Bool
    let json: Bool
    /// What the cluster is asked to make, checked once here (the coordinator checks it again on
    /// its side of the wire, and the files against its own view).
    let request: TranscodeRequest
    let client: ClientOptions
    /// Chosen once per invocation and sent with every resend of the SUBMIT, so the coordinator
    /// creates one job however many times the request travels.
    let submissionKey: String

    /// The exit status for a job that failed (its error printed) and one that was cancelled.
    static let jobFailed = ExitCode(1)
    static let jobCancelled = ExitCode(2)

    init(_ arguments: ParsedArguments) throws {
        input = try arguments.value(Self.input)
        output = try arguments.value(Self.output)
        segmentDuration = arguments.contains(Self.segmentSeconds.spec) ? try arguments.value(Self.segmentSeconds) : nil
        priority = arguments[Self.priority]
        wait = arguments[Self.wait]
        json = arguments[Self.json]
        var request = try ExportOptions(arguments).request(output: output, segmentDuration: segmentDuration,
                                                           audioSegmentDuration: arguments[Self.audioSegmentSeconds],
                                                           overwrite: try OutputOptions(arguments).overwrite)
        try PackageOptions(arguments, output: output).apply(to: &request)
        if let quality = try QualityOptions.request(arguments) {
            request.quality = quality
            do { try request.validate() } catch { throw UsageError(error) }
        }
        self.request = request
        client = try ClientOptions(arguments)
        submissionKey = UUID().uuidString
    }

    func validate() throws {
        try client.validate()
        if output.contains("://") && !StorageRegistry.isStored(output) {
            throw UsageError("<output>: '\(output)' is a URL; the coordinator writes a file or an object (s3://BUCKET/KEY), "
                             + "so give a path it can write or an object location")
        }
        guard Self.sourceLocation(input) != Self.location(output) else {
            throw UsageError("<output> is the same file as <input>; write the result somewhere else")
        }
        if let priority, !(-1000...1000).contains(priority) {
            throw UsageError("--priority must be from -1000 to 1000; got \(priority)")
        }
    }

    /// The SUBMIT request: absolute paths, the export settings, the invocation's submission key.
    func submission() throws -> SubmitJob {
        SubmitJob(input: Self.sourceLocation(input), output: Self.location(output),
                  export: try JSONPayload(encoding: request), priority: priority, submissionKey: submissionKey)
    }

    /// The input as the coordinator gets it: a URL or another FFmpeg protocol (`https://…`,
    /// `concat:…`) as given — the coordinator's `--source-protocols` decides — and a path made absolute.
    static func sourceLocation(_ input: String) -> String {
        if let colon = input.firstIndex(of: ":"), !input.hasPrefix("/"), !input.hasPrefix("."),
           input[..<colon].allSatisfy({ $0.isLetter || $0.isNumber || "+-.,".contains($0) }) {
            return input
        }
        return absolutePath(input)
    }

    /// An output (or a root) as the coordinator gets it: an object location (`s3://…`) as given, a
    /// path made absolute.
    static func location(_ text: String) -> String {
        StorageRegistry.isStored(text) ? text : absolutePath(text)
    }

    /// `path` made absolute against the working directory, with `.` and `..` resolved.
    static func absolutePath(_ path: String) -> String {
        let directory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
        return URL(fileURLWithPath: path, relativeTo: directory).standardizedFileURL.path
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
        let submission = try submission()
        return try await client.withClient { client in
            let job = try await Self.submit(submission, with: client)
            guard wait else {
                if json {
                    try context.output.writeJSON(JobSubmitted(job: job))
                } else {
                    context.output.writeLine(job.description)
                }
                return .success
            }
            context.errorOutput.writeLine("job \(job) submitted; waiting for it (Ctrl-C stops waiting, not the job)")
            return try await waitForOutcome(of: job, client: client, context: context)
        }
    }

    /// Submits, saying in the CLI's words what the coordinator refused in the API's: its ERROR
    /// names the request's fields (`export.overwrite`), which are this command's flags here.
    static func submit(_ submission: SubmitJob, with client: SpliceClient) async throws -> JobID {
        do {
            return try await client.submit(submission)
        } catch where error.apiError?.code == .outputExists {
            throw OutputDestination.exists(submission.output)
        }
    }

    private func waitForOutcome(of job: JobID, client: SpliceClient, context: CommandContext) async throws -> ExitCode {
        let display = JobWaitDisplay(label: OutputOptions.name(of: output), output: context.errorOutput)
        let final: JobStatus
        do {
            final = try await client.waitForCompletion(of: job, pollInterval: .milliseconds(500)) { display.show($0) }
        } catch where error.code == .cancelled {
            display.stop(succeeded: false)
            let name = context.commandPath.joined(separator: " ")
            context.errorOutput.writeLine("\(name): stopped waiting; job \(job) is still running. Follow it with "
                                          + "`splice status \(job)`, cancel it with `splice cancel \(job)`")
            return .stopped(by: context.shutdown.signal ?? SIGINT)
        } catch {
            display.stop(succeeded: false)
            throw error
        }
        display.stop(succeeded: final.state == .succeeded)
        if json { try context.output.writeJSON(final) }
        return Self.report(final, commandPath: context.commandPath, output: context.output,
                           errorOutput: context.errorOutput, quiet: json)
    }

    /// Prints a finished job's outcome and returns the exit status for it.
    static func report(_ status: JobStatus, commandPath: [String], output: TextOutput, errorOutput: TextOutput,
                       quiet: Bool = false) -> ExitCode {
        let name = commandPath.joined(separator: " ")
        switch status.state {
        case .succeeded:
            if !quiet { output.writeLine("job \(status.job) succeeded: \(status.output)") }
            return .success
        case .cancelled:
            errorOutput.writeLine("\(name): job \(status.job) was cancelled")
            return jobCancelled
        case .failed:
            errorOutput.writeLine("\(name): job \(status.job) failed: \(status.error ?? "no reason was recorded")")
            return jobFailed
        case .queued, .planning, .running, .stitching:
            // Only a finished job is reported; a wait never returns one that still runs.
            errorOutput.writeLine("\(name): job \(status.job) is still \(status.state.rawValue)")
            return jobFailed
        }
    }
}

