import CSpliceSystem
import Foundation
import Synchronization
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
    /// In a child process running `executable media-task` (the `splice` binary). Files it
    /// writes before uploading them to object storage (a `faststart` MP4, a package) go to
    /// `staging` (its `TMPDIR`; the system's temporary folder when nil).
    case childProcess(executable: String, staging: String? = nil)
}

/// One step for a child process: its input on standard input, its `MediaTaskResult` on standard
/// output (docs/coordinator.md, Media tasks).
public enum MediaTask: Sendable, Codable, Hashable {
    /// Probe `source` and plan it as `request` asks, for `lanes` encoders at once.
    case plan(source: String, request: TranscodeRequest, lanes: Int)
    /// Join `segments` (index → file, with their SHA-256 `checksums`) into `output`; a verified
    /// plan's output is then checked (``StitchVerification``), with the segments' `figures`.
    case stitch(
        plan: SegmentPlan, segments: [Int: String], checksums: [Int: SHA256Digest], output: String, overwrite: Bool,
        figures: [Int: SegmentFigures]? = nil)
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
            case .stitch(let plan, let segments, let checksums, let output, let overwrite, _) where plan.package != nil:
                // A streaming package: the renditions are written from the same segment files.
                return .stitch(try await Packager(plan: plan).package(
                    segments: segments, checksums: checksums, to: output, overwrite: overwrite).stitchSummary)
            case .stitch(let plan, let segments, let checksums, let output, let overwrite, let figures):
                var summary = try await Stitcher(plan: plan).stitch(
                    segments: segments, checksums: checksums, to: output, overwrite: overwrite)
                if let request = plan.quality, request.verify != nil {
                    // The joins' checks, on the segments' own figures; a failed output is removed
                    // (--verify fail) and its report kept. (Object outputs are refused --verify at SUBMIT.)
                    let url = URL(fileURLWithPath: output)
                    var report = try await StitchVerification(plan: plan).verify(segments: segments, output: url,
                                                                                 figures: figures ?? [:])
                    try QualityGate.conclude(report, request: request, output: url)
                    report.series = nil
                    summary.quality = report
                }
                return .stitch(summary)
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

/// One `splice media-task` child: the task on its standard input, the result from its standard
/// output. Its environment holds `PATH`, and for object storage (it reads `s3://` sources and
/// writes `s3://` outputs itself) `HOME` and the coordinator's `AWS_*` variables, with `TMPDIR`
/// the staging folder — nothing else of the coordinator's settings: no database URL, no keys. It
/// dies with the coordinator (it asks the kernel for SIGKILL when its parent goes), and is sent
/// SIGTERM when the calling task is cancelled (it then stops, removing or aborting what it wrote).
struct MediaTaskChild {
    let executable: String
    let task: MediaTask
    let staging: String?

    /// What the child's environment holds (see the type's comment).
    static func environment(staging: String?) -> [String] {
        let parent = ProcessInfo.processInfo.environment
        var variables = ["PATH=" + (parent["PATH"] ?? "/usr/bin:/bin")]
        if let home = parent["HOME"] { variables.append("HOME=" + home) }
        for (name, value) in parent.sorted(by: { $0.key < $1.key }) where name.hasPrefix("AWS_") {
            variables.append(name + "=" + value)
        }
        if let staging { variables.append("TMPDIR=" + staging) }
        return variables
    }

