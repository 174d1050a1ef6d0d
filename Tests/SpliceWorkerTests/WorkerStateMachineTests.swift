import SpliceWire
import Testing

@Suite("Worker state machine: session")
struct WorkerSessionTests {
    @Test("HELLO on start, resent every interval until WELCOME, then heartbeats when idle")
    func helloUntilWelcome() {
        var w = WorkerHarness(helloInterval: .milliseconds(500))
        let hello = w.on(.start).hello
        #expect(hello == Hello(workerName: "w1", slots: 2, encoders: ["libx264"], software: "splice test",
                               standbyAware: true, protocolVersions: ProtocolVersions(oldest: 3, newest: 3)))
        #expect(w.machine.session == .connecting)
        #expect(w.at(.milliseconds(499), .tick).sent.isEmpty)
        #expect(w.at(.milliseconds(500), .tick).sentTypes == ["HELLO"])
        #expect(w.at(.milliseconds(900), .tick).sent.isEmpty)
        #expect(w.at(.milliseconds(1000), .tick).sentTypes == ["HELLO"])

        let welcomed = w.at(.milliseconds(1100), .received(.welcome(WorkerHarness.welcome)))
        #expect(welcomed == [.notice(.registered(session: "s1", coordinator: 0, epoch: nil))])
        #expect(w.machine.session == .registered(session: "s1"))
        #expect(w.machine.heartbeatInterval == .seconds(1))
        // No more HELLO; a HEARTBEAT once nothing was sent for the coordinator's interval (1 s).
        #expect(w.at(.milliseconds(1900), .tick).sent.isEmpty)
        #expect(w.at(.milliseconds(2000), .tick).sentTypes == ["HEARTBEAT"])
        #expect(w.at(.milliseconds(2500), .tick).sent.isEmpty)
        #expect(w.at(.milliseconds(3000), .tick).sentTypes == ["HEARTBEAT"])
    }

    @Test("coordinator silent for heartbeatLiveness intervals: back to connecting, results kept")
    func liveness() {
        var w = WorkerHarness.registered(liveness: 3)
        w.at(.zero, .received(.assign(assign(1))))
        w.at(.milliseconds(100), .encodeFinished(attempt(1).leaseToken, finished))
        // Anything heard resets the clock: a HEARTBEAT at 2 s moves the limit to 5 s.
        w.at(.seconds(2), .received(.heartbeat(Heartbeat())))
        #expect(w.at(.milliseconds(4999), .tick).hello == nil)
        let silent = w.at(.seconds(5), .tick)
        #expect(silent.contains(.notice(.coordinatorSilent(after: .seconds(3)))))
        #expect(w.machine.session == .connecting)
        #expect(silent.hello?.finished == [complete(1)])
        // While connecting nothing but HELLO goes out: no result resends, no heartbeats.
        #expect(w.at(.seconds(5) + .milliseconds(999), .tick).sent.isEmpty)
        #expect(w.at(.seconds(6), .tick).sentTypes == ["HELLO"])
        #expect(w.machine.heldResults == [.complete(complete(1))])
    }

    @Test("DISCONNECT reregister: HELLO at once with everything held; encodes keep running")
    func reregister() {
        var w = WorkerHarness.registered(slots: 3)
        w.at(.zero, .received(.assign(assign(1))))
        w.at(.zero, .received(.assign(assign(2))))
        w.at(.zero, .received(.assign(assign(3))))
        w.at(.milliseconds(10), .encodeFinished(attempt(2).leaseToken, finished))
        w.at(.milliseconds(20), .encodeFinished(attempt(3).leaseToken, .failed(code: .undecodableInput,
                                                                             reason: "no frames", retryable: false)))
        let out = w.at(.milliseconds(30), .received(.disconnect(Disconnect(reason: .reregister, detail: "unknown session"))))
        #expect(out.aborted.isEmpty)
        let hello = out.hello
        #expect(hello?.running == [attempt(1)])
        #expect(hello?.finished == [complete(2)])
        #expect(hello?.failed == [Fail(attempt: attempt(3), code: .undecodableInput, reason: "no frames", retryable: false)])
        #expect(w.machine.session == .connecting)
        // The coordinator ACKs HELLO's results (before WELCOME), then welcomes.
        w.at(.milliseconds(40), ack(2, .complete, .duplicate))
        w.at(.milliseconds(40), ack(3, .fail))
        w.at(.milliseconds(50), .received(.welcome(Welcome(session: "s2", heartbeatIntervalMilliseconds: 1000, heartbeatLiveness: 3))))
        #expect(w.machine.heldResults.isEmpty)
        #expect(w.machine.running == [attempt(1)])
    }

    @Test("DISCONNECT shutdown or protocol-error: HELLO again; revoked: abort everything and stop")
    func disconnects() {
        for reason in [Disconnect.Reason.shutdown, .protocolError] {
            var w = WorkerHarness.registered()
            #expect(w.at(.seconds(1), .received(.disconnect(Disconnect(reason: reason)))).sentTypes == ["HELLO"])
            #expect(w.machine.session == .connecting)
        }
        var w = WorkerHarness.registered()
        w.at(.zero, .received(.assign(assign(1))))
        w.at(.zero, .received(.assign(assign(2))))
        w.at(.milliseconds(10), .encodeFinished(attempt(2).leaseToken, finished))
        let out = w.at(.seconds(1), .received(.disconnect(Disconnect(reason: .revoked))))
        #expect(out.aborted == [attempt(1): .revoked])
        #expect(out.stopped == .revoked)
        #expect(out.deleted.isEmpty, "a held COMPLETE may be committed: its file stays")
        #expect(w.machine.session == .stopped(.revoked))
        // Stopped: only the aborted encode's ending matters (its output goes); nothing else is sent.
        #expect(w.at(.seconds(2), .tick).isEmpty)
        #expect(w.at(.seconds(2), .received(.assign(assign(3)))).isEmpty)
        #expect(w.at(.seconds(2), .encodeFinished(attempt(1).leaseToken, .cancelled)).deleted == [assign(1).outputPath])
        #expect(w.machine.encodesInFlight == 0)
    }
}

