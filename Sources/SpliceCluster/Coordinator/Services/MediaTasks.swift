import Foundation
public import SpliceCore
public import SpliceMedia

/// The two steps of a job that read media in the coordinator: planning (probe the source, cut
/// it) and stitching (join the segment files). Both hand FFmpeg files a client chose, so a bug it
/// has on one of them must cost that job, not the coordinator: run in a child process
/// (`splice media-task`, what `splice coordinator` does), a crash — a signal, an abort — is a
/// failed step that fails the job, and a restarted coordinator never replays it. In process (the
/// library's default, for tests and embedding) the steps run on threads of their own.
public enum MediaTaskIsolation: Sendable, Hashable {
    /// On threads of this process.
    case inProcess
    /// In a child process running `executable media-task` (the `splice` binary).
    case childProcess(executable: String)
}

/// One step for a child process: its input on standard input, its `MediaTaskResult` on standard
/// output (docs/coordinator.md, Media tasks).
public enum MediaTask: Sendable, Codable, Hashable {
    /// Probe `source` and plan it as `request` asks, for `lanes` encoders at once.
    case plan(source: String, request: TranscodeRequest, lanes: Int)
    /// Join `segments` (index → file, with their SHA-256 `checksums`) into `output`.
    case stitch(
        plan: SegmentPlan, segments: [Int: String], checksums: [Int: SHA256Digest], output: String, overwrite: Bool)
    /// Cut segment `segment`'s source excerpt (``SourceExcerpt``) from `plan.source` into `output`,
    /// for a worker that cannot see the source.
    case excerpt(plan: SegmentPlan, segment: Int, output: String)
    /// Cut the excerpts of `segments`, one after the other, into `directory` as `x-s<index>.splseg`
    /// (one child for a whole job, rather than one per ASSIGN).
    case excerpts(plan: SegmentPlan, segments: [Int], directory: String)

    /// Runs the step here. Any error comes out as a `MediaError` (settings errors as
    /// `invalidSettings`), so the same failure reads the same in and out of process.
    public func run() async throws(MediaError) -> MediaTaskOutput {
        do {
            switch self {
            case .plan(let source, let request, let lanes):
                return .plan(try await Self.makePlan(source: source, request: request, lanes: lanes))
            case .stitch(let plan, let segments, let checksums, let output, let overwrite) where plan.package != nil:
                // A streaming package: the renditions are written from the same segment files.
                return .stitch(try await Packager(plan: plan).package(
                    segments: segments, checksums: checksums, to: URL(fileURLWithPath: output), overwrite: overwrite).stitchSummary)
            case .stitch(let plan, let segments, let checksums, let output, let overwrite):
                return .stitch(try await Stitcher(plan: plan).stitch(
                    segments: segments, checksums: checksums, to: URL(fileURLWithPath: output), overwrite: overwrite))
            case .excerpt(let plan, let segment, let output):
                return .excerpt(try await SourceExcerpt.cut(plan: plan, segment: segment, to: URL(fileURLWithPath: output)))
            case .excerpts(let plan, let segments, let directory):
                var written: [Int: SourceExcerpt.Written] = [:]
                for segment in segments {
                    written[segment] = try await SourceExcerpt.cut(
                        plan: plan, segment: segment, to: URL(fileURLWithPath: directory).appendingPathComponent("x-s\(segment).splseg"))
                }
                return .excerpts(written)
            }
        } catch let error as MediaError {
            throw error
        } catch let error as SettingsError {
            throw MediaError(.invalidSettings, "invalid settings: \(error)")
        } catch is CancellationError {
            throw MediaError.cancelled("the \(name)")
        } catch {
            throw MediaError(.internalError, "the \(name) failed: \(error)", isRetryable: true)
        }
    }

    /// `planning`, `stitching`: for messages.
    var name: String {
        switch self {
        case .plan: "planning"
        case .stitch: "stitching"
        case .excerpt, .excerpts: "excerpt"
        }
    }

    /// Probes the source and plans it exactly as `splice transcode` does.
    static func makePlan(source: String, request: TranscodeRequest, lanes: Int) async throws -> SegmentPlan {
        try request.validate()
        return try await SegmentPlanner.plan(source: source, request: request, lanes: lanes)
    }
}

/// What a `MediaTask` produced.
public enum MediaTaskOutput: Sendable, Codable, Hashable {
    case plan(SegmentPlan)
    case stitch(StitchSummary)
    case excerpt(SourceExcerpt.Written)
    case excerpts([Int: SourceExcerpt.Written])
}

/// What a child process writes on standard output: the output, or the error as a `MediaError`'s
/// parts.
public enum MediaTaskResult: Sendable, Codable, Hashable {
    case succeeded(MediaTaskOutput)
    case failed(code: MediaError.Code, message: String, retryable: Bool)

    public var error: MediaError? {
        guard case .failed(let code, let message, let retryable) = self else { return nil }
        return MediaError(code, message, isRetryable: retryable)
    }
}

