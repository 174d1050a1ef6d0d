import Foundation
import SpliceCore
import SpliceJSON
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing
@testable import SpliceCoordinator


// The coordinator's protocol logic with no network and no database: every event goes in, the
// directives that come out are checked, and the answers a shell would report are fed back.

// MARK: - Fixtures

private let workerKey = try! CurvePublicKey(bytes: Data(repeating: 1, count: 32))
private let otherKey = try! CurvePublicKey(bytes: Data(repeating: 2, count: 32))
private let worker = WirePeer(routingID: RoutingID("w:one"), publicKey: workerKey)
private let other = WirePeer(routingID: RoutingID("w:two"), publicKey: otherKey)
private let workerID = UUID()
private let otherID = UUID()

/// Attempt `number` at segment `segment` of job `job`; each has its own lease token.
private func attempt(_ segment: Int, job: Int = 1, number: Int = 1) -> SegmentAttempt {
    SegmentAttempt(job: .numbered(job), segment: segment, attempt: number,
                   leaseToken: .numbered(job * 1_000_000 + segment * 100 + number))
}

private func complete(_ attempt: SegmentAttempt) -> Complete {
    Complete(attempt: attempt, outputPath: "/spool/\(attempt.segment)", checksum: .filled(0xAA),
             sizeBytes: 10, encodeMilliseconds: 5)
}

private func assignment(_ attempt: SegmentAttempt) -> Assignment {
    Assignment(attempt: attempt, outputPath: "/spool/\(attempt.segment)", spec: JSONPayload(.object([:])))
}

/// A state machine with a clock the test moves.
private struct Harness {
    static let policy = CoordinatorPolicy(
        heartbeatInterval: .seconds(1), heartbeatLiveness: 3, leaseDuration: .seconds(30), forgetAfter: .seconds(40),
        seenInterval: .seconds(10))
    var machine = CoordinatorStateMachine(policy: policy, sessionName: "test")
    let start = ContinuousClock.now
    var elapsed: Duration = .zero

    var now: ContinuousClock.Instant { start + elapsed }

    mutating func advance(_ duration: Duration) { elapsed += duration }

    /// Lets `duration` pass with the timer running every `period`, as the shell's timer does; the
    /// directives of every tick.
    mutating func run(for duration: Duration, period: Duration = .milliseconds(250)) -> [CoordinatorDirective] {
        var directives: [CoordinatorDirective] = []
        var passed: Duration = .zero
        while passed < duration {
            advance(period)
            passed += period
            directives += on(.tick)
        }
        return directives
    }

    /// Handles `event` now.
    @discardableResult
    mutating func on(_ event: CoordinatorEvent) -> [CoordinatorDirective] {
        machine.handle(event, at: now)
    }

    mutating func receive(_ message: WorkerMessage, from peer: WirePeer = worker) -> [CoordinatorDirective] {
        on(.received(message, from: peer))
    }

    /// HELLO, registration and WELCOME for a worker with nothing to report.
    mutating func welcome(_ peer: WirePeer = worker, id: UUID = workerID, slots: Int = 2) {
        _ = receive(.hello(Hello(workerName: "w", slots: slots, encoders: ["libx264"])), from: peer)
        let welcomed = on(.workerRegistered(WorkerIdentity(peer: peer)!, workerID: id))
        precondition(welcomed.contains { if case .send(.welcome, _, _) = $0 { true } else { false } })
    }

    /// Dispatch, then answer the claim with `attempts` (what the store leased).
    /// Dispatch, then answer the claim: `peer` gets `attempts`, other workers nothing.
    mutating func assign(_ attempts: [SegmentAttempt], to peer: WirePeer = worker) -> [CoordinatorDirective] {
        on(.workAvailable)
        guard let claim = machine.dispatch(at: now).compactMap(\.claim).first else { return [] }
        let identity = WorkerIdentity(peer: peer)!
        return on(.claimed([identity: attempts.map(assignment)], demands: claim.demands, generation: claim.generation))
    }
}

extension CoordinatorDirective {
    var sent: (message: CoordinatorMessage, peer: WirePeer)? {
        if case .send(let message, let peer, _) = self { return (message, peer) }
        return nil
    }

    var claim: (demands: [ClaimDemand], generation: UInt64)? {
        if case .claim(let demands, let generation) = self { return (demands, generation) }
        return nil
    }

    var committed: WorkerResult? {
        if case .commitResult(let result) = self { return result }
        return nil
    }
}

private func messages(_ directives: [CoordinatorDirective]) -> [CoordinatorMessage] {
    directives.compactMap(\.sent?.message)
}

private func acks(_ directives: [CoordinatorDirective]) -> [Ack] {
    messages(directives).compactMap { if case .ack(let ack) = $0 { ack } else { nil } }
}

private func cancels(_ directives: [CoordinatorDirective]) -> [Cancel] {
    messages(directives).compactMap { if case .cancel(let cancel) = $0 { cancel } else { nil } }
}

/// The slots each claim asks for, smallest first.
private func claimed(_ directives: [CoordinatorDirective]) -> [Int] {
    directives.compactMap(\.claim).flatMap(\.demands).map(\.limit).sorted()
}

private func isWelcome(_ message: CoordinatorMessage) -> Bool {
    if case .welcome = message { true } else { false }
}

// MARK: - Tests

@Suite("Coordinator state machine")
struct CoordinatorStateMachineTests {
    // MARK: Sessions

    @Test("HELLO registers the worker in the store first; WELCOME comes after the registration")
    func helloThenWelcome() {
        var harness = Harness()
        let hello = harness.receive(.hello(Hello(workerName: "encoder-1", slots: 4, encoders: ["libx264"])))
        #expect(hello.contains(.registerWorker(.key(workerKey), name: "encoder-1", slots: 4, encoders: ["libx264"])))
        #expect(messages(hello).isEmpty)
        #expect(harness.machine.dispatch(at: harness.now).isEmpty, "nothing is assigned before WELCOME")

        let registered = harness.on(.workerRegistered(.key(workerKey), workerID: workerID))
        #expect(messages(registered).first == .welcome(Welcome(session: "test", heartbeatIntervalMilliseconds: 1000, heartbeatLiveness: 3)))
        #expect(registered.compactMap(\.sent?.peer) == [worker])
        #expect(claimed(harness.machine.dispatch(at: harness.now)) == [4])
    }

    @Test("what a HELLO says of the worker's machine is kept for `splice workers`; an older worker's HELLO says nothing")
    func machineFigures() {
        var harness = Harness()
        _ = harness.receive(.hello(Hello(workerName: "w", slots: 2, encoders: [], usableCores: 4, threadsPerSlot: 2,
                                         metricsEndpoint: "127.0.0.1:9452")))
        let snapshot = harness.machine.sessionSnapshots(now: harness.now).first
        #expect(snapshot?.usableCores == 4 && snapshot?.threadsPerSlot == 2 && snapshot?.metricsEndpoint == "127.0.0.1:9452")
        var older = Harness()
        _ = older.receive(.hello(Hello(workerName: "w", slots: 2, encoders: [])))
        let old = older.machine.sessionSnapshots(now: older.now).first
        #expect(old != nil && old?.usableCores == nil && old?.threadsPerSlot == nil && old?.metricsEndpoint == nil)
    }

