import Foundation
import SpliceConcurrency
import SpliceJSON
import SpliceLog
import SpliceMedia
import SpliceTestSupport
import SpliceWire
import struct SpliceWire.Progress
import Testing
import SpliceDaemon
import SpliceWorker

/// Plays the coordinator's side of `splice-worker` over a real ROUTER on loopback (through
/// SpliceWire's `CoordinatorWorkerEndpoint`), so tests can script it and assert on what a real
/// worker sends. Every wait is bounded.
final class ScriptedCoordinator: Sendable {
    let context: WireContext
    let endpoint: CoordinatorWorkerEndpoint
    /// The resolved endpoint, `tcp://127.0.0.1:PORT`.
    let address: String
    private let peer = LockedBox<WirePeer?>(nil)
    private let heartbeats = LockedBox<Task<Void, Never>?>(nil)

    private init(context: WireContext, endpoint: CoordinatorWorkerEndpoint) {
        self.context = context
        self.endpoint = endpoint
        self.address = endpoint.wire.endpoints[0]
    }

    /// Binds a ROUTER (a fresh port by default; pass an address to rebind one a closed coordinator used).
    static func bind(_ address: String = "tcp://127.0.0.1:*", context: WireContext? = nil,
                     curve: CurveRole = .none) async throws -> ScriptedCoordinator {
        let context = try context ?? WireContext()
        let wire = try await WireEndpoint.bind([address], type: .router, context: context, options: .router(curve: curve))
        return ScriptedCoordinator(context: context, endpoint: CoordinatorWorkerEndpoint(wire))
    }

    /// The next message for which `extract` gives a value; other messages are skipped (and, when
    /// `answerOthers` is set, answered like a coordinator that does not know the session would).
    /// nil after `timeout`.
    func next<T: Sendable>(within timeout: Duration = .seconds(60), answerOthers: CoordinatorMessage? = nil,
                           _ extract: @escaping @Sendable (WorkerMessage) -> T?) async -> T? {
        await withDeadline(timeout) {
            while let (envelope, from) = await self.endpoint.receiveMessage() {
                self.peer.value = from
                if let value = extract(envelope.message) { return value }
                if let answerOthers { try? await self.endpoint.send(answerOthers, to: from) }
            }
            return nil
        }
    }

    /// Every message that arrives during `duration`.
    func collect(for duration: Duration) async -> [WorkerMessage] {
        await collectArrivals(for: duration).map(\.message)
    }

    /// Every message that arrives during `duration`, with when it arrived.
    func collectArrivals(for duration: Duration) async -> [(message: WorkerMessage, at: ContinuousClock.Instant)] {
        let collected = LockedBox<[(message: WorkerMessage, at: ContinuousClock.Instant)]>([])
        _ = await withDeadline(duration) { () -> Bool? in
            while let (envelope, from) = await self.endpoint.receiveMessage() {
                self.peer.value = from
                collected.value.append((envelope.message, .now))
            }
            return nil
        }
        return collected.value
    }

    /// Sends to the worker last heard from.
    func send(_ message: CoordinatorMessage) async throws {
        let peer = try #require(peer.value, "no worker has spoken yet")
        try await endpoint.send(message, to: peer)
    }

    /// Sends raw frames to the worker last heard from (garbage tests).
    func sendRaw(_ frames: [Data]) async throws {
        let peer = try #require(peer.value, "no worker has spoken yet")
        try await endpoint.wire.send(frames, to: peer)
    }

    /// Waits for HELLO, answers WELCOME and keeps the session alive with HEARTBEATs. The
    /// liveness is generous: these HEARTBEATs come from a task on the cooperative pool every test
    /// in the process shares, and a worker that thinks us silent re-registers and refuses ASSIGNs.
    @discardableResult
    func welcome(heartbeat: Duration = .seconds(1), liveness: Int = 30) async throws -> Hello {
        let hello = try #require(await next { if case .hello(let hello) = $0 { hello } else { nil } }, "no HELLO")
        try await send(.welcome(Welcome(session: "scripted", heartbeatIntervalMilliseconds: heartbeat.wholeMilliseconds,
                                        heartbeatLiveness: liveness)))
        startHeartbeats(every: heartbeat)
        return hello
    }

    func startHeartbeats(every interval: Duration) {
        heartbeats.value?.cancel()
        heartbeats.value = Task { [endpoint, peer] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if let to = peer.value { try? await endpoint.send(.heartbeat(Heartbeat()), to: to) }
            }
        }
    }

    /// Closes the ROUTER (and, unless the context is shared, terminates it).
    func close(terminateContext: Bool = true) async {
        heartbeats.value?.cancel()
        await endpoint.close(linger: .zero)
        if terminateContext { await context.terminate() }
    }
}

/// A `WorkerDaemon` running in this process with intervals short enough for tests.
struct RunningWorker {
    let daemon: WorkerDaemon
    let task: Task<Void, any Error>
    let spool: URL