    func run() async throws(MediaError) -> MediaTaskOutput {
        let input: Data
        do {
            input = try JSONEncoder().encode(task)
        } catch {
            throw MediaError(.internalError, "cannot encode the \(task.name) task: \(error)")
        }
        let child = SpawnedChild()
        let outcome: (status: Int32, signalled: Bool, output: Data)
        do {
            outcome = try await withTaskCancellationHandler {
                try await Self.launch(executable, input: input, environment: Self.environment(staging: staging), child: child)
            } onCancel: {
                child.terminate()
            }
        } catch {
            throw MediaError(.internalError, "cannot start the \(task.name) process \(executable): \(error)",
                             isRetryable: true)
        }
        // A child that finished before the SIGTERM took effect did write its output: say so,
        // so that the caller removes it if it must (a job cancelled while it was stitched).
        if Task.isCancelled {
            if !outcome.signalled, outcome.status == 0,
               case .succeeded(let output)? = try? JSONDecoder().decode(MediaTaskResult.self, from: outcome.output) {
                return output
            }
            throw MediaError.cancelled("the \(task.name)")
        }
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
    ///
    /// `posix_spawn` and `waitpid`, not Foundation's `Process`: to find the highest descriptor to
    /// close, `Process.run()` reads /proc/self/fd and copies each entry's whole 256-byte `d_name`,
    /// past the end of the directory buffer when the last entry sits at its end — a crash (a bad
    /// pointer in that memcpy) once the process holds about 1,365 descriptors (24-byte entries fill
    /// glibc's 32 KiB buffer): a coordinator with that many workers connected, or the test suite's
    /// process with clusters left running (seen at 1,375).
    /// The child gets the pipes as stdin and stdout, the coordinator's stderr, the environment
    /// ``environment(staging:)`` makes, and no other descriptor.
    private static func launch(_ executable: String, input: Data, environment: [String], child: SpawnedChild) async throws
        -> (status: Int32, signalled: Bool, output: Data)
    {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                do {
                    continuation.resume(returning: try run(executable, input: input, environment: environment, child: child))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.name = "splice.media-task"
            thread.start()
        }
    }

    private static func run(_ executable: String, input: Data, environment: [String], child: SpawnedChild) throws
        -> (status: Int32, signalled: Bool, output: Data)
    {
        var toChild: [Int32] = [-1, -1], fromChild: [Int32] = [-1, -1]
        guard pipe(&toChild) == 0 else { throw POSIXError.fromErrno() }
        guard pipe(&fromChild) == 0 else {
            close(toChild[0]); close(toChild[1])
            throw POSIXError.fromErrno()
        }
        // Close-on-exec, so that no other child spawned meanwhile holds them (and keeps our read
        // end from its end of file); our own child gets them as 0 and 1 only.
        for fd in toChild + fromChild { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        splice_spawn_actions_closefrom(&actions, 3)
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(executable), strdup("media-task"), nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        close(toChild[0])
        close(fromChild[1])
        guard spawned == 0 else {
            close(toChild[1]); close(fromChild[0])
            throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO)
        }
        child.started(pid)
        // Write the task, then read to the end; a child that dies early ends both (EPIPE, EOF).
        input.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = write(toChild[1], bytes.baseAddress! + offset, bytes.count - offset)
                if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { break }
            }
        }
        close(toChild[1])
        var output = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fromChild[0], $0.baseAddress!, $0.count) }
            if n > 0 { output.append(contentsOf: buffer[..<n]) } else if n < 0 && errno == EINTR { continue } else { break }
        }
        close(fromChild[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        child.ended()
        // WIFSIGNALED / WTERMSIG / WEXITSTATUS are macros: the signal in the low 7 bits, else the
        // exit code in bits 8-15.
        let signal = status & 0x7f
        return signal != 0 ? (signal, true, output) : ((status >> 8) & 0xff, false, output)
    }
}

/// The pid of a running media-task child, for cancellation: SIGTERM while it runs, nothing once
/// it has been waited for (its pid may be someone else's by then).
private final class SpawnedChild: Sendable {
    private let pid = Mutex<pid_t?>(nil)
    private let cancelled = Atomic<Bool>(false)

    func started(_ child: pid_t) {
        pid.withLock { $0 = child }
        if cancelled.load(ordering: .acquiring) { terminate() }
    }

    func ended() {
        pid.withLock { $0 = nil }
    }

    func terminate() {
        cancelled.store(true, ordering: .releasing)
        pid.withLock { current in
            if let current { kill(current, SIGTERM) }
        }
    }
}

extension POSIXError {
    /// The error `errno` names now.
    fileprivate static func fromErrno() -> POSIXError {
        POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
}