    @Test("sessions are keyed by the authenticated key: a new routing id is the same worker, answered on its new route")
    func keyedByKey() {
        var harness = Harness()
        harness.welcome()
        let moved = WirePeer(routingID: RoutingID("reconnected"), publicKey: workerKey)
        let accepted = harness.receive(.accept(Accept(attempt: attempt(0))), from: moved)
        #expect(accepted == [.extendLeases([attempt(0)], worker: .key(workerKey), check: .accept)])
        let answered = harness.on(.leasesExtended([attempt(0)], worker: .key(workerKey), check: .accept,
            current: [attempt(0).leaseToken]))
        #expect(answered.compactMap(\.sent?.peer) == [moved])
        #expect(harness.machine.sessionSnapshots(now: harness.now).count == 1)
    }

    @Test("without CURVE the connection is the identity", arguments: [RoutingID("a"), RoutingID(Data([0, 1, 2]))])
    func connectionIdentity(route: RoutingID) {
        let peer = WirePeer(routingID: route, publicKey: nil)
        #expect(WorkerIdentity(peer: peer) == .connection(route))
        #expect(WorkerIdentity(peer: peer)?.storeKey == "insecure:\(route)")
        #expect(WorkerIdentity(peer: .upstream) == nil)
    }

    @Test("every message but HELLO from an unknown session is answered DISCONNECT reregister", arguments: [
        WorkerMessage.accept(Accept(attempt: attempt(0))),
        .progress(Progress(attempt: attempt(0), fraction: 0.5, frames: 10)),
        .complete(complete(attempt(0))),
        .fail(Fail(attempt: attempt(0), code: Fail.Code(rawValue: "x"), reason: "y", retryable: true)),
        .heartbeat(Heartbeat()),
    ])
    func unknownSession(message: WorkerMessage) {
        var harness = Harness()
        let directives = harness.receive(message)
        #expect(messages(directives) == [.disconnect(Disconnect(reason: .reregister, detail: "unknown session: send HELLO"))])
        #expect(!directives.contains { $0.committed != nil }, "nothing is committed for an unknown session")
        #expect(!directives.contains { if case .extendLeases = $0 { true } else { false } })
    }

    @Test("DISCONNECT from an unknown session is ignored; from a known one its leases are released")
    func disconnect() {
        var harness = Harness()
        #expect(harness.receive(.disconnect(Disconnect(reason: .shutdown))).isEmpty)
        harness.welcome()
        let directives = harness.receive(.disconnect(Disconnect(reason: .shutdown, detail: "drained")))
        #expect(directives.contains(.releaseWorker(workerID: workerID, reason: "the worker disconnected (shutdown): drained")))
        #expect(directives.contains(.markWorkers([workerID], online: false)))
        #expect(harness.machine.sessionSnapshots(now: harness.now).isEmpty)
    }