@Suite("Worker state machine: assignments and results")
struct WorkerAssignmentTests {
    @Test("ASSIGN starts an encode and sends ACCEPT; a resent ASSIGN gets ACCEPT again, not a second encode")
    func assignAndAccept() {
        var w = WorkerHarness.registered()
        let out = w.at(.zero, .received(.assign(assign(1))))
        #expect(out.started == [attempt(1)])
        #expect(out.sent == [.accept(Accept(attempt: attempt(1)))])
        let again = w.at(.milliseconds(100), .received(.assign(assign(1))))
        #expect(again.started.isEmpty)
        #expect(again.sent == [.accept(Accept(attempt: attempt(1)))])
        #expect(w.machine.running == [attempt(1)])
    }

    @Test("slots: an ASSIGN beyond them is refused with FAIL no-free-slot, held until ACKed")
    func slots() {
        var w = WorkerHarness.registered(slots: 1)
        w.at(.zero, .received(.assign(assign(1))))
        let out = w.at(.zero, .received(.assign(assign(2))))
        #expect(out.started.isEmpty)
        guard case .fail(let fail)? = out.sent.first else {
            Issue.record("expected FAIL, got \(out)")
            return
        }
        #expect(fail.code == .noFreeSlot && fail.retryable && fail.attempt == attempt(2))
        #expect(w.at(.seconds(2), .tick).sent.contains(.fail(fail)), "resent every progress interval")
        w.at(.seconds(2), ack(2, .fail))
        #expect(!w.at(.seconds(4), .tick).sent.contains(.fail(fail)))
        // An aborted encode no longer takes the slot.
        w.at(.seconds(5), .received(.cancel(Cancel(attempt: attempt(1), reason: .jobCancelled))))
        #expect(w.at(.seconds(5), .received(.assign(assign(3)))).started == [attempt(3)])
    }

