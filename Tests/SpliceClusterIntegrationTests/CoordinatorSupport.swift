import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceJSON
import SpliceLog
import SpliceMedia
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing
import SpliceCoordinator
import SpliceDaemon

// Shared pieces of the coordinator integration tests: a coordinator on a private database with
// short timings, scripted workers that speak the worker protocol through SpliceWire's
// `WorkerEndpoint` (real sockets), an API client, and real segment encodes.

// Log lines of the coordinators under test go through `testLogger` (WorkerTestSupport.swift).

/// The value `operation` produces, or nil after `timeout`.
func within<T: Sendable>(_ timeout: Duration, _ operation: @escaping @Sendable () async -> T?) async -> T? {
    await withDeadline(timeout, operation)
}

// MARK: - The coordinator under test

/// A coordinator running in this process on a fresh migrated database and spool.
struct CoordinatorUnderTest: Sendable {
    let coordinator: Coordinator
    let running: Task<Void, any Error>
    let endpoints: CoordinatorEndpoints
    let configuration: CoordinatorConfiguration
    let repository: JobRepository

    var database: ConnectionConfiguration {
        if case .server(let database) = configuration.database { return database }
        fatalError("tests use a database server")
    }

    var spool: URL { configuration.spool }

    /// Timings for tests: 250 ms heartbeats and 200 ms polls keep them quick; retries after
    /// 100 ms. Leases (30 s), liveness (5 s) and the time a worker has to accept an assignment
    /// (30 s; the default follows liveness) are long, because the whole suite runs at once on two
    /// cores and a test may stall for seconds (a clean-clone run took assignments back after 5 s
    /// from scripted workers that had them); tests about expiry set their own. The leadership
    /// lease is 20 s for the same reason: these coordinators share the test process's cooperative
    /// pool with hundreds of tests, some of which hold its two threads, and a renewal due after
    /// 2.7 s was seen to run after 5.6 s — an 8 s lease's step-down point. A coordinator that steps
    /// down and takes over again is a fault the failover tests cause on purpose (with their own
    /// lease), not one to meet by chance. Tests that crash a coordinator and start its successor on
    /// the same database give a short lease (``crashLease``): the successor waits it out.
    static func configuration(database: ConnectionConfiguration, spool: URL) -> CoordinatorConfiguration {
        var configuration = CoordinatorConfiguration(
            database: .server(database), spool: spool, workersEndpoint: loopback, apiEndpoint: loopback,
            maxAttempts: 5,
            sessions: CoordinatorPolicy(
                heartbeatInterval: .milliseconds(250), heartbeatLiveness: 20, leaseDuration: .seconds(30),
                forgetAfter: .seconds(60), acceptDeadline: .seconds(30)),
            segmentRetryBackoff: Backoff(base: .milliseconds(100), cap: .seconds(1)), pollInterval: .milliseconds(200),
            reapInterval: .milliseconds(200), janitorInterval: .milliseconds(500), databaseConnections: 4,
            logger: testLogger)
        configuration.leadership = LeadershipPolicy(lease: .seconds(20))
        return configuration
    }

    /// The leadership of coordinators a test crashes (``crash()``) and replaces on the same
    /// database: the successor stands by until the crashed one's lease runs out, as it would after
    /// a real crash, so it is kept short.
    static let crashLease = LeadershipPolicy(lease: .seconds(8))

    /// Starts a coordinator on a new database (or `database`), changed by `configure`.
    static func start(
        database: ConnectionConfiguration? = nil, spool: URL? = nil,
        configure: (inout CoordinatorConfiguration) -> Void = { _ in }
    ) async throws -> CoordinatorUnderTest {
        let database = if let database { database } else { try await TestPostgres.makeDatabase() }
        var configuration = configuration(
            database: database, spool: spool ?? Fixtures.temporaryDirectory("spool"))
        configure(&configuration)
        let coordinator = Coordinator(configuration: configuration)
        let running = Task { try await coordinator.run() }
        let endpoints = try await coordinator.ready()
        return CoordinatorUnderTest(
            coordinator: coordinator, running: running, endpoints: endpoints, configuration: configuration,
            repository: JobRepository(client: PostgresClient(configuration: database, maxConnections: 2)))
    }

    /// Graceful shutdown; throws what `run()` threw.
    func stop() async throws {
        await coordinator.shutdown()
        try await running.value
    }

    /// Abrupt stop: the run task is cancelled — nothing drained, nothing said to the workers.
    func crash() async {
        running.cancel()
        _ = try? await running.value
    }

    /// The job's events of one kind, oldest first.
    func events(_ kind: String, of job: JobID) async throws -> [JobEvent] {
        try await repository.events(ofJob: job).filter { $0.kind == kind }
    }
}

// MARK: - The client API

