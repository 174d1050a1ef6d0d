import Foundation
import SpliceCluster
import SpliceCore
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

// The whole cluster as operators run it: `splice coordinator` and three `splice worker` daemons as
// child processes on one private Postgres, a shared spool, ZeroMQ over tcp://127.0.0.1, and jobs
// submitted with `splice submit --wait`. The oracle is `splice transcode` of the same input with
// the same flags (itself checked against ffmpeg in the media tests): with every encoder
// single-threaded both cut the same segments and encode them identically, so the decoded
// pictures and audio must match frame for frame and sample for sample.

@Suite("Cluster end to end: splice coordinator, three splice workers, splice submit", .timeLimit(.minutes(8)))
struct ClusterEndToEndTests {
    @Test("a job on three workers decodes exactly like `splice transcode` of the same input")
    func matchesTranscode() async throws {
        let cluster = try await LocalCluster.start(workers: 3)
        let output = cluster.outputPath("three-workers.mp4")
        let submit = try await cluster.submitWaiting(output)
        let result = await submit.finish(within: .seconds(300))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        #expect(result.stdout == "job \(job) succeeded: \(output)\n")

        try await EndToEndMedia.expectSameAsTranscode(output)
        let encoders = try await cluster.segmentsDone(job: job)
        #expect(encoders.count == EndToEndMedia.segments, "each segment committed exactly once")
        #expect(Set(encoders.values).count > 1, "the segments were spread over the workers: \(encoders)")
        #expect(cluster.spoolFiles().isEmpty, "segment files left behind: \(cluster.spoolFiles())")
        try await cluster.stop()
    }

    @Test("SIGKILL a worker mid-segment: its lease expires, the segment runs again elsewhere, the output is exact")
    func workerKilled() async throws {
        // Short leases, so the dead worker's segment comes back quickly; slow encodes, so the
        // kill lands inside one.
        let cluster = try await LocalCluster.start(workers: 3, leaseSeconds: 4)
        let output = cluster.outputPath("worker-killed.mp4")
        let submit = try await cluster.submitWaiting(output)
        let victim = try #require(await cluster.firstWorkerEncoding(), "no worker started a segment\n\(cluster.logs)")
        victim.process.signal(SIGKILL)
        let killed = await victim.process.exitStatus()
        #expect(killed?.signalled == true && killed?.status == SIGKILL)

        let result = await submit.finish(within: .seconds(300))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        try await EndToEndMedia.expectSameAsTranscode(output)

        let events = try await cluster.events(of: job)
        let victimID = try #require(try await cluster.workerID(named: victim.name))
        let victimLeases = events.filter { $0.kind == "segment_leased" && $0.workerID == victimID }
        let victimDone = events.filter { $0.kind == "segment_done" && $0.workerID == victimID }
        #expect(victimLeases.count > victimDone.count, "the killed worker held a lease it never completed")
        let retaken = victimLeases.compactMap(\.segmentID).filter { segment in
            !victimDone.contains { $0.segmentID == segment }
        }
        for segment in retaken {
            let done = events.filter { $0.kind == "segment_done" && $0.segmentID == segment }
            #expect(done.count == 1 && done[0].workerID != victimID && (done[0].attempt ?? 0) >= 2,
                    "segment \(segment) finished once, by another worker, on a later attempt")
        }
        #expect(try await cluster.segmentsDone(job: job).count == EndToEndMedia.segments)
        #expect(cluster.spoolFiles().isEmpty, "segment files left behind: \(cluster.spoolFiles())")
        try await cluster.stop()
    }

    @Test("SIGKILL the coordinator mid-job and start it again: the job completes and submit --wait reports it")
    func coordinatorKilled() async throws {
        var cluster = try await LocalCluster.start(workers: 3)
        let output = cluster.outputPath("coordinator-killed.mp4")
        let submit = try await cluster.submitWaiting(output)
        // Some segments done, some not: the job is well under way when the coordinator dies.
        #expect(await eventually(within: .seconds(120)) { EndToEndMedia.segmentsDone(in: submit.stderrText) >= 1 },
                "no progress: \(submit.stderrText)\n\(cluster.logs)")
        cluster.coordinator.signal(SIGKILL)
        let killed = await cluster.coordinator.exitStatus()
        #expect(killed?.signalled == true && killed?.status == SIGKILL)
        #expect(await submit.waitForStderr(containing: "coordinator unreachable, retrying", within: .seconds(60)))

        try await cluster.restartCoordinator()
        let result = await submit.finish(within: .seconds(300))
        #expect(result.status == 0, "submit: \(result.stderr)\n\(cluster.logs)")
        #expect(result.stderr.contains("coordinator reachable again"))
        let job = try #require(EndToEndMedia.job(in: result.stderr))
        #expect(result.stdout == "job \(job) succeeded: \(output)\n")
        try await EndToEndMedia.expectSameAsTranscode(output)
        #expect(try await cluster.segmentsDone(job: job).count == EndToEndMedia.segments,
                "each segment committed exactly once across the restart")
        try await cluster.stop()
    }

    @Test("splice cancel while the workers encode: they stop, partial files go, no output, submit --wait exits 2")
    func cancelled() async throws {
        let cluster = try await LocalCluster.start(workers: 3)
        let output = cluster.outputPath("cancelled.mp4")
        // veryslow: the encodes are still running when the CANCEL arrives.
        let submit = try await cluster.submitWaiting(output, preset: "veryslow")
        #expect(await cluster.firstWorkerEncoding() != nil, "no worker started a segment\n\(cluster.logs)")
        #expect(await submit.waitForStderr(containing: "submitted; waiting", within: .seconds(30)))
        let job = try #require(EndToEndMedia.job(in: submit.stderrText))
        let cancel = try await SpliceProcess.run(["cancel", job, "--coordinator", cluster.coordinator.api])
        #expect(cancel.status == 0, "\(cancel.stderr)")

        let result = await submit.finish(within: .seconds(120))
        #expect(result.status == 2, "submit: \(result.stderr)")
        #expect(await eventually(within: .seconds(60)) { cluster.spoolFiles().isEmpty },
                "partial files left behind: \(cluster.spoolFiles())")
        #expect(!FileManager.default.fileExists(atPath: output))
        let events = try await cluster.events(of: job)
        #expect(events.contains { $0.kind == "segment_cancelled" })
        #expect(events.filter { $0.kind == "segment_done" }.count < EndToEndMedia.segments)
        // The workers took the CANCEL and are free again: a new job runs to the end.
        let next = cluster.outputPath("after-cancel.mp4")
        let again = try await SpliceProcess.run(["submit", try await EndToEndMedia.source(), next, "--wait",
                                                 "--coordinator", cluster.coordinator.api] + EndToEndMedia.flags(),
                                                timeout: .seconds(300))
        #expect(again.status == 0, "\(again.stderr)\n\(cluster.logs)")
        try await cluster.stop()
    }
}