    @Test("refusals: while connecting, while draining, and an ASSIGN with a zero lease")
    func refusals() {
        var connecting = WorkerHarness()
        connecting.on(.start)
        #expect(connecting.on(.received(.assign(assign(1)))).sent.isEmpty, "no FAIL outside a session…")
        #expect(connecting.at(.seconds(1), .tick).hello?.failed.map(\.code) == [.notRegistered], "…it rides in HELLO")

        var invalid = WorkerHarness.registered()
        let fail = invalid.on(.received(.assign(assign(1, lease: 0)))).sent
        #expect(fail.map { if case .fail(let f) = $0 { "\(f.code) \(f.retryable)" } else { "" } } == ["invalid-assign false"])

        var draining = WorkerHarness.registered()
        draining.on(.received(.assign(assign(1))))
        draining.on(.drain)
        let refused = draining.on(.received(.assign(assign(2)))).sent
        #expect(refused.map { message -> Fail.Code? in if case .fail(let f) = message { f.code } else { nil } } == [.drained])
        #expect(draining.machine.running == [attempt(1)])
    }

    @Test("PROGRESS every progress interval with the latest fraction and frames")
    func progress() {
        var w = WorkerHarness.registered()
        w.at(.zero, .received(.assign(assign(1, progress: 2_000))))
        w.at(.milliseconds(500), .encodeProgress(attempt(1).leaseToken, fraction: 0.25, frames: 12))
        #expect(w.at(.milliseconds(1999), .tick).sentTypes.filter { $0 == "PROGRESS" }.isEmpty)
        #expect(w.at(.seconds(2), .tick).sent.contains(.progress(Progress(attempt: attempt(1), fraction: 0.25, frames: 12))))
        w.at(.seconds(3), .encodeProgress(attempt(1).leaseToken, fraction: 0.5, frames: 24))
        #expect(w.at(.seconds(4), .tick).sent.contains(.progress(Progress(attempt: attempt(1), fraction: 0.5, frames: 24))))
    }

    @Test("a progress interval too long for the lease is shortened so two extensions fit before the abort point")
    func progressIntervalCapped() {
        var w = WorkerHarness.registered()
        w.at(.zero, .received(.assign(assign(1, lease: 10_000, progress: 60_000))))
        // margin = min(5 s, 10 s / 4) = 2.5 s; interval = min(60 s, (10 − 2.5) / 2) = 3.75 s.
        #expect(w.machine.margin(of: attempt(1).leaseToken) == .milliseconds(2500))
        #expect(!w.at(.milliseconds(3749), .tick).sentTypes.contains("PROGRESS"))
        #expect(w.at(.milliseconds(3750), .tick).sentTypes.contains("PROGRESS"))
    }

    @Test("COMPLETE is sent when the encode ends, resent every progress interval until ACKed, then forgotten")
    func completeUntilAcknowledged() {
        var w = WorkerHarness.registered()
        w.at(.zero, .received(.assign(assign(1, progress: 2_000))))
        w.at(.zero, ack(1, .accept))
        #expect(w.at(.milliseconds(500), .encodeFinished(attempt(1).leaseToken, finished)).sent == [.complete(complete(1))])
        #expect(w.machine.running.isEmpty && w.machine.encodesInFlight == 0)
        #expect(!w.at(.milliseconds(2499), .tick).sentTypes.contains("COMPLETE"))
        #expect(w.at(.milliseconds(2500), .tick).sent.contains(.complete(complete(1))))
        #expect(w.at(.milliseconds(4500), .tick).sent.contains(.complete(complete(1))))
        // An ACK for another attempt changes nothing.
        w.at(.seconds(5), .received(.ack(Ack(attempt: attempt(1, 99), acknowledges: .complete, outcome: .accepted))))
        #expect(w.machine.heldResults == [.complete(complete(1))])
        let acked = w.at(.seconds(5), ack(1, .complete, .duplicate))
        #expect(acked == [.notice(.resultAcknowledged(attempt(1), .complete, .duplicate))])
        #expect(w.machine.heldResults.isEmpty)
        for second in 6...12 { #expect(!w.at(.seconds(second), .tick).sentTypes.contains("COMPLETE")) }
        // A late ASSIGN resend for it starts nothing.
        #expect(w.at(.seconds(13), .received(.assign(assign(1)))).started == [attempt(1)],
                "forgotten: a fresh ASSIGN with the same token is new work as far as the worker knows")
    }