    @Test("a HELLO without slots breaks the protocol")
    func helloWithoutSlots() {
        var harness = Harness()
        let directives = harness.receive(.hello(Hello(workerName: "w", slots: 0, encoders: [])))
        #expect(messages(directives).count == 1)
        if case .disconnect(let disconnect) = messages(directives).first { #expect(disconnect.reason == .protocolError) }
        #expect(harness.machine.sessionSnapshots(now: harness.now).isEmpty)
    }

    @Test("a refused registration (unknown or revoked key) ends in DISCONNECT revoked")
    func refused() {
        var harness = Harness()
        _ = harness.receive(.hello(Hello(workerName: "w", slots: 1, encoders: [])))
        let directives = harness.on(.workerRefused(.key(workerKey), reason: "key revoked"))
        #expect(messages(directives) == [.disconnect(Disconnect(reason: .revoked, detail: "key revoked"))])
        #expect(harness.machine.sessionSnapshots(now: harness.now).isEmpty)
    }

    @Test("a HELLO resent while registering changes nothing; a failed registration lets the next one start over")
    func helloResent() {
        var harness = Harness()
        let hello = WorkerMessage.hello(Hello(workerName: "w", slots: 1, encoders: []))
        #expect(harness.receive(hello).contains { if case .registerWorker = $0 { true } else { false } })
        #expect(harness.receive(hello).isEmpty)
        harness.on(.registrationFailed(.key(workerKey)))
        #expect(harness.receive(hello).contains { if case .registerWorker = $0 { true } else { false } })
    }

    // MARK: HELLO with results

    @Test("HELLO's finished and failed results are committed and ACKed; stale running attempts get CANCEL; then WELCOME")
    func helloWithResults() throws {
        var harness = Harness()
        let done = attempt(1), failed = attempt(2), current = attempt(3), gone = attempt(4)
        let failure = Fail(attempt: failed, code: .drained, reason: "handed back", retryable: true)
        _ = harness.receive(.hello(Hello(
            workerName: "w", slots: 4, encoders: [], running: [current, gone], finished: [complete(done)],
            failed: [failure])))
        let registered = harness.on(.workerRegistered(.key(workerKey), workerID: workerID))
        #expect(registered.compactMap(\.committed) == [.complete(complete(done)), .fail(failure)])
        #expect(registered.contains(.extendLeases([current, gone], worker: .key(workerKey),
                                                   check: .helloRunning(incarnation: 1))))
        #expect(!messages(registered).contains(where: isWelcome), "WELCOME waits for the commits")

        let first = harness.on(.resultCommitted(.complete(complete(done)), .completed(jobReadyToStitch: false)))
        #expect(acks(first) == [Ack(attempt: done, acknowledges: .complete, outcome: .accepted)])
        let second = harness.on(.resultCommitted(.fail(failure), .recorded(.willRetry(at: .distantPast))))
        #expect(acks(second) == [Ack(attempt: failed, acknowledges: .fail, outcome: .accepted)])
        #expect(!messages(second).contains(where: isWelcome))

        let checked = harness.on(.leasesExtended([current, gone], worker: .key(workerKey),
            check: .helloRunning(incarnation: 1), current: [current.leaseToken]))
        #expect(cancels(checked) == [Cancel(attempt: gone, reason: .leaseLost)])
        #expect(acks(checked).isEmpty, "a HELLO's running list is not acknowledged")
        #expect(messages(checked).last.map(isWelcome) == true)
        let snapshot = try #require(harness.machine.sessionSnapshots(now: harness.now).first)
        #expect(snapshot.running == 1 && snapshot.active)
        #expect(claimed(harness.machine.dispatch(at: harness.now)) == [3], "the running attempt holds a slot")
    }

    @Test("the same HELLO again (a resend that crossed WELCOME) is welcomed again and orphans nothing")
    func helloCrossingWelcome() {
        var harness = Harness()
        harness.welcome()
        _ = harness.assign([attempt(0)])
        let again = harness.receive(.hello(Hello(workerName: "w", slots: 2, encoders: ["libx264"])))
        #expect(messages(again).contains(where: isWelcome))
        #expect(!again.contains { if case .abandonAttempt = $0 { true } else { false } })
        #expect(!again.contains { if case .registerWorker = $0 { true } else { false } })
        #expect(harness.machine.sessionSnapshots(now: harness.now).first?.running == 1)
    }

    @Test("a worker that registers again without an attempt it held hands that attempt back")
    func orphanedOnReHello() {
        var harness = Harness()
        harness.welcome()
        _ = harness.assign([attempt(0), attempt(1)])
        let again = harness.receive(.hello(Hello(workerName: "w", slots: 2, encoders: [], running: [attempt(1)])))
        #expect(again.contains(.abandonAttempt(attempt(0), reason: "the worker registered again without it", spendsAttempt: true)))
        #expect(!again.contains { if case .abandonAttempt(let a, _, _) = $0 { a == attempt(1) } else { false } })
    }

    // MARK: Leases

    @Test("PROGRESS, and an ACCEPT later than the window after its claim, are ACKed only after the extension is committed",
          arguments: [true, false])
    func leaseExtension(isProgress: Bool) {
        var harness = Harness()
        harness.welcome()
        _ = harness.assign([attempt(0)])
        harness.advance(Harness.policy.acceptFromClaimWindow + .milliseconds(1))
        let message: WorkerMessage = isProgress
            ? .progress(Progress(attempt: attempt(0), fraction: 0.25, frames: 5)) : .accept(Accept(attempt: attempt(0)))
        let check: LeaseCheck = isProgress ? .progress : .accept
        let received = harness.receive(message)
        #expect(received == [.extendLeases([attempt(0)], worker: .key(workerKey), check: check)])
        let answered = harness.on(.leasesExtended([attempt(0)], worker: .key(workerKey), check: check,
            current: [attempt(0).leaseToken]))
        #expect(acks(answered) == [Ack(attempt: attempt(0), acknowledges: isProgress ? .progress : .accept, outcome: .accepted)])
        #expect(harness.machine.runningProgress(ofJob: .numbered(1)).segments == (isProgress ? 0.25 : 0))
        #expect(harness.on(.leaseExtensionFailed([attempt(0)], worker: .key(workerKey), check: check)).isEmpty,
            "no ACK without a commit")
    }

    @Test("an ACCEPT within the window after its claim is ACKed from the claim's commit, with no extension")
    func acceptFromClaim() {
        var harness = Harness()
        harness.welcome()
        #expect(Harness.policy.acceptFromClaimWindow == .seconds(1), "min(1 s, a 16th of the 30 s lease)")
        _ = harness.assign([attempt(0), attempt(1)])
        harness.advance(Harness.policy.acceptFromClaimWindow)
        let answered = harness.receive(.accept(Accept(attempt: attempt(0))))
        #expect(acks(answered) == [Ack(attempt: attempt(0), acknowledges: .accept, outcome: .accepted)])
        #expect(!answered.contains { if case .extendLeases = $0 { true } else { false } })
        // The same token under another segment is not the attempt that was leased: the store decides.
        var forged = attempt(1)
        forged.segment = 7
        #expect(harness.receive(.accept(Accept(attempt: forged)))
            == [.extendLeases([forged], worker: .key(workerKey), check: .accept)])
    }

    @Test("an ACCEPT for a lease taken back since its claim, or whose job ended, goes to the store")
    func acceptAfterTakeBack() {
        var harness = Harness()
        harness.welcome()
        _ = harness.assign([attempt(0), attempt(1)])
        harness.on(.leasesTakenBack([TakenBackLease(job: .numbered(1), leaseToken: attempt(0).leaseToken,
            jobFailed: false)]))
        #expect(harness.receive(.accept(Accept(attempt: attempt(0))))
            == [.extendLeases([attempt(0)], worker: .key(workerKey), check: .accept)])
        harness.on(.jobEnded(.numbered(1), .jobCancelled))
        #expect(harness.receive(.accept(Accept(attempt: attempt(1))))
            == [.extendLeases([attempt(1)], worker: .key(workerKey), check: .accept)])
    }

    @Test("a running attempt a HELLO reports after a restart has no claim here: its ACCEPT goes to the store")
    func acceptOfHelloAttempt() {
        var harness = Harness()
        _ = harness.receive(.hello(Hello(workerName: "w", slots: 2, encoders: ["libx264"], running: [attempt(0)])))
        harness.on(.workerRegistered(.key(workerKey), workerID: workerID))
        harness.on(.leasesExtended([attempt(0)], worker: .key(workerKey), check: .helloRunning(incarnation: 1),
            current: [attempt(0).leaseToken]))
        #expect(harness.receive(.accept(Accept(attempt: attempt(0))))
            == [.extendLeases([attempt(0)], worker: .key(workerKey), check: .accept)])
    }

    @Test("an extension that matched nothing answers ACK stale and CANCEL lease-lost, and frees the slot")
    func staleExtension() {
        var harness = Harness()
        harness.welcome(slots: 1)
        _ = harness.assign([attempt(0)])
        _ = harness.receive(.progress(Progress(attempt: attempt(0), fraction: 0.5, frames: 1)))
        let answered = harness.on(.leasesExtended([attempt(0)], worker: .key(workerKey), check: .progress, current: []))
        #expect(acks(answered) == [Ack(attempt: attempt(0), acknowledges: .progress, outcome: .stale)])
        #expect(cancels(answered) == [Cancel(attempt: attempt(0), reason: .leaseLost)])
        harness.on(.workAvailable)
        #expect(claimed(harness.machine.dispatch(at: harness.now)) == [1])
    }

    @Test("an extension that lost its lease to the attempt's own COMPLETE is a duplicate: no stale, no CANCEL",
          arguments: [ResultOutcome?.none, .completed(jobReadyToStitch: false)])
    func extensionRacingComplete(committed: ResultOutcome?) {
        var harness = Harness()
        harness.welcome()
        _ = harness.assign([attempt(0)])
        _ = harness.receive(.progress(Progress(attempt: attempt(0), fraction: 0.99, frames: 9)))
        _ = harness.receive(.complete(complete(attempt(0))))
        if let committed {
            harness.on(.resultCommitted(.complete(complete(attempt(0))), committed))
        }
        let answered = harness.on(.leasesExtended([attempt(0)], worker: .key(workerKey), check: .progress, current: []))
        #expect(acks(answered) == [Ack(attempt: attempt(0), acknowledges: .progress, outcome: .duplicate)])
        #expect(cancels(answered).isEmpty)
    }

    @Test("results awaiting their commit: up to one per slot leave the slot free; more hold it until committed")
    func commitBackpressure() {
        var harness = Harness()
        harness.welcome(slots: 1)
        _ = harness.assign([attempt(0)])
        _ = harness.receive(.complete(complete(attempt(0))))
        _ = harness.assign([attempt(1)])
        #expect(harness.machine.sessionSnapshots(now: harness.now).first?.running == 2, "one running, one being committed")
        _ = harness.receive(.complete(complete(attempt(1))))
        harness.on(.workAvailable)
        #expect(harness.machine.dispatch(at: harness.now).isEmpty, "two results awaiting commit on one slot: the slot is taken")
        harness.on(.resultCommitted(.complete(complete(attempt(0))), .completed(jobReadyToStitch: false)))
        #expect(claimed(harness.machine.dispatch(at: harness.now)) == [1])
    }

    @Test("a late extension does not bring back an attempt whose result was committed")
    func lateExtensionAfterCommit() {
        var harness = Harness()
        harness.welcome(slots: 1)
        _ = harness.assign([attempt(0)])
        _ = harness.receive(.accept(Accept(attempt: attempt(0))))
        _ = harness.receive(.complete(complete(attempt(0))))
        harness.on(.resultCommitted(.complete(complete(attempt(0))), .completed(jobReadyToStitch: false)))
        harness.on(.leasesExtended([attempt(0)], worker: .key(workerKey), check: .accept,
            current: [attempt(0).leaseToken]))
        #expect(harness.machine.sessionSnapshots(now: harness.now).first?.running == 0)
    }

    @Test("a result whose commit failed frees its slot too; a job ending meanwhile sends it no CANCEL")
    func reportedAttemptsAreNotCancelled() {
        var harness = Harness()
        harness.welcome(slots: 3)
        let other = attempt(0, job: 2)
        _ = harness.assign([attempt(0), attempt(1), other])
        _ = harness.receive(.complete(complete(attempt(0))))
        _ = harness.receive(.complete(complete(other)))
        harness.on(.resultCommitFailed(.complete(complete(other))))
        #expect(harness.machine.sessionSnapshots(now: harness.now).first?.running == 2)
        let ended = harness.on(.jobEnded(.numbered(1), .jobCancelled))
        #expect(cancels(ended) == [Cancel(attempt: attempt(1), reason: .jobCancelled)])
        #expect(harness.machine.sessionSnapshots(now: harness.now).first?.running == 0)
    }

    @Test("leases the reaper took back: their holder gets CANCEL; a job that failed cancels its other attempts")
    func reaped() {
        var harness = Harness()
        harness.welcome()
        harness.welcome(other, id: otherID)
        _ = harness.assign([attempt(0)])
        _ = harness.assign([attempt(1)], to: other)
        let directives = harness.on(.leasesTakenBack([TakenBackLease(job: .numbered(1),
            leaseToken: attempt(0).leaseToken, jobFailed: true)]))
        #expect(directives.compactMap { $0.sent.map { [$0.peer: $0.message] } } == [
            [worker: .cancel(Cancel(attempt: attempt(0), reason: .leaseLost))],
            [other: .cancel(Cancel(attempt: attempt(1), reason: .jobFailed))],
        ])
        #expect(directives.contains(.removeJobFiles(.numbered(1))))
    }

    // MARK: Results

    @Test("COMPLETE is ACKed only after its commit; the last segment wakes the stitcher")
    func completeAfterCommit() {
        var harness = Harness()
        harness.welcome()
        _ = harness.assign([attempt(0)])
        let received = harness.receive(.complete(complete(attempt(0))))
        #expect(received == [.commitResult(.complete(complete(attempt(0))))])
        let committed = harness.on(.resultCommitted(.complete(complete(attempt(0))),
            .completed(jobReadyToStitch: true)))
        #expect(acks(committed) == [Ack(attempt: attempt(0), acknowledges: .complete, outcome: .accepted)])
        #expect(committed.contains(.wakeStitcher))
    }

    @Test("a COMPLETE resent while the first is being committed waits for that commit and gets duplicate")
    func duplicateInFlight() {
        var harness = Harness()
        harness.welcome()
        let result = complete(attempt(0))
        _ = harness.receive(.complete(result))
        #expect(harness.receive(.complete(result)).isEmpty, "no second commit")
        let committed = harness.on(.resultCommitted(.complete(result), .completed(jobReadyToStitch: false)))
        #expect(acks(committed).map(\.outcome) == [.accepted, .duplicate])
    }

    @Test("resends after the commit get the same answer at once: duplicate, or stale for a stale one",
          arguments: [(ResultOutcome.completed(jobReadyToStitch: false), Ack.Outcome.duplicate),
                      (.alreadyCompleted, .duplicate), (.staleLease, .stale)])
    func resendAnswered(outcome: ResultOutcome, resent: Ack.Outcome) {
        var harness = Harness()
        harness.welcome()
        let result = complete(attempt(0))
        _ = harness.receive(.complete(result))
        let first = harness.on(.resultCommitted(.complete(result), outcome))
        #expect(acks(first).map(\.outcome) == [outcome.ackOutcome])
        for _ in 0..<3 {
            let again = harness.receive(.complete(result))
            #expect(again.compactMap(\.committed).isEmpty, "answered from memory, not committed again")
            #expect(acks(again) == [Ack(attempt: attempt(0), acknowledges: .complete, outcome: resent)])
        }
    }

    @Test("a FAIL resent after its commit is a duplicate, not stale")
    func failResent() {
        var harness = Harness()
        harness.welcome()
        let failure = Fail(attempt: attempt(0), code: .undecodableInput, reason: "bad", retryable: false)
        #expect(harness.receive(.fail(failure)) == [.commitResult(.fail(failure))])
        harness.on(.resultCommitted(.fail(failure), .recorded(.willRetry(at: .distantPast))))
        #expect(acks(harness.receive(.fail(failure))) == [Ack(attempt: attempt(0), acknowledges: .fail, outcome: .duplicate)])
    }

    @Test("a result whose commit failed is not ACKed; the worker's resend is committed again")
    func commitFailed() {
        var harness = Harness()
        harness.welcome()
        let result = complete(attempt(0))
        _ = harness.receive(.complete(result))
        #expect(messages(harness.on(.resultCommitFailed(.complete(result)))).isEmpty)
        #expect(harness.receive(.complete(result)) == [.commitResult(.complete(result))])
    }

    @Test("a FAIL that fails the job: ACK, then CANCEL job-failed to every other attempt of that job only")
    func failFailsJob() {
        var harness = Harness()
        harness.welcome(slots: 3)
        harness.welcome(other, id: otherID, slots: 3)
        _ = harness.assign([attempt(0), attempt(1), attempt(0, job: 2)])
        _ = harness.assign([attempt(2)], to: other)
        let failure = Fail(attempt: attempt(0), code: .undecodableInput, reason: "bad bytes", retryable: false)
        _ = harness.receive(.fail(failure))
        let committed = harness.on(.resultCommitted(.fail(failure), .recorded(.jobFailed(segmentState: .dead))))
        #expect(acks(committed) == [Ack(attempt: attempt(0), acknowledges: .fail, outcome: .accepted)])
        #expect(Set(cancels(committed)) == [Cancel(attempt: attempt(1), reason: .jobFailed),
                                            Cancel(attempt: attempt(2), reason: .jobFailed)])
        #expect(committed.contains(.removeJobFiles(.numbered(1))))
    }

    @Test("a cancelled job: CANCEL job-cancelled to every worker holding one of its attempts, files removed")
    func cancelFanOut() {
        var harness = Harness()
        harness.welcome()
        harness.welcome(other, id: otherID)
        _ = harness.assign([attempt(0), attempt(0, job: 2)])
        _ = harness.assign([attempt(1)], to: other)
        let directives = harness.on(.jobEnded(.numbered(1), .jobCancelled))
        #expect(Set(directives.compactMap(\.sent).map { "\($0.peer.routingID!) \($0.message)" }) == [
            "w:one \(CoordinatorMessage.cancel(Cancel(attempt: attempt(0), reason: .jobCancelled)))",
            "w:two \(CoordinatorMessage.cancel(Cancel(attempt: attempt(1), reason: .jobCancelled)))",
        ])
        #expect(directives.last == .removeJobFiles(.numbered(1)))
        #expect(harness.machine.sessionSnapshots(now: harness.now).map(\.running).sorted() == [0, 1], "job-2's attempt still runs")
    }

    // MARK: Dispatch

    @Test("every worker's free slots go into one claim; slots freed while it is in flight go into the next")
    func claimBatching() throws {
        var harness = Harness()
        harness.welcome(slots: 4)
        harness.welcome(other, id: otherID, slots: 2)
        let first = try #require(harness.machine.dispatch(at: harness.now).compactMap(\.claim).first)
        // Each demand carries the encoders its worker's HELLO listed (the store routes by them).
        #expect(Set(first.demands) == [ClaimDemand(worker: .key(workerKey), workerID: workerID, limit: 4, encoders: ["libx264"]),
                                       ClaimDemand(worker: .key(otherKey), workerID: otherID, limit: 2, encoders: ["libx264"])])
        #expect(harness.machine.dispatch(at: harness.now).isEmpty, "one claim in flight at a time")
        let assigned = harness.on(.claimed([.key(workerKey): (0..<4).map { assignment(attempt($0)) },
            .key(otherKey): [assignment(attempt(4))]], demands: first.demands, generation: first.generation))
        let assigns = messages(assigned).compactMap { if case .assign(let assign) = $0 { assign } else { nil } }
        #expect(assigns.map(\.attempt.segment).sorted() == [0, 1, 2, 3, 4])
        #expect(assigns.allSatisfy { $0.leaseMilliseconds == 30_000 && $0.progressIntervalMilliseconds == 5000 })
        #expect(assigned.compactMap(\.sent).filter { $0.peer == other }.count == 1)
        #expect(!harness.machine.workAvailable, "a short claim: nothing else is claimable")
        harness.on(.workAvailable)
        #expect(claimed(harness.machine.dispatch(at: harness.now)) == [1], "only the other worker's last slot is free")
        harness.on(.claimFailed([ClaimDemand(worker: .key(otherKey), workerID: otherID, limit: 1)]))
        harness.on(.workAvailable)
        _ = harness.receive(.complete(complete(attempt(0))))
        _ = harness.receive(.complete(complete(attempt(1))))
        #expect(claimed(harness.machine.dispatch(at: harness.now)) == [1, 2], "a reported result frees its slot")
    }

    @Test("a short claim means nothing is claimable until a wake-up; a wake-up during the claim is not lost")
    func workAvailability() throws {
        var harness = Harness()
        harness.welcome(slots: 2)
        var claim = try #require(harness.machine.dispatch(at: harness.now).compactMap(\.claim).first)
        harness.on(.claimed([:], demands: claim.demands, generation: claim.generation))
        #expect(!harness.machine.workAvailable)
        #expect(harness.machine.dispatch(at: harness.now).isEmpty)

        harness.on(.workAvailable)
        claim = try #require(harness.machine.dispatch(at: harness.now).compactMap(\.claim).first)
        harness.on(.workAvailable)  // a NOTIFY while the claim is in flight
        harness.on(.claimed([:], demands: claim.demands, generation: claim.generation))
        #expect(harness.machine.workAvailable)
        #expect(claimed(harness.machine.dispatch(at: harness.now)) == [2])
    }

    @Test("a failed claim frees the slots and stops claiming until the next wake-up (no hot loop)")
    func claimFailed() throws {
        var harness = Harness()
        harness.welcome(slots: 2)
        let claim = try #require(harness.machine.dispatch(at: harness.now).compactMap(\.claim).first)
        harness.on(.claimFailed(claim.demands))
        #expect(harness.machine.dispatch(at: harness.now).isEmpty)
        harness.on(.workAvailable)
        #expect(claimed(harness.machine.dispatch(at: harness.now)) == [2])
    }

    @Test("an ASSIGN that cannot be routed is handed back at once and the worker is forgotten")
    func unroutableAssign() {
        var harness = Harness()
        harness.welcome()
        let assigned = harness.assign([attempt(0)])
        guard case .assign(let assign)? = messages(assigned).first else {
            Issue.record("no ASSIGN")
            return
        }
        let error = WireError(.unroutable, "host unreachable")
        let directives = harness.on(.sendFailed(.assign(assign), to: worker, worker: .key(workerKey), error: error))
        #expect(directives.contains(.abandonAttempt(attempt(0), reason: "the assignment could not be delivered: host unreachable",
                                                    spendsAttempt: false)))
        #expect(directives.contains(.markWorkers([workerID], online: false)))
        #expect(harness.machine.sessionSnapshots(now: harness.now).isEmpty)
    }

    @Test("claims that come back after the worker left are handed back")
    func claimAfterLeaving() throws {
        var harness = Harness()
        harness.welcome()
        let claim = try #require(harness.machine.dispatch(at: harness.now).compactMap(\.claim).first)
        _ = harness.receive(.disconnect(Disconnect(reason: .shutdown)))
        let directives = harness.on(.claimed([.key(workerKey): [assignment(attempt(0))]], demands: claim.demands,
            generation: claim.generation))
        #expect(directives == [.abandonAttempt(attempt(0), reason: "the worker left before its assignment was sent",
                                               spendsAttempt: false)])
    }

    // MARK: Time

    @Test("HEARTBEAT goes to workers nothing was sent to for an interval")
    func heartbeats() {
        var harness = Harness()
        harness.welcome()
        harness.advance(.milliseconds(500))
        #expect(messages(harness.on(.tick)).isEmpty)
        harness.advance(.milliseconds(600))
        _ = harness.receive(.heartbeat(Heartbeat()))
        #expect(messages(harness.on(.tick)) == [.heartbeat(Heartbeat())])
        #expect(messages(harness.on(.tick)).isEmpty, "just sent one")
    }

    @Test("a silent worker gets no new assignments; it is forgotten later; speaking again revives it before that")
    func liveness() {
        var harness = Harness()
        harness.welcome(slots: 1)
        harness.advance(.milliseconds(3100))
        let silent = harness.on(.tick)
        #expect(silent.contains(.notice(.workerSilent(.key(workerKey)))))
        #expect(harness.machine.dispatch(at: harness.now).isEmpty)

        let back = harness.receive(.heartbeat(Heartbeat()))
        #expect(back.contains(.notice(.workerBack(.key(workerKey)))))
        #expect(claimed(harness.machine.dispatch(at: harness.now)) == [1])

        let gone = harness.run(for: .seconds(41))
        #expect(gone.contains(.notice(.workerForgotten(.key(workerKey)))))
        #expect(gone.contains(.markWorkers([workerID], online: false)))
        #expect(messages(harness.receive(.heartbeat(Heartbeat())))
                == [.disconnect(Disconnect(reason: .reregister, detail: "unknown session: send HELLO"))])
    }

    @Test("a worker that falls silent while it holds attempts loses its leases at once, not at lease expiry")
    func silenceReleasesLeases() {
        var harness = Harness()
        harness.welcome(slots: 2)
        _ = harness.assign([attempt(0)])
        _ = harness.receive(.accept(Accept(attempt: attempt(0))))
        let quiet = harness.run(for: .seconds(3))
        #expect(!quiet.contains { if case .releaseWorker = $0 { true } else { false } }, "3 intervals is not yet silence")
        let silent = harness.run(for: .milliseconds(500))
        #expect(silent.contains(.notice(.workerSilent(.key(workerKey)))))
        #expect(silent.contains { if case .releaseWorker(workerID, _) = $0 { true } else { false } })
        // The store's answer: the lease is taken back, the (possibly late) worker is told to stop.
        let taken = harness.on(.leasesTakenBack([TakenBackLease(job: .numbered(1),
            leaseToken: attempt(0).leaseToken, jobFailed: false)]))
        #expect(cancels(taken) == [Cancel(attempt: attempt(0), reason: .leaseLost)])
        #expect(harness.machine.heldLeaseTokens.isEmpty)
    }

    @Test("time the coordinator itself did not run is not the workers' silence")
    func ownPauseIsNotSilence() {
        var harness = Harness()
        harness.welcome(slots: 1)
        _ = harness.assign([attempt(0)])
        _ = harness.receive(.accept(Accept(attempt: attempt(0))))
        harness.on(.tick)
        harness.advance(.seconds(10))  // stopped: no tick for ten intervals
        let resumed = harness.on(.tick)
        #expect(!resumed.contains(.notice(.workerSilent(.key(workerKey)))))
        #expect(!resumed.contains { if case .releaseWorker = $0 { true } else { false } })
        // But silence after it still counts.
        let later = harness.run(for: .seconds(4))
        #expect(later.contains { if case .releaseWorker = $0 { true } else { false } })
    }

    @Test("a send that fails because the worker's connection is gone releases its leases; an old route's failure does not")
    func goneReleases() {
        var harness = Harness()
        harness.welcome(slots: 1)
        _ = harness.assign([attempt(0)])
        let error = WireError(.unroutable, "host unreachable")
        let oldRoute = WirePeer(routingID: RoutingID("w:old"), publicKey: workerKey)
        let stale = harness.on(.sendFailed(.heartbeat(Heartbeat()), to: oldRoute, worker: .key(workerKey),
            error: error))
        #expect(!stale.contains { if case .releaseWorker = $0 { true } else { false } })
        #expect(harness.machine.sessionSnapshots(now: harness.now).count == 1)
        let gone = harness.on(.sendFailed(.heartbeat(Heartbeat()), to: worker, worker: .key(workerKey), error: error))
        #expect(gone.contains { if case .releaseWorker(workerID, _) = $0 { true } else { false } })
        #expect(gone.contains(.markWorkers([workerID], online: false)))
        #expect(harness.machine.sessionSnapshots(now: harness.now).isEmpty)
    }

    @Test("an ASSIGN neither accepted nor answered within the accept deadline is taken back, spending the attempt")
    func acceptDeadline() {
        var harness = Harness()
        harness.welcome(slots: 2)
        _ = harness.assign([attempt(0), attempt(1)])
        _ = harness.receive(.accept(Accept(attempt: attempt(1))))
        var directives: [CoordinatorDirective] = []
        for _ in 0..<24 {  // 6 s, heard from all along
            directives += harness.run(for: .milliseconds(250))
            _ = harness.receive(.heartbeat(Heartbeat()))
        }
        let abandoned = directives.compactMap { directive -> SegmentAttempt? in
            if case .abandonAttempt(let attempt, _, true) = directive { attempt } else { nil }
        }
        #expect(abandoned == [attempt(0)], "the accepted attempt stays")
        #expect(cancels(directives) == [Cancel(attempt: attempt(0), reason: .leaseLost)])
        #expect(harness.machine.heldLeaseTokens == [attempt(1).leaseToken])
    }

    @Test("a refusal for the worker's own set-up quarantines it: no claims for a while, longer each time, cleared by a COMPLETE")
    func quarantine() throws {
        var harness = Harness()
        harness.welcome(slots: 1)
        _ = harness.assign([attempt(0)])
        let refusal = Fail(attempt: attempt(0), code: .outputOutsideSpool, reason: "not in /srv/spool", retryable: true)
        let refused = harness.receive(.fail(refusal))
        #expect(refused.contains(.notice(.workerQuarantined(.key(workerKey), for: .seconds(10),
                                                             reason: "output-outside-spool: not in /srv/spool"))))
        #expect(refused.contains(.commitResult(.fail(refusal))))
        let snapshot = try #require(harness.machine.sessionSnapshots(now: harness.now).first)
        #expect(snapshot.quarantineRemaining == .seconds(10))
        #expect(snapshot.quarantineReason == "output-outside-spool: not in /srv/spool")
        harness.on(.resultCommitted(.fail(refusal), .recorded(.willRetry(at: .distantPast))))
        harness.on(.workAvailable)
        #expect(harness.machine.dispatch(at: harness.now).isEmpty, "quarantined: nothing is claimed for it")

        harness.advance(.seconds(10))
        _ = harness.receive(.heartbeat(Heartbeat()))
        #expect(claimed(harness.machine.dispatch(at: harness.now)) == [1], "free again after 10 s")
        harness.on(.claimed([.key(workerKey): [assignment(attempt(1))]],
            demands: [ClaimDemand(worker: .key(workerKey), workerID: workerID, limit: 1)], generation: 0))
        let again = Fail(attempt: attempt(1), code: .spoolUnwritable, reason: "read-only", retryable: true)
        #expect(harness.receive(.fail(again)).contains(.notice(.workerQuarantined(
            .key(workerKey), for: .seconds(20), reason: "spool-unwritable: read-only"))), "doubled")
        harness.on(.resultCommitted(.fail(again), .recorded(.willRetry(at: .distantPast))))

        harness.advance(.seconds(20))
        _ = harness.receive(.heartbeat(Heartbeat()))
        harness.on(.workAvailable)
        let claim = try #require(harness.machine.dispatch(at: harness.now).compactMap(\.claim).first)
        harness.on(.claimed([.key(workerKey): [assignment(attempt(2))]], demands: claim.demands,
            generation: claim.generation))
        _ = harness.receive(.complete(complete(attempt(2))))
        harness.on(.resultCommitted(.complete(complete(attempt(2))), .completed(jobReadyToStitch: false)))
        let third = Fail(attempt: attempt(3), code: .encoderMissing, reason: "no libx265", retryable: true)
        #expect(harness.receive(.fail(third)).contains(.notice(.workerQuarantined(
            .key(workerKey), for: .seconds(10), reason: "encoder-missing: no libx265"))), "a COMPLETE reset it")
    }

    @Test("a FAIL that is the segment's own, or nobody's, quarantines nobody")
    func noQuarantine() {
        var harness = Harness()
        harness.welcome(slots: 1)
        _ = harness.assign([attempt(0)])
        for code in [Fail.Code.undecodableInput, .drained] {
            let fail = Fail(attempt: attempt(0), code: code, reason: "r", retryable: true)
            #expect(!harness.receive(.fail(fail)).contains { if case .notice(.workerQuarantined) = $0 { true } else { false } })
        }
    }

    @Test("a worker that hands an attempt back because it is shutting down is offered nothing more; another FAIL frees its slot")
    func drainingWorkerGetsNoAssign() {
        for code in [Fail.Code.drained, .undecodableInput] {
            var harness = Harness()
            harness.welcome(slots: 1)
            _ = harness.assign([attempt(0)])
            let fail = Fail(attempt: attempt(0), code: code, reason: "r", retryable: true)
            _ = harness.receive(.fail(fail))
            _ = harness.on(.resultCommitted(.fail(fail), .recorded(.willRetry(at: .distantPast))))
            harness.on(.workAvailable)
            let claims = harness.machine.dispatch(at: harness.now).compactMap(\.claim)
            if code == .drained {
                #expect(claims.isEmpty, "a draining worker refuses every ASSIGN: it must not be offered its free slot")
            } else {
                #expect(claims.count == 1, "after the segment's own failure the worker's slot is free again")
            }
        }
        // A new session (the worker restarted) is assignable again.
        var harness = Harness()
        harness.welcome(slots: 1)
        _ = harness.assign([attempt(0)])
        let fail = Fail(attempt: attempt(0), code: .drained, reason: "r", retryable: true)
        _ = harness.receive(.fail(fail))
        _ = harness.on(.resultCommitted(.fail(fail), .recorded(.willRetry(at: .distantPast))))
        _ = harness.receive(.disconnect(Disconnect(reason: .shutdown, detail: "stopped")))
        harness.welcome(slots: 1)
        harness.on(.workAvailable)
        #expect(harness.machine.dispatch(at: harness.now).compactMap(\.claim).count == 1)
    }

    @Test("live workers are recorded as seen every seen-interval")
    func seen() {
        var harness = Harness()
        harness.welcome()
        #expect(harness.on(.tick).contains(.markWorkers([workerID], online: true)))
        harness.advance(.seconds(1))
        _ = harness.receive(.heartbeat(Heartbeat()))
        #expect(!harness.on(.tick).contains { if case .markWorkers = $0 { true } else { false } })
    }

    // MARK: Rejections and shutdown

    @Test("garbled and unexpected messages become a report and nothing else")
    func rejected() {
        var harness = Harness()
        harness.welcome()
        let rejection = WireRejection(.garbled, "not JSON")
        #expect(harness.on(.rejected(rejection, from: worker))
                == [.notice(.dropped(rejection, from: .key(workerKey)))])
    }

    @Test("graceful shutdown: no more claims, answers still flow, then DISCONNECT shutdown to every worker")
    func shutdown() {
        var harness = Harness()
        harness.welcome()
        harness.welcome(other, id: otherID)
        _ = harness.receive(.complete(complete(attempt(0))))
        harness.on(.drainStarted)
        #expect(harness.machine.dispatch(at: harness.now).isEmpty)
        let answered = harness.on(.resultCommitted(.complete(complete(attempt(0))),
            .completed(jobReadyToStitch: false)))
        #expect(acks(answered).count == 1)
        let farewell = harness.on(.drained)
        #expect(Set(farewell.compactMap(\.sent?.peer)) == [worker, other])
        #expect(Set(messages(farewell)) == [.disconnect(Disconnect(reason: .shutdown, detail: "the coordinator is stopping"))])
        #expect(harness.on(.drained).isEmpty)
    }

    @Test("the answer memory keeps the newest outcomes only")
    func answeredBounded() {
        var answered = AnsweredResults(capacity: 3)
        for index in 0..<10 { answered.record(.staleLease, for: .numbered(index)) }
        #expect(answered.count == 3)
        #expect(answered[.numbered(9)] == .staleLease)
        #expect(answered[.numbered(6)] == nil)
    }
}