    static func start(coordinator: String, slots: Int = 1, drainTimeout: Duration = .seconds(30),
                      logger: Logger = testLogger,
                      configure: (inout WorkerConfiguration) -> Void = { _ in }) throws -> RunningWorker {
        let spool = Fixtures.temporaryDirectory("spool")
        var configuration = WorkerConfiguration(coordinatorEndpoint: coordinator, slots: slots, spool: spool,
                                                name: "test-worker", drainTimeout: drainTimeout)
        configuration.helloInterval = .milliseconds(100)
        configuration.tickInterval = .milliseconds(20)
        configuration.reconnectInterval = .milliseconds(50)
        configuration.reconnectIntervalMax = .milliseconds(200)
        configuration.flushTimeout = .seconds(10)
        configuration.codecThreads = 1  // two cores shared by every test running at once
        configure(&configuration)
        let daemon = try WorkerDaemon(configuration: configuration, logger: logger)
        return RunningWorker(daemon: daemon, task: Task { try await daemon.run() }, spool: spool)
    }

    /// Whether `run()` returned (without throwing) within `timeout`.
    func finished(within timeout: Duration = .seconds(10)) async -> Bool {
        await withDeadline(timeout) { () -> Bool? in
            (try? await task.value) != nil ? true : false
        } ?? false
    }

    /// Stops the worker now (task cancellation), bounded.
    func stop() async {
        task.cancel()
        _ = await withDeadline(.seconds(10)) { () -> Bool? in
            _ = try? await task.value
            return true
        }
    }
}

/// Quiet unless SPLICE_LOG_LEVEL asks for more.
let testLogger: Logger = ProcessInfo.processInfo.environment[Logger.levelEnvironmentVariable] == nil
    ? Logger(level: .error) : Logger.configured(environment: ProcessInfo.processInfo.environment)

/// Real segments of a generated clip (320×240 at 30 fps, video only) to assign.
enum WorkerMedia {
    /// The one-segment plan of a `seconds`-long clip, encoded with x264 at `preset`.
    static func plan(preset: String, seconds: Int = 2) async throws -> SegmentPlan {
        let clip = try await Fixtures.clip(Fixtures.ClipSpec(seconds: "\(seconds)", width: 320, height: 240, sampleRate: nil))
        let asset = try await Asset.open(clip)
        return try await SegmentPlanner(targetDuration: MediaTime(seconds: 60))
            .plan(asset: asset, video: VideoSettings(codec: .h264, preset: preset), audio: nil, fileType: .mp4)
    }

    /// A segment that takes seconds to encode (10 s at `veryslow`, one codec thread) and spends
    /// them in the exporter's cancellable demux loop. (A clip no longer than x264's lookahead is
    /// all encoded in the end-of-input flush, which does not check for cancellation.)
    static func slowPlan() async throws -> SegmentPlan {
        try await plan(preset: "veryslow", seconds: 10)
    }

    /// An ASSIGN of segment 0 of `plan` to an attempt-unique path in `spool`, as the coordinator makes it;
    /// `token` names the attempt (the same name, the same job id and lease token).
    static func assign(_ plan: SegmentPlan, spool: URL, token: String, lease: Int = 30_000,
                       progress: Int = 100) throws -> Assign {
        let number = token.utf8.reduce(5381) { ($0 &* 33) &+ Int($1) } & 0xFFFF_FFFF
        let attempt = SegmentAttempt(job: .numbered(number), segment: 0, attempt: 1, leaseToken: .numbered(number))
        let output = SpoolLayout(root: spool).segmentFile(job: attempt.job, segment: 0, attempt: 1,
                                                          leaseToken: attempt.leaseToken)
        return Assign(attempt: attempt, outputPath: output.path, leaseMilliseconds: lease,
                      progressIntervalMilliseconds: progress,
                      spec: try JSONPayload(encoding: SegmentWorkOrder(plan: plan, segment: 0)))
    }
}

/// Files left in a directory (recursively), for "nothing partial is left" checks.
func files(under directory: URL) -> [String] {
    let enumerator = FileManager.default.enumerator(atPath: directory.path)
    var found: [String] = []
    while let name = enumerator?.nextObject() as? String {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path, isDirectory: &isDirectory),
           !isDirectory.boolValue {
            found.append(name)
        }
    }
    return found
}

/// The SHA-256 of a file as `sha256sum` (the independent oracle) computes it.
func sha256(_ path: String) async throws -> String {
    String(try await ExternalTool.check("sha256sum", [path]).text.prefix(64))
}

// MARK: - Matching messages

extension WorkerMessage {
    var asAccept: Accept? { if case .accept(let body) = self { body } else { nil } }
    var asProgress: Progress? { if case .progress(let body) = self { body } else { nil } }
    var asComplete: Complete? { if case .complete(let body) = self { body } else { nil } }
    var asFail: Fail? { if case .fail(let body) = self { body } else { nil } }
    /// A FAIL sent on its own or carried in a HELLO (a loaded machine may make the worker think
    /// the scripted coordinator went quiet and re-register, reporting what it holds).
    var asReportedFail: Fail? { asFail ?? asHello?.failed.first }
    var asHello: Hello? { if case .hello(let body) = self { body } else { nil } }
    var asDisconnect: Disconnect? { if case .disconnect(let body) = self { body } else { nil } }
}