/// Runs media tasks as the configuration says.
public struct MediaTaskRunner: Sendable {
    let isolation: MediaTaskIsolation

    public init(isolation: MediaTaskIsolation) {
        self.isolation = isolation
    }

    func run(_ task: MediaTask) async throws(MediaError) -> MediaTaskOutput {
        switch isolation {
        case .inProcess:
            return try await task.run()
        case .childProcess(let executable):
            return try await MediaTaskChild(executable: executable, task: task).run()
        }
    }

    func plan(source: String, request: TranscodeRequest, lanes: Int) async throws(MediaError) -> SegmentPlan {
        guard case .plan(let plan) = try await run(.plan(source: source, request: request, lanes: lanes)) else {
            throw MediaError(.internalError, "the planning step answered with something else than a plan")
        }
        return plan
    }

    func stitch(plan: SegmentPlan, segments: [Int: String], checksums: [Int: SHA256Digest], output: String,
                overwrite: Bool) async throws(MediaError) -> StitchSummary {
        let task = MediaTask.stitch(plan: plan, segments: segments, checksums: checksums, output: output,
                                    overwrite: overwrite)
        guard case .stitch(let summary) = try await run(task) else {
            throw MediaError(.internalError, "the stitching step answered with something else than a summary")
        }
        return summary
    }

    /// Cuts segment `segment`'s source excerpt into `output` (a source that is gone or unreadable
    /// fails with the reason, `file-not-found`); returns its size and SHA-256 for the transfer.
    public func excerpt(plan: SegmentPlan, segment: Int, output: String) async throws(MediaError) -> SourceExcerpt.Written {
        guard case .excerpt(let written) = try await run(.excerpt(plan: plan, segment: segment, output: output)) else {
            throw MediaError(.internalError, "the excerpt step answered with something else than an excerpt")
        }
        return written
    }

    /// Cuts the excerpts of `segments` into `directory` in one step (``MediaTask/excerpts(plan:segments:directory:)``).
    public func excerpts(plan: SegmentPlan, segments: [Int], directory: String) async throws(MediaError)
        -> [Int: SourceExcerpt.Written]
    {
        guard case .excerpts(let written) = try await run(.excerpts(plan: plan, segments: segments, directory: directory))
        else {
            throw MediaError(.internalError, "the excerpt step answered with something else than excerpts")
        }
        return written
    }
}

/// One `splice media-task` child: the task on its standard input, the result from its standard
/// output. It runs with an empty environment but `PATH` (nothing of the coordinator's settings,
/// no database URL), dies with the coordinator (it asks the kernel for SIGKILL when its parent
/// goes), and is killed when the calling task is cancelled.
private struct MediaTaskChild {
    let executable: String
    let task: MediaTask

    func run() async throws(MediaError) -> MediaTaskOutput {
        let input: Data
        do {
            input = try JSONEncoder().encode(task)
        } catch {
            throw MediaError(.internalError, "cannot encode the \(task.name) task: \(error)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["media-task"]
        process.environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.standardError
        let outcome: (status: Int32, signalled: Bool, output: Data)
        do {
            outcome = try await withTaskCancellationHandler {
                try await Self.launch(process, input: input, stdin: stdin, stdout: stdout)
            } onCancel: {
                if process.isRunning { process.terminate() }
            }
        } catch {
            throw MediaError(.internalError, "cannot start the \(task.name) process \(executable): \(error)",
                             isRetryable: true)
        }
        if Task.isCancelled { throw MediaError.cancelled("the \(task.name)") }
        if outcome.signalled {
            throw MediaError(
                .internalError,
                "the \(task.name) process crashed (signal \(outcome.status)) on this job's files; the job is failed "
                    + "so that it cannot take the coordinator down",
                isRetryable: false)
        }
        guard outcome.status == 0, let result = try? JSONDecoder().decode(MediaTaskResult.self, from: outcome.output)
        else {
            throw MediaError(.internalError, "the \(task.name) process exited with status \(outcome.status) "
                             + "without a result", isRetryable: false)
        }
        switch result {
        case .succeeded(let output): return output
        case .failed: throw result.error!
        }
    }

    /// Starts the child, writes the task, reads the whole result, waits for the exit — on a thread
    /// of its own, never on Swift's cooperative pool.
    private static func launch(_ process: Process, input: Data, stdin: Pipe, stdout: Pipe) async throws
        -> (status: Int32, signalled: Bool, output: Data)
    {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                do {
                    try process.run()
                    try stdin.fileHandleForWriting.write(contentsOf: input)
                    try stdin.fileHandleForWriting.close()
                    let output = stdout.fileHandleForReading.readDataToEndOfFile()
                    process.waitUntilExit()
                    continuation.resume(returning: (
                        process.terminationStatus, process.terminationReason == .uncaughtSignal, output))
                } catch {
                    if process.isRunning { process.terminate() }
                    continuation.resume(throwing: error)
                }
            }
            thread.name = "splice.media-task"
            thread.start()
        }
    }
}