// MARK: - Backup attempts

private func costed(_ attempt: SegmentAttempt, _ cost: Int64) -> Assignment {
    Assignment(attempt: attempt, outputPath: "/spool/\(attempt.segment)-\(attempt.leaseToken)",
               spec: JSONPayload(.object([:])), cost: cost)
}

extension CoordinatorDirective {
    var backupClaim: (primary: SegmentAttempt, demand: ClaimDemand)? {
        if case .claimBackup(let primary, let demand) = self { return (primary, demand) }
        return nil
    }
}

/// A second attempt of segment 0 of job 1 (the backup's own token).
private let backupOfZero = SegmentAttempt(job: .numbered(1), segment: 0, attempt: 1, leaseToken: .numbered(9_999))

@Suite("Coordinator backup attempts")
struct CoordinatorBackupTests {
    /// Workers stay live for 30 s of silence here: a straggler is slow, not gone.
    static let policy = CoordinatorPolicy(
        heartbeatInterval: .seconds(1), heartbeatLiveness: 30, leaseDuration: .seconds(60), forgetAfter: .seconds(90),
        seenInterval: .seconds(10))

    /// Two workers of one slot; `worker` runs segment 0 (cost 100), `other` segment 1 (cost
    /// `otherCost`), which it completes after 2 s; then a claim comes back empty (nothing left).
    private func straggling(otherCost: Int64 = 100, policy: CoordinatorPolicy = CoordinatorBackupTests.policy) -> Harness {
        var harness = leasing([.key(workerKey): [costed(attempt(0), 100)], .key(otherKey): [costed(attempt(1), otherCost)]],
                              policy: policy)
        harness.advance(.seconds(2))
        _ = harness.receive(.complete(complete(attempt(1))), from: other)
        harness.on(.resultCommitted(.complete(complete(attempt(1))), .completed(jobReadyToStitch: false)))
        // The freed slot's claim finds nothing: the job has only its running segment left.
        let empty = harness.machine.dispatch(at: harness.now).compactMap(\.claim).first!
        harness.on(.claimed([:], demands: empty.demands, generation: empty.generation))
        return harness
    }

