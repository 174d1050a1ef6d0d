import SpliceCore
import SpliceJSON
import SpliceTestSupport
import SpliceWire
import SpliceWorker

/// Drives a ``WorkerStateMachine`` on a made-up clock: every event happens at `t0 + offset`.
struct WorkerHarness {
    var machine: WorkerStateMachine
    let t0 = ContinuousClock.now
    private(set) var now: ContinuousClock.Instant

    static let welcome = Welcome(session: "s1", heartbeatIntervalMilliseconds: 1000, heartbeatLiveness: 3)

    init(slots: Int = 2, helloInterval: Duration = .seconds(1), margin: Duration = .seconds(5),
         drainTimeout: Duration = .seconds(30), flushTimeout: Duration = .seconds(10), coordinators: Int = 1) {
        machine = WorkerStateMachine(configuration: .init(
            workerName: "w1", slots: slots, encoders: ["libx264"], software: "splice test",
            helloInterval: helloInterval, leaseSafetyMargin: margin, drainTimeout: drainTimeout,
            flushTimeout: flushTimeout, coordinators: coordinators))
        now = t0
    }

    /// Handles `event` at `t0 + offset` (offsets must not go backwards).
    @discardableResult
    mutating func at(_ offset: Duration, _ event: WorkerEvent) -> [WorkerDirective] {
        now = t0 + offset
        return machine.handle(event, at: now)
    }

    /// Handles `event` at the current time.
    @discardableResult
    mutating func on(_ event: WorkerEvent) -> [WorkerDirective] {
        machine.handle(event, at: now)
    }

    /// Started and welcomed at t0. The coordinator's liveness is huge unless a test is about it,
    /// so tests need not feed it heartbeats.
    static func registered(slots: Int = 2, liveness: Int = 1000, drainTimeout: Duration = .seconds(30),
                           flushTimeout: Duration = .seconds(10)) -> WorkerHarness {
        var harness = WorkerHarness(slots: slots, drainTimeout: drainTimeout, flushTimeout: flushTimeout)
        harness.on(.start)
        harness.on(.received(.welcome(Welcome(session: "s1", heartbeatIntervalMilliseconds: 1000,
                                              heartbeatLiveness: liveness))))
        return harness
    }
}

/// The first attempt at `segment` of job 1; `token` picks another lease of it (0: the usual one).
func attempt(_ segment: Int, _ token: Int = 0) -> SegmentAttempt {
    SegmentAttempt(job: .numbered(1), segment: segment, attempt: 1, leaseToken: .numbered(token == 0 ? segment : token))
}

func assign(_ segment: Int, lease: Int = 10_000, progress: Int = 2_000) -> Assign {
    Assign(attempt: attempt(segment), outputPath: "/spool/jobs/\(JobID.numbered(1))/segment-\(segment).splseg",
           leaseMilliseconds: lease, progressIntervalMilliseconds: progress, spec: JSONPayload(.null))
}

func ack(_ segment: Int, _ acknowledges: Ack.Acknowledged, _ outcome: Ack.Outcome = .accepted) -> WorkerEvent {
    .received(.ack(Ack(attempt: attempt(segment), acknowledges: acknowledges, outcome: outcome)))
}

let finishedFigures = SegmentFigures(videoBytes: 1100, videoBitsPerSecond: 8800, meanQP: 27.5)

let finished = EncodeOutcome.completed(checksum: .filled(0xAB), sizeBytes: 1234,
                                       encodeMilliseconds: 56, videoFrames: 78, figures: finishedFigures)

/// The COMPLETE a worker sends for `finished`: the encode's figures travel with it.
func complete(_ segment: Int) -> Complete {
    Complete(attempt: attempt(segment), outputPath: assign(segment).outputPath,
             checksum: .filled(0xAB), sizeBytes: 1234, encodeMilliseconds: 56, videoFrames: 78,
             figures: finishedFigures)
}

extension Array where Element == WorkerDirective {
    /// The messages sent, in order.
    var sent: [WorkerMessage] {
        compactMap { if case .send(let message, _) = $0 { message } else { nil } }
    }

    /// The messages sent with their recipients, in order.
    var sends: [(message: WorkerMessage, to: WorkerDirective.Recipient)] {
        compactMap { if case .send(let message, let to) = $0 { (message, to) } else { nil } }
    }

    /// The envelope types of the messages sent to `recipient`, in order.
    func sentTypes(to recipient: WorkerDirective.Recipient) -> [String] {
        sends.filter { $0.to == recipient }.map { type(of: $0.message.body).messageType }
    }

    /// The envelope types of the messages sent, in order.
    var sentTypes: [String] { sent.map { type(of: $0.body).messageType } }

    var aborted: [SegmentAttempt: AbortReason] {
        Dictionary(compactMap { if case .abortEncode(let a, let reason) = $0 { (a, reason) } else { nil } },
                   uniquingKeysWith: { first, _ in first })
    }

    var deleted: [String] {
        compactMap { if case .deleteOutput(let path, _) = $0 { path } else { nil } }
    }

    var started: [SegmentAttempt] {
        compactMap { if case .startEncode(let assign) = $0 { assign.attempt } else { nil } }
    }

    var hello: Hello? {
        sent.lazy.compactMap { if case .hello(let hello) = $0 { hello } else { nil } }.first
    }

    var stopped: WorkerStopReason? {
        lazy.compactMap { if case .stop(let reason) = $0 { reason } else { nil } }.first
    }
}
