import SpliceWire
import SpliceWorker
import Testing

@Suite("Worker state machine: protocol versions")
struct WorkerVersionTests {
    /// What a coordinator that does not speak this worker's version answers its HELLO.
    static func refusal(_ versions: ProtocolVersions, reason: Disconnect.Reason = .unsupportedVersion) -> WorkerEvent {
        .received(.disconnect(Disconnect(reason: reason, detail: "upgrade", versions: versions)))
    }

    @Test("HELLO says which versions the worker speaks: only this build's newest")
    func helloNamesVersions() {
        var w = WorkerHarness()
        #expect(w.on(.start).hello?.protocolVersions == ProtocolVersions(oldest: WorkerProtocol.version,
                                                                        newest: WorkerProtocol.version))
    }

    @Test("a refusal of its version: the worker says so, sends no HELLO for the retry interval, then tries again",
          arguments: [ProtocolVersions(oldest: 1, newest: 2), ProtocolVersions(oldest: 4, newest: 5)])
    func refusedWaits(coordinator: ProtocolVersions) {
        var w = WorkerHarness(helloInterval: .milliseconds(500))
        w.on(.start)
        let refused = w.at(.milliseconds(100), Self.refusal(coordinator))
        #expect(refused == [.notice(.versionRefused(coordinator: coordinator, detail: "upgrade", retryIn: .seconds(15)))])
        #expect(w.machine.session == .connecting)
        // Not the usual HELLO every interval (nor at once, as after other DISCONNECTs): it waits.
        for second in 1...14 { #expect(w.at(.seconds(second), .tick).sent.isEmpty, "HELLO at \(second) s") }
        #expect(w.at(.milliseconds(15_100), .tick).sentTypes == ["HELLO"])
        // Answered by a coordinator that speaks its version: registered as usual.
        w.at(.milliseconds(15_200), .received(.welcome(WorkerHarness.welcome)))
        #expect(w.machine.session == .registered(session: "s1"))
    }

    @Test("an older coordinator's protocol-error that names versions without the worker's counts as a refusal; one that includes it is an ordinary DISCONNECT")
    func protocolErrorWithVersions() {
        var w = WorkerHarness()
        w.on(.start)
        let old = w.at(.milliseconds(10), Self.refusal(ProtocolVersions(oldest: 4, newest: 5), reason: .protocolError))
        #expect(old.sent.isEmpty)
        var other = WorkerHarness()
        other.on(.start)
        let ordinary = other.at(.milliseconds(10), Self.refusal(WorkerProtocol.versions, reason: .protocolError))
        #expect(ordinary.sentTypes == ["HELLO"], "a protocol error of its own version: HELLO again at once")
    }

    @Test("HELLO answered by nobody: said after 30 s and every 30 s after, until something is heard")
    func unanswered() {
        var w = WorkerHarness()
        w.on(.start)
        #expect(!w.at(.seconds(29), .tick).contains(.notice(.helloUnanswered(after: .seconds(29)))))
        #expect(w.at(.seconds(30), .tick).contains(.notice(.helloUnanswered(after: .seconds(30)))))
        #expect(!w.at(.seconds(31), .tick).contains { if case .notice(.helloUnanswered) = $0 { true } else { false } })
        #expect(w.at(.seconds(60), .tick).contains(.notice(.helloUnanswered(after: .seconds(60)))))
        w.at(.seconds(61), .received(.welcome(WorkerHarness.welcome)))
        #expect(!w.at(.seconds(95), .tick).contains { if case .notice(.helloUnanswered) = $0 { true } else { false } })
    }
}