    /// `worker` (`workerSlots` slots) and `other` (one) welcomed, and the first claim answered with `leased`.
    private func leasing(_ leased: [WorkerIdentity: [Assignment]], workerSlots: Int = 1,
                         policy: CoordinatorPolicy = CoordinatorBackupTests.policy) -> Harness {
        var harness = Harness()
        harness.machine = CoordinatorStateMachine(policy: policy, sessionName: "test")
        harness.welcome(worker, id: workerID, slots: workerSlots)
        harness.welcome(other, id: otherID, slots: 1)
        harness.on(.workAvailable)
        let claim = harness.machine.dispatch(at: harness.now).compactMap(\.claim).first!
        harness.on(.claimed(leased, demands: claim.demands, generation: claim.generation))
        return harness
    }

    @Test("a straggler past 1.5× its expected time gets one backup on the idle worker; the backup wins, the straggler is cancelled, nothing fails")
    func backupWins() {
        var harness = straggling()
        // 2 s of 3 s (1.5 × the 2 s its cost predicts at the job's pace): not yet.
        #expect(harness.machine.dispatch(at: harness.now).isEmpty)
        let ticks = harness.ticking(for: .milliseconds(1250))
        let claims = ticks.compactMap(\.backupClaim)
        #expect(claims.count == 1 && claims.first?.primary == attempt(0))
        #expect(claims.first?.demand == ClaimDemand(worker: .key(otherKey), workerID: otherID, limit: 1, encoders: ["libx264"]))
        let demand = claims[0].demand
        let started = harness.on(.backupClaimed(costed(backupOfZero, 100), of: attempt(0), demand: demand))
        #expect(started.contains(.notice(.backupStarted(.key(otherKey), backupOfZero, of: attempt(0)))))
        let assigns = started.compactMap { if case .send(.assign(let a), let peer, _) = $0 { (a, peer) } else { nil } }
        #expect(assigns.map(\.0.attempt) == [backupOfZero] && assigns.map(\.1) == [other])
        // One backup per segment, and no slot is idle now.
        #expect(harness.ticking(for: .seconds(5)).compactMap(\.backupClaim).isEmpty)

        _ = harness.receive(.complete(complete(backupOfZero)), from: other)
        let won = harness.on(.resultCommitted(.complete(complete(backupOfZero)), .completed(jobReadyToStitch: true)))
        #expect(cancels(won) == [Cancel(attempt: attempt(0), reason: .leaseLost)])
        #expect(won.contains { if case .send(.cancel, let peer, _) = $0 { peer == worker } else { false } })
        #expect(won.contains(.notice(.attemptSuperseded(.key(workerKey), attempt(0)))))
        #expect(won.contains(.wakeStitcher))
        #expect(!won.contains { if case .abandonAttempt = $0 { true } else { false } }, "the loser is no failure")
        #expect(harness.machine.sessionSnapshots(now: harness.now).allSatisfy { $0.running == 0 })
    }