    @Test("ACK stale for a COMPLETE deletes the output; accepted or duplicate keeps it")
    func staleComplete() {
        for (outcome, deleted) in [(Ack.Outcome.stale, [assign(1).outputPath]), (.accepted, []), (.duplicate, [])] {
            var w = WorkerHarness.registered()
            w.at(.zero, .received(.assign(assign(1))))
            w.at(.seconds(1), .encodeFinished(attempt(1).leaseToken, finished))
            #expect(w.at(.seconds(1), ack(1, .complete, outcome)).deleted == deleted)
            #expect(w.machine.heldResults.isEmpty)
        }
    }

    @Test("an ASSIGN resent for an attempt whose result is held is answered with that result")
    func assignAfterResult() {
        var w = WorkerHarness.registered()
        w.at(.zero, .received(.assign(assign(1))))
        w.at(.seconds(1), .encodeFinished(attempt(1).leaseToken, finished))
        let out = w.at(.seconds(1), .received(.assign(assign(1))))
        #expect(out.started.isEmpty)
        #expect(out.sent == [.complete(complete(1))])
    }

    @Test("a failed encode becomes FAIL with its code, reason and retryability")
    func failedEncode() {
        var w = WorkerHarness.registered()
        w.at(.zero, .received(.assign(assign(1))))
        let out = w.at(.seconds(1), .encodeFinished(attempt(1).leaseToken,
                                                    .failed(code: .writeFailed, reason: "disk full", retryable: true)))
        #expect(out.sent == [.fail(Fail(attempt: attempt(1), code: .writeFailed, reason: "disk full", retryable: true))])
    }

    @Test("CANCEL aborts a running encode and its output is deleted when it stops; unknown or finished: nothing")
    func cancel() {
        var w = WorkerHarness.registered()
        w.at(.zero, .received(.assign(assign(1))))
        w.at(.zero, .received(.assign(assign(2))))
        w.at(.seconds(1), .encodeFinished(attempt(2).leaseToken, finished))
        let out = w.at(.seconds(2), .received(.cancel(Cancel(attempt: attempt(1), reason: .jobCancelled))))
        #expect(out.aborted == [attempt(1): .cancelled])
        #expect(w.machine.running.isEmpty)
        #expect(w.machine.encodesInFlight == 1, "the encode is still stopping")
        #expect(w.at(.seconds(2), .received(.cancel(Cancel(attempt: attempt(1), reason: .jobCancelled)))).isEmpty,
                "idempotent")
        #expect(w.at(.seconds(2), .received(.cancel(Cancel(attempt: attempt(9), reason: .leaseLost)))).isEmpty)
        #expect(w.at(.seconds(2), .received(.cancel(Cancel(attempt: attempt(2), reason: .leaseLost)))).isEmpty,
                "a held COMPLETE waits for its ACK")
        // Even if the encode finished just as it was cancelled, the output goes and nothing is reported.
        let ended = w.at(.seconds(3), .encodeFinished(attempt(1).leaseToken, finished))
        #expect(ended.deleted == [assign(1).outputPath])
        #expect(ended.sent.isEmpty)
        #expect(w.machine.heldResults == [.complete(complete(2))])
    }
}