/// A `splice submit`-like client on the API endpoint.
struct TestClient: Sendable {
    let endpoint: APIClientEndpoint
    let context: WireContext

    static func connect(
        to endpoint: String, curve: CurveRole = .none, context: WireContext? = nil
    ) async throws -> TestClient {
        let context = try context ?? WireContext()
        let wire = try await WireEndpoint.connect(
            endpoint, type: .dealer, context: context, options: .dealer(curve: curve, immediate: false))
        return TestClient(endpoint: APIClientEndpoint(wire), context: context)
    }

    /// One request; the generous default timeout is for the whole suite running at once.
    func request(_ request: APIRequest, timeout: Duration = .seconds(30)) async throws -> APIReply {
        try await endpoint.request(request, timeout: timeout)
    }

    /// Submits `input` → `output`; returns the job id.
    func submit(
        _ input: String, to output: String, segmentSeconds: Int64 = 1, key: String = UUID().uuidString,
        overwrite: Bool = false
    ) async throws -> JobID {
        let reply = try await submitting(input, to: output, segmentSeconds: segmentSeconds, key: key,
                                         overwrite: overwrite)
        guard case .submitted(let submitted) = reply else { throw TestFailure("SUBMIT answered \(reply)") }
        return submitted.job
    }

    /// The coordinator's answer to a SUBMIT, whatever it is.
    func submitting(
        _ input: String, to output: String, segmentSeconds: Int64 = 1, key: String = UUID().uuidString,
        overwrite: Bool = false, quality: QualityRequest? = nil
    ) async throws -> APIReply {
        var request = TranscodeRequest(
            video: VideoSettings(codec: .h264, preset: "ultrafast"), audio: nil, fileType: .mp4,
            segmentDuration: MediaTime(seconds: segmentSeconds), overwrite: overwrite)
        request.quality = quality
        return try await self.request(.submit(SubmitJob(
            input: input, output: output, export: try JSONPayload(encoding: request), submissionKey: key)))
    }

    func status(_ job: JobID) async throws -> JobStatus {
        let reply = try await request(.status(JobStatusQuery(job: job)))
        guard case .status(let status) = reply else { throw TestFailure("STATUS answered \(reply)") }
        return status
    }

    /// Polls STATUS until the job is in one of `states`.
    func wait(for job: JobID, toBe states: Set<JobState>, within timeout: Duration = .seconds(60)) async throws
        -> JobStatus
    {
        let deadline = ContinuousClock.now + timeout
        while true {
            let status = try await status(job)
            if states.contains(status.state) { return status }
            guard ContinuousClock.now < deadline else {
                throw TestFailure("job \(job) is \(status.state) after \(timeout), not \(states.map(\.rawValue).sorted())")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func close() async {
        await endpoint.close(linger: .zero)
    }
}

// MARK: - Scripted workers

/// A worker whose every move the test makes: a DEALER speaking the worker protocol through
/// `WorkerEndpoint`. Messages it receives wait in a buffer until the test asks for them. Like a
/// real worker it sends HEARTBEAT every 250 ms, unless told to play a hung one.
actor ScriptedWorker {
    let endpoint: WorkerEndpoint
    private var inbox: [CoordinatorMessage] = []
    private var heartbeats: Task<Void, Never>?

    init(endpoint: WorkerEndpoint) {
        self.endpoint = endpoint
    }

    /// Connects to the coordinator's worker endpoint (not `immediate`: the first message waits
    /// for the connection and handshake).
    static func connect(
        to endpoint: String, context: WireContext, curve: CurveRole = .none, routingID: RoutingID? = nil,
        heartbeats: Bool = true
    ) async throws -> ScriptedWorker {
        let wire = try await WireEndpoint.connect(
            endpoint, type: .dealer, context: context,
            options: .dealer(routingID: routingID, curve: curve, immediate: false))
        let worker = ScriptedWorker(endpoint: WorkerEndpoint(wire))
        if heartbeats { await worker.startHeartbeats() }
        return worker
    }

    /// From now on the worker plays a hung one: nothing unless the test sends it.
    func stopHeartbeats() {
        heartbeats?.cancel()
    }

    private func startHeartbeats() {
        let endpoint = self.endpoint
        heartbeats = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                try? await endpoint.send(.heartbeat(Heartbeat()))
            }
        }
    }

    func send(_ message: WorkerMessage) async throws {
        try await endpoint.send(message)
    }

    /// The first message (buffered or arriving within `timeout`) for which `match` returns a
    /// value; the others stay buffered.
    func next<T: Sendable>(within timeout: Duration = .seconds(30), _ match: (CoordinatorMessage) -> T?) async -> T? {
        if let index = inbox.firstIndex(where: { match($0) != nil }) { return match(inbox.remove(at: index)) }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let endpoint = self.endpoint
            guard let received = await within(deadline - ContinuousClock.now, { await endpoint.receiveMessage() })
            else { return nil }
            if let value = match(received.0.message) { return value }
            inbox.append(received.0.message)
        }
        return nil
    }