    @Test("when the straggler commits first, its backup is cancelled")
    func primaryWins() {
        var harness = straggling()
        let demand = harness.ticking(for: .seconds(2)).compactMap(\.backupClaim).first!.demand
        harness.on(.backupClaimed(costed(backupOfZero, 100), of: attempt(0), demand: demand))
        _ = harness.receive(.complete(complete(attempt(0))))
        let won = harness.on(.resultCommitted(.complete(complete(attempt(0))), .completed(jobReadyToStitch: true)))
        #expect(cancels(won) == [Cancel(attempt: backupOfZero, reason: .leaseLost)])
        #expect(won.contains(.notice(.attemptSuperseded(.key(otherKey), backupOfZero))))
    }

    @Test("the expected time scales with cost: a cheap finished segment makes an expensive one a straggler later")
    func costScalesTheThreshold() {
        // Segment 1 cost 25 in 2 s: segment 0 (cost 100) should take 8 s, so its backup waits for 12 s.
        var harness = straggling(otherCost: 25)
        #expect(harness.ticking(for: .seconds(9)).compactMap(\.backupClaim).isEmpty)
        #expect(harness.ticking(for: .seconds(2)).compactMap(\.backupClaim).count == 1)
    }

    @Test("no backup while segments are claimable, before the job has a pace, when the store refuses, or when disabled")
    func noBackup() {
        // The store refused it (the job has segments to claim again): not asked again.
        var refused = straggling()
        let demand = refused.ticking(for: .seconds(2)).compactMap(\.backupClaim).first!.demand
        #expect(refused.on(.backupClaimed(nil, of: attempt(0), demand: demand)).isEmpty)
        #expect(refused.ticking(for: .seconds(10)).compactMap(\.backupClaim).isEmpty)

        // Work became available: the dispatcher claims first.
        var claimable = straggling()
        claimable.on(.workAvailable)
        claimable.advance(.seconds(5))
        #expect(claimable.machine.dispatch(at: claimable.now).compactMap(\.backupClaim).isEmpty)

        // Nothing of the job committed yet: no pace to judge by.
        var early = leasing([.key(workerKey): [costed(attempt(0), 100)]])
        #expect(early.ticking(for: .seconds(20)).compactMap(\.backupClaim).isEmpty)

        var off = Self.policy
        off.backupAfterPercent = 0
        var disabled = straggling(policy: off)
        #expect(disabled.ticking(for: .seconds(20)).compactMap(\.backupClaim).isEmpty)
    }