@Suite("Worker state machine: lease deadline")
struct WorkerLeaseTests {
    @Test("the deadline is the send time of the oldest unacknowledged extension plus the lease, per ACK accepted")
    func deadlineArithmetic() throws {
        var w = WorkerHarness.registered()
        let token = attempt(1).leaseToken
        // ASSIGN received at 0: deadline 0 + 10 s. ACCEPT sent at 0.
        w.at(.zero, .received(.assign(assign(1, lease: 10_000, progress: 2_000))))
        #expect(w.machine.deadline(of: token) == w.t0 + .seconds(10))
        w.at(.seconds(2), .tick)  // PROGRESS sent at 2 s
        w.at(.seconds(4), .tick)  // PROGRESS sent at 4 s
        // The first ACK (whatever it answers) pops the oldest send (0 s): deadline stays 10 s.
        w.at(.seconds(5), ack(1, .progress))
        #expect(w.machine.deadline(of: token) == w.t0 + .seconds(10))
        // The next pops 2 s: 12 s.
        w.at(.seconds(5), ack(1, .progress))
        #expect(w.machine.deadline(of: token) == w.t0 + .seconds(12))
        // A duplicate pops 4 s without extending.
        w.at(.seconds(5), ack(1, .progress, .duplicate))
        #expect(w.machine.deadline(of: token) == w.t0 + .seconds(12))
        // An ACK with nothing outstanding changes nothing.
        w.at(.seconds(5), ack(1, .progress))
        #expect(w.machine.deadline(of: token) == w.t0 + .seconds(12))
    }

    @Test("a send that failed is not matched to a later ACK")
    func failedSendForgotten() {
        var w = WorkerHarness.registered()
        let token = attempt(1).leaseToken
        w.at(.zero, .received(.assign(assign(1, lease: 10_000, progress: 2_000))))
        w.on(.sendFailed(.accept(Accept(attempt: attempt(1)))))
        w.at(.seconds(2), .tick)  // PROGRESS at 2 s gets through
        w.at(.seconds(3), ack(1, .progress))
        #expect(w.machine.deadline(of: token) == w.t0 + .seconds(12))
    }

    @Test("without acknowledged extensions the encode is aborted once now > deadline − margin, and its output deleted")
    func abortBeforeDeadline() {
        var w = WorkerHarness.registered()
        w.at(.zero, .received(.assign(assign(1, lease: 10_000, progress: 2_000))))
        // Margin min(5 s, 10 s / 4) = 2.5 s: the abort point is just after 7.5 s. The coordinator
        // keeps the session alive but never ACKs an extension (say its database is down).
        for millis in stride(from: 500, through: 7500, by: 500) {
            w.at(.milliseconds(millis), .received(.heartbeat(Heartbeat())))
            #expect(w.at(.milliseconds(millis), .tick).aborted.isEmpty, "aborted early at \(millis) ms")
        }
        let out = w.at(.milliseconds(7501), .tick)
        #expect(out.aborted == [attempt(1): .leaseExpiring])
        #expect(!out.sentTypes.contains("PROGRESS"))
        #expect(w.machine.running.isEmpty)
        let ended = w.at(.milliseconds(7600), .encodeFinished(attempt(1).leaseToken, .cancelled))
        #expect(ended.deleted == [assign(1).outputPath])
        #expect(ended.sent.isEmpty && w.machine.heldResults.isEmpty)
    }

    @Test("acknowledged extensions keep the encode alive past the first lease")
    func extensionsKeepItAlive() {
        var w = WorkerHarness.registered()
        w.at(.zero, .received(.assign(assign(1, lease: 10_000, progress: 2_000))))
        w.at(.milliseconds(10), ack(1, .accept))
        for second in stride(from: 2, through: 30, by: 2) {
            let out = w.at(.seconds(second), .tick)
            #expect(out.aborted.isEmpty, "aborted at \(second) s")
            #expect(out.sentTypes.contains("PROGRESS"))
            w.at(.seconds(second) + .milliseconds(10), ack(1, .progress))
        }
        #expect(w.machine.running == [attempt(1)])
        #expect(w.machine.deadline(of: attempt(1).leaseToken) == w.t0 + .seconds(40))
    }