// MARK: - The media and the oracle

enum EndToEndMedia {
    /// 6 s, a keyframe every second, non-periodic stereo audio at 48 kHz.
    static let spec = Fixtures.ClipSpec(
        seconds: "6", width: 640, height: 360,
        videoCodec: ["-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-keyint_min", "30",
                     "-sc_threshold", "0", "-pix_fmt", "yuv420p"])
    /// One segment per second of source.
    static let segments = 6
    /// The same flags for the cluster and for the oracle. A slowish preset keeps each segment
    /// busy long enough for the kill and cancel tests to land inside an encode.
    static func flags(preset: String = "slow") -> [String] {
        ["--video-codec", "h264", "--preset", preset, "--crf", "26",
         "--audio-codec", "aac", "--audio-bitrate", "128k", "--segment-seconds", "1"]
    }

    static func source() async throws -> String { try await Fixtures.clip(spec) }

    /// `splice transcode` of the source, once per test process.
    static let reference = Task { () throws -> Digests in
        let output = Fixtures.temporaryDirectory("reference").appendingPathComponent("transcode.mp4").path
        let result = try await SpliceProcess.run(["transcode", try await source(), output, "--jobs", "2"] + flags(),
                                                 timeout: .seconds(300))
        guard result.status == 0 else { throw TestFailure("splice transcode failed: \(result.stderr)") }
        return try await Digests(of: output)
    }

    /// The job id `splice submit` names on standard error.
    static func job(in stderr: String) -> String? {
        let line = stderr.split(separator: "\n").first { $0.hasPrefix("job ") && $0.contains(" submitted") }
        return line?.split(separator: " ").dropFirst().first.map(String.init)
    }

    /// The highest "segments done" a `submit --wait` progress line has shown (`progress 50% 3/6`).
    static func segmentsDone(in stderr: String) -> Int {
        stderr.split(separator: "\n").filter { $0.hasPrefix("progress ") }.compactMap { line in
            line.split(separator: " ").last?.split(separator: "/").first.flatMap { Int($0) }
        }.max() ?? 0
    }