    @Test("a straggler whose own worker is the only idle one is passed over for one another worker can take")
    func idleHolderPassedOver() {
        var harness = leasing([.key(workerKey): [costed(attempt(0), 50), costed(attempt(2), 100)],
                               .key(otherKey): [costed(attempt(1), 100)]], workerSlots: 2)
        harness.advance(.seconds(1))
        _ = harness.receive(.complete(complete(attempt(2))))
        harness.on(.resultCommitted(.complete(complete(attempt(2))), .completed(jobReadyToStitch: false)))
        let empty = harness.machine.dispatch(at: harness.now).compactMap(\.claim).first!
        harness.on(.claimed([:], demands: empty.demands, generation: empty.generation))
        // Segment 0 (cost 50) is late first, but only its own worker has a slot free; segment 1
        // (cost 100, on the other worker) is late from 1.5 s and goes to that free slot.
        let claims = harness.ticking(for: .seconds(1)).compactMap(\.backupClaim)
        #expect(claims.map(\.primary) == [attempt(1)])
        #expect(claims.map(\.demand.worker) == [.key(workerKey)])
    }

    @Test("with nothing to claim, stragglers are looked for once per check interval while nothing but time changes")
    func lookedForOncePerInterval() {
        var slow = Self.policy
        slow.backupCheckInterval = .milliseconds(1500)
        var harness = straggling(policy: slow)
        // t = 2 s: nothing is overdue yet (segment 0 becomes a straggler at 3 s); the next look is at 3.5 s.
        #expect(harness.machine.dispatch(at: harness.now).isEmpty)
        harness.advance(.milliseconds(1200))
        #expect(harness.machine.dispatch(at: harness.now).compactMap(\.backupClaim).isEmpty,
                "looked again before the interval although nothing changed")
        harness.advance(.milliseconds(300))
        #expect(harness.machine.dispatch(at: harness.now).compactMap(\.backupClaim).map(\.primary) == [attempt(0)])
    }

    @Test("a failed backup claim frees the slot and may be tried again")
    func failedClaim() {
        var harness = straggling()
        let demand = harness.ticking(for: .seconds(2)).compactMap(\.backupClaim).first!.demand
        harness.on(.backupClaimFailed(of: attempt(0), demand: demand))
        #expect(harness.ticking(for: .milliseconds(500)).compactMap(\.backupClaim).count == 1)
    }

    @Test("progress counts a segment and its backup once, weighted by cost")
    func progressCountsASegmentOnce() {
        var harness = straggling()
        let demand = harness.ticking(for: .seconds(2)).compactMap(\.backupClaim).first!.demand
        harness.on(.backupClaimed(costed(backupOfZero, 100), of: attempt(0), demand: demand))
        _ = harness.receive(.progress(Progress(attempt: attempt(0), fraction: 0.25, frames: 5)))
        _ = harness.receive(.progress(Progress(attempt: backupOfZero, fraction: 0.5, frames: 9)), from: other)
        #expect(harness.machine.runningProgress(ofJob: .numbered(1)) == RunningProgress(segments: 0.5, cost: 50))
    }
}