    @Test("a coordinator that is gone cannot extend: the lease runs out on the worker too")
    func coordinatorGone() {
        var w = WorkerHarness.registered(liveness: 3)
        w.at(.zero, .received(.assign(assign(1, lease: 20_000, progress: 2_000))))
        w.at(.milliseconds(10), ack(1, .accept))
        // Liveness ends the session at 3 s; HELLO goes unanswered; the deadline (20 s − 5 s margin) ends the encode.
        var abortedAt: Duration?
        for millis in stride(from: 500, through: 20_000, by: 500) {
            if !w.at(.milliseconds(millis), .tick).aborted.isEmpty, abortedAt == nil { abortedAt = .milliseconds(millis) }
        }
        #expect(w.machine.session == .connecting)
        #expect(abortedAt == .milliseconds(15_500))
    }

    @Test("ACK stale for an extension aborts the encode at once")
    func staleExtension() {
        var w = WorkerHarness.registered()
        w.at(.zero, .received(.assign(assign(1))))
        #expect(w.at(.seconds(1), ack(1, .accept, .stale)).aborted == [attempt(1): .stale])
        #expect(w.at(.seconds(2), .encodeFinished(attempt(1).leaseToken, .cancelled)).deleted == [assign(1).outputPath])
    }
}

@Suite("Worker state machine: drain")
struct WorkerDrainTests {
    @Test("running segments finish, their results are acknowledged, then DISCONNECT and stop")
    func drainFinishes() {
        var w = WorkerHarness.registered()
        w.at(.zero, .received(.assign(assign(1))))
        let draining = w.at(.seconds(1), .drain)
        #expect(draining.contains(.notice(.draining(running: 1, timeout: .seconds(30)))))
        #expect(draining.stopped == nil)
        #expect(w.at(.seconds(2), .encodeFinished(attempt(1).leaseToken, finished)).stopped == nil, "result not ACKed")
        let done = w.at(.seconds(3), ack(1, .complete))
        #expect(done.sent.last == .disconnect(Disconnect(reason: .shutdown, detail: "drained")))
        #expect(done.stopped == .drained)
        #expect(w.machine.isStopped)
    }

    @Test("an idle worker stops at once")
    func idleDrain() {
        var w = WorkerHarness.registered()
        #expect(w.at(.seconds(1), .drain).stopped == .drained)
    }

    @Test("after the drain timeout running segments are handed back with FAIL drained")
    func drainTimeout() {
        var w = WorkerHarness.registered(drainTimeout: .seconds(5))
        w.at(.zero, .received(.assign(assign(1, lease: 60_000))))
        w.at(.zero, ack(1, .accept))
        w.at(.seconds(1), .drain)
        for second in 2...5 {
            w.at(.seconds(second), ack(1, .progress))
            #expect(w.at(.seconds(second) + .milliseconds(999), .tick).aborted.isEmpty)
        }
        let out = w.at(.seconds(6), .tick)
        #expect(out.aborted == [attempt(1): .drained])
        let fail = out.sent.compactMap { if case .fail(let f) = $0 { f } else { nil } }
        #expect(fail.map(\.code) == [.drained] && fail.allSatisfy(\.retryable))
        let ended = w.at(.seconds(6), .encodeFinished(attempt(1).leaseToken, .cancelled))
        #expect(ended.deleted == [assign(1).outputPath])
        #expect(ended.stopped == nil, "the FAIL is not acknowledged yet")
        #expect(w.at(.seconds(7), ack(1, .fail)).stopped == .drained)
    }

    @Test("results the coordinator never acknowledges hold the drain only until the flush timeout")
    func flushTimeout() {
        var w = WorkerHarness.registered(drainTimeout: .seconds(5), flushTimeout: .seconds(10))
        w.at(.zero, .received(.assign(assign(1))))
        w.at(.seconds(1), .encodeFinished(attempt(1).leaseToken, finished))
        w.at(.seconds(1), .drain)  // drain deadline 6 s, flush until 16 s
        #expect(w.at(.milliseconds(15_999), .tick).stopped == nil)
        let out = w.at(.seconds(16), .tick)
        #expect(out.contains(.notice(.unacknowledgedAtStop(1))))
        #expect(out.stopped == .drained)
    }
}