    static func expectSameAsTranscode(_ output: String,
                                      sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let (written, expected) = (try await Digests(of: output), try await reference.value)
        #expect(written.video.count == expected.video.count, "video frames", sourceLocation: sourceLocation)
        #expect(written.audioSamples == expected.audioSamples, "audio samples", sourceLocation: sourceLocation)
        let video = zip(written.video, expected.video).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        let audio = zip(written.audio, expected.audio).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        let videoDifference = "first decoded picture that differs: \(video ?? -1): "
            + "\(video.map { written.video[$0] } ?? "") vs \(video.map { expected.video[$0] } ?? "")"
        #expect(video == nil, "\(videoDifference)", sourceLocation: sourceLocation)
        let audioDifference = "first decoded audio frame that differs: \(audio ?? -1): "
            + "\(audio.map { written.audio[$0] } ?? "") vs \(audio.map { expected.audio[$0] } ?? "")"
        #expect(audio == nil, "\(audioDifference)", sourceLocation: sourceLocation)
        let source = try await Probe(try await source(), countFrames: true).first("video")?.readFrames
        #expect(written.video.count == source, "every source frame, once", sourceLocation: sourceLocation)
    }
}

/// What ffmpeg decodes from a file: one MD5 per picture and per audio frame (timestamps
/// included), and the number of audio samples.
struct Digests: Sendable, Equatable {
    var video: [String]
    var audio: [String]
    var audioSamples: Int

    init(of path: String) async throws {
        func frames(_ stream: String) async throws -> [Substring] {
            let output = try await ExternalTool.check(
                "ffmpeg", ["-v", "error", "-i", path, "-map", "0:\(stream):0", "-f", "framemd5", "-"])
            return output.text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        }
        // framemd5 lines: stream, dts, pts, duration, size, md5.
        let pictures = try await frames("v"), sounds = try await frames("a")
        video = pictures.map { $0.split(separator: ",").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
            .joined(separator: ",") }
        audio = sounds.map { $0.split(separator: ",").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
            .joined(separator: ",") }
        audioSamples = sounds.reduce(0) { total, line in
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return total + (fields.count > 3 ? Int(fields[3]) ?? 0 : 0)
        }
    }
}

// MARK: - The cluster

/// `splice worker` as a child process, logging to a file; killed when the test lets go of it.
final class ChildWorker: Sendable {
    let process: ChildProcess
    let name: String

    init(coordinator: String, spool: URL, name: String) throws {
        self.name = name
        // One slot, one encoder thread: every encoder single-threaded, as in `splice transcode --jobs 2`.
        process = try ChildProcess.start(
            ["worker", "--coordinator", coordinator, "--spool", spool.path, "--slots", "1", "--codec-threads", "1",
             "--name", name, "--drain-timeout", "30"], logName: name)
    }
}

/// A child `splice` process whose standard error goes to a file. It outlives nothing: it is
/// killed when the test lets go of it (a failed expectation included) or, failing that, when the
/// test process exits.
final class ChildProcess: Sendable {
    private let handle: Process
    let log: URL

    private init(handle: Process, log: URL) {
        self.handle = handle
        self.log = log
    }

    deinit {
        if handle.isRunning { kill(handle.processIdentifier, SIGKILL) }
    }

    private static let running = Mutex<[Int32]>([])
    private static let killAtExit: Void = {
        atexit {
            for pid in ChildProcess.running.withLock({ $0 }) { kill(pid, SIGKILL) }
        }
    }()

    /// Starts `splice arguments…` with only PATH, a scratch HOME and `environment`.
    static func start(_ arguments: [String], logName: String, environment: [String: String] = [:]) throws -> ChildProcess {
        let log = Fixtures.temporaryDirectory("child").appendingPathComponent(logName + ".log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = try ChildCoordinator.executable()
        process.arguments = arguments
        process.environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
                               "HOME": Fixtures.scratch.path].merging(environment) { _, new in new }
        process.standardError = try FileHandle(forWritingTo: log)
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        _ = killAtExit
        try process.run()
        running.withLock { $0.append(process.processIdentifier) }
        return ChildProcess(handle: process, log: log)
    }

    var isRunning: Bool { handle.isRunning }

    func signal(_ number: Int32) { kill(handle.processIdentifier, number) }