extension Harness {
    /// Lets `duration` pass with the timer running every 250 ms and a dispatch after each tick, as
    /// the shell does; the directives of both.
    fileprivate mutating func ticking(for duration: Duration) -> [CoordinatorDirective] {
        var directives: [CoordinatorDirective] = []
        var passed: Duration = .zero
        while passed < duration {
            advance(.milliseconds(250))
            passed += .milliseconds(250)
            directives += on(.tick)
            directives += machine.dispatch(at: now)
        }
        return directives
    }
}

// MARK: - Protocol versions

@Suite("Coordinator state machine: worker-protocol versions")
struct CoordinatorVersionTests {
    private static func refused(version: Int) -> WireRejection {
        WireRejection(.unsupportedVersion, "`version` is \(version)", version: version, messageType: "HELLO")
    }

    @Test("each session speaks the newest version its HELLO names that this build speaks; a version-2 HELLO's is 2")
    func sessionVersion() {
        var harness = Harness()
        // As the shell registers a version-2 HELLO (no `protocolVersions`): its envelope's version.
        let old = Hello(workerName: "old", slots: 1, encoders: []).speaking(envelopeVersion: 2)
        _ = harness.receive(.hello(old))
        #expect(harness.machine.protocolVersion(of: .key(workerKey)) == 2)
        let newer = Hello(workerName: "new", slots: 1, encoders: [], protocolVersions: ProtocolVersions(oldest: 3, newest: 4))
        _ = harness.receive(.hello(newer), from: other)
        #expect(harness.machine.protocolVersion(of: .key(otherKey)) == 3)
        #expect(Set(harness.machine.sessionSnapshots(now: harness.now).map(\.protocolVersion)) == [2, 3])
    }

    @Test("a HELLO of a newer version is answered with DISCONNECT unsupported-version naming both; at most every 10 s")
    func newerRefused() throws {
        var harness = Harness()
        let directives = harness.on(.rejected(Self.refused(version: 4), from: worker))
        #expect(directives.first == .notice(.versionRefused(.key(workerKey), version: 4)))
        let refusal = try #require(messages(directives).first)
        guard case .disconnect(let disconnect) = refusal else {
            Issue.record("not a DISCONNECT: \(refusal)")
            return
        }
        #expect(disconnect.reason == .unsupportedVersion && disconnect.versions == ProtocolVersions(oldest: 2, newest: 3))
        #expect(disconnect.detail.contains("splice-worker 4") && disconnect.detail.contains("upgrade the coordinator first"))
        // The worker says HELLO again: not answered until 10 s have passed (no hot loop), only counted.
        harness.advance(.seconds(9))
        #expect(messages(harness.on(.rejected(Self.refused(version: 4), from: worker))).isEmpty)
        _ = harness.run(for: .seconds(1))
        #expect(messages(harness.on(.rejected(Self.refused(version: 4), from: worker))).count == 1)
        #expect(harness.machine.sessionSnapshots(now: harness.now).isEmpty, "no session for a refused worker")
    }

    @Test("an older worker hears protocol-error, which it knows, saying to upgrade it")
    func olderRefused() throws {
        var harness = Harness()
        let refusal = try #require(messages(harness.on(.rejected(Self.refused(version: 1), from: worker))).first)
        guard case .disconnect(let disconnect) = refusal else {
            Issue.record("not a DISCONNECT: \(refusal)")
            return
        }
        #expect(disconnect.reason == .protocolError && disconnect.detail.contains("upgrade the worker"))
    }

    @Test("other rejections of a version are not answered: only a HELLO opens a conversation")
    func onlyHello() {
        var harness = Harness()
        let heartbeat = WireRejection(.unsupportedVersion, "`version` is 4", version: 4, messageType: "HEARTBEAT")
        #expect(harness.on(.rejected(heartbeat, from: worker)) == [.notice(.dropped(heartbeat, from: .key(workerKey)))])
    }
}