    /// Sends HELLO (again every second) until WELCOME arrives.
    func hello(
        slots: Int = 1, running: [SegmentAttempt] = [], finished: [Complete] = [], failed: [Fail] = [],
        within timeout: Duration = .seconds(30)
    ) async throws -> Welcome? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            try await send(.hello(Hello(
                workerName: "scripted", slots: slots, encoders: ["libx264"], running: running, finished: finished,
                failed: failed, software: "test")))
            if let welcome = await next(within: .seconds(1), { if case .welcome(let w) = $0 { w } else { nil } }) {
                return welcome
            }
        }
        return nil
    }

    func assignment(within timeout: Duration = .seconds(30)) async -> Assign? {
        await next(within: timeout) { if case .assign(let assign) = $0 { assign } else { nil } }
    }

    func ack(of attempt: SegmentAttempt, _ acknowledged: Ack.Acknowledged, within timeout: Duration = .seconds(30))
        async -> Ack?
    {
        await next(within: timeout) { message in
            guard case .ack(let ack) = message, ack.attempt == attempt, ack.acknowledges == acknowledged else { return nil }
            return ack
        }
    }

    func cancel(of attempt: SegmentAttempt, within timeout: Duration = .seconds(30)) async -> Cancel? {
        await next(within: timeout) { message in
            guard case .cancel(let cancel) = message, cancel.attempt == attempt else { return nil }
            return cancel
        }
    }

    /// The next DISCONNECT (with `reason`, when given).
    func disconnect(_ reason: Disconnect.Reason? = nil, within timeout: Duration = .seconds(30)) async -> Disconnect? {
        await next(within: timeout) { message in
            guard case .disconnect(let disconnect) = message, reason == nil || disconnect.reason == reason else {
                return nil
            }
            return disconnect
        }
    }

    /// ACCEPT, wait for its ACK, encode for real — sending PROGRESS every progress interval, as
    /// a worker does to keep its lease — and return the COMPLETE to send.
    func acceptAndEncode(_ assign: Assign) async throws -> Complete {
        try await send(.accept(Accept(attempt: assign.attempt)))
        guard let ack = await ack(of: assign.attempt, .accept), ack.outcome == .accepted else {
            throw TestFailure("ACCEPT of \(assign.attempt) was not acknowledged as accepted")
        }
        let endpoint = self.endpoint
        let progress = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(assign.progressIntervalMilliseconds))
                guard !Task.isCancelled else { return }
                try? await endpoint.send(.progress(Progress(attempt: assign.attempt, fraction: 0.5, frames: 0)))
            }
        }
        defer { progress.cancel() }
        return try await SegmentEncoder.encode(assign)
    }

    /// Sends COMPLETE and waits for its ACK.
    func complete(_ complete: Complete) async throws -> Ack.Outcome? {
        try await send(.complete(complete))
        return await ack(of: complete.attempt, .complete)?.outcome
    }

    func close() async {
        heartbeats?.cancel()
        await endpoint.close(linger: .zero)
    }
}

/// Encodes an ASSIGN's segment with the real `SegmentExporter`, as a worker daemon would.
enum SegmentEncoder {
    static func encode(_ assign: Assign) async throws -> Complete {
        let order = try assign.spec.decode(SegmentWorkOrder.self)
        let output = URL(fileURLWithPath: assign.outputPath)
        try FileManager.default.createDirectory(at: output.deletingLastPathComponent(), withIntermediateDirectories: true)
        let started = ContinuousClock.now
        let result = try await SegmentExporter(plan: order.plan).export(segment: order.segment, to: output)
        let elapsed = ContinuousClock.now - started
        return Complete(
            attempt: assign.attempt, outputPath: result.path, checksum: result.checksum,
            sizeBytes: result.bytes, encodeMilliseconds: Int(elapsed.components.seconds * 1000))
    }
}

// MARK: - Media

enum TestMedia {
    /// A video-only clip with a keyframe every second, so 1-second segments cut it `seconds` ways.
    static func clip(seconds: Int) async throws -> String {
        try await Fixtures.clip(Fixtures.ClipSpec(
            seconds: String(seconds), sampleRate: nil,
            videoCodec: ["-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-keyint_min", "30",
                         "-sc_threshold", "0", "-pix_fmt", "yuv420p"]))
    }

    /// Frames ffprobe decodes from the video of `path`.
    static func frames(_ path: String) async throws -> Int {
        try await Probe(path, countFrames: true).first("video")?.readFrames ?? -1
    }

    /// Runs blocking fixture work (ffmpeg, ffprobe) on a thread of its own: on the cooperative
    /// pool it would stall the coordinator under test, which shares the pool.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}