    var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// Waits (polling) for the process to end; its exit status, or nil after `timeout`.
    func exitStatus(within timeout: Duration = .seconds(30)) async -> (status: Int32, signalled: Bool)? {
        let deadline = ContinuousClock.now + timeout
        while handle.isRunning {
            guard ContinuousClock.now < deadline else { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return (handle.terminationStatus, handle.terminationReason == .uncaughtSignal)
    }
}

/// One coordinator and its workers on a private database and spool.
struct LocalCluster {
    let database: ConnectionConfiguration
    let spool: URL
    let outputs: URL
    let leaseSeconds: Int
    private(set) var coordinator: ChildCoordinator
    let workers: [ChildWorker]

    static func start(workers count: Int, leaseSeconds: Int = 30) async throws -> LocalCluster {
        let database = try await TestPostgres.makeDatabase()
        let spool = Fixtures.temporaryDirectory("cluster-spool")
        let coordinator = try await ChildCoordinator.start(
            database: database, spool: spool, extra: ["--lease-seconds", String(leaseSeconds)])
        let workers = try (0..<count).map { index in
            try ChildWorker(coordinator: coordinator.workers, spool: spool, name: "w\(index)")
        }
        let cluster = LocalCluster(database: database, spool: spool,
                                   outputs: Fixtures.temporaryDirectory("cluster-out"), leaseSeconds: leaseSeconds,
                                   coordinator: coordinator, workers: workers)
        guard await eventually(within: .seconds(60), { workers.allSatisfy { $0.process.output.contains("registered") } })
        else { throw TestFailure("the workers did not register\n\(cluster.logs)") }
        return cluster
    }

    func outputPath(_ name: String) -> String { outputs.appendingPathComponent(name).path }

    /// `splice submit --wait` of the end-to-end clip to `output`, running.
    func submitWaiting(_ output: String, preset: String = "slow") async throws -> SpliceProcess {
        try SpliceProcess(["submit", try await EndToEndMedia.source(), output, "--wait",
                           "--coordinator", coordinator.api] + EndToEndMedia.flags(preset: preset))
    }

    /// A coordinator on the same database, spool and endpoints, after the last one died.
    mutating func restartCoordinator() async throws {
        coordinator = try await ChildCoordinator.start(
            database: database, spool: spool, workers: coordinator.workers, api: coordinator.api,
            extra: ["--lease-seconds", String(leaseSeconds)])
    }

    /// The first worker to log that it started a segment (polled every 20 ms).
    func firstWorkerEncoding(within timeout: Duration = .seconds(120)) async -> ChildWorker? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let worker = workers.first(where: { $0.process.output.contains("segment started") }) {
                return worker
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    var repository: JobRepository { JobRepository(client: PostgresClient(configuration: database, maxConnections: 1)) }

    /// The store id of the worker registered under `name` (names are unique within one cluster).
    func workerID(named name: String) async throws -> UUID? {
        try await repository.workers().first { $0.name == name }?.id
    }

    func events(of job: String) async throws -> [JobEvent] {
        try await repository.events(ofJob: try #require(JobID(job)))
    }

    /// For each segment done, the worker (store id) whose result was committed.
    func segmentsDone(job: String) async throws -> [Int64: UUID] {
        var done: [Int64: UUID] = [:]
        for event in try await events(of: job) where event.kind == "segment_done" {
            if let segment = event.segmentID {
                #expect(done[segment] == nil, "segment \(segment) committed twice")
                done[segment] = event.workerID
            }
        }
        return done
    }

    /// Regular files left in the spool.
    func spoolFiles() -> [String] {
        let walker = FileManager.default.enumerator(at: spool, includingPropertiesForKeys: [.isRegularFileKey])
        return (walker?.allObjects as? [URL] ?? []).filter {
            (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true
        }.map(\.path)
    }

    /// Everything the processes logged, for failure messages.
    var logs: String {
        (["coordinator:\n" + coordinator.output]
            + workers.map { "\($0.name):\n" + $0.process.output }).joined(separator: "\n")
    }

    /// SIGTERM to everyone; each exits 0 (a worker the test killed stays dead of its SIGKILL).
    func stop() async throws {
        for worker in workers { worker.process.signal(SIGTERM) }
        for worker in workers {
            let status = await worker.process.exitStatus()
            #expect(status.map { $0.signalled ? $0.status == SIGKILL : $0.status == 0 } == true,
                    "\(worker.name) did not stop cleanly\n\(worker.process.output)")
        }
        coordinator.signal(SIGTERM)
        let status = await coordinator.exitStatus()
        #expect(status?.signalled == false && status?.status == 0, "\(coordinator.output)")
    }
}
