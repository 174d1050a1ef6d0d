import SpliceCore
import SpliceJSON
import SpliceWire
import SpliceWorker
import Testing

/// A worker that knows several coordinators (`--coordinator a,b`): it works for the active one and
/// follows the highest epoch it hears of (docs/coordinator.md, Standby coordinators).
@Suite("Worker state machine: several coordinators, one active")
struct WorkerFollowsActiveTests {
    static func welcome(_ session: String, epoch: Int64?) -> Welcome {
        Welcome(session: session, heartbeatIntervalMilliseconds: 1000, heartbeatLiveness: 1000, epoch: epoch)
    }

    /// Registered with coordinator 1 of two, at epoch 5.
    static func registeredWithSecond() -> WorkerHarness {
        var w = WorkerHarness(coordinators: 2)
        w.on(.start)
        w.on(.received(.welcome(welcome("b5", epoch: 5)), from: 1))
        return w
    }

    @Test("HELLO goes to every coordinator until one welcomes; from then on everything goes to that one")
    func helloToAllThenOne() {
        var w = WorkerHarness(coordinators: 2)
        #expect(w.on(.start).sentTypes(to: .everyCoordinator) == ["HELLO"])
        #expect(w.on(.received(.welcome(Self.welcome("b5", epoch: 5)), from: 1))
            == [.notice(.registered(session: "b5", coordinator: 1, epoch: 5))])
        #expect(w.machine.coordinator == 1 && w.machine.epoch == 5)
        let out = w.at(.seconds(2), .tick)
        #expect(out.sentTypes(to: .coordinator(1)) == ["HEARTBEAT"] && out.sentTypes(to: .everyCoordinator).isEmpty)
        w.at(.seconds(2), .received(.assign(assign(1)), from: 1))
        #expect(w.machine.running == [attempt(1)])
    }

    @Test("a standby's STANDBY of the session's epoch changes nothing; one of a higher epoch sends it looking again")
    func standbyOfHigherEpoch() {
        var w = Self.registeredWithSecond()
        #expect(w.on(.received(.standby(Standby(epoch: 5, active: "tcp://b:7450")), from: 0)).isEmpty)
        #expect(w.on(.received(.standby(Standby()), from: 0)).isEmpty)
        #expect(w.machine.coordinator == 1)
        let deposed = w.on(.received(.standby(Standby(epoch: 6, active: "tcp://a:7450")), from: 0))
        #expect(deposed.sentTypes(to: .everyCoordinator) == ["HELLO"])
        #expect(w.machine.session == .connecting && w.machine.coordinator == nil)
    }

    @Test("STANDBY from the session's own coordinator: it stood down, look again")
    func ownCoordinatorStandsDown() {
        var w = Self.registeredWithSecond()
        let out = w.on(.received(.standby(Standby()), from: 1))
        #expect(out.contains(.notice(.coordinatorStoodDown(active: nil))))
        #expect(out.sentTypes(to: .everyCoordinator) == ["HELLO"])
        #expect(w.machine.session == .connecting)
    }

    @Test("ACTIVE of a higher epoch gets a HELLO; that coordinator's WELCOME moves the session, a lower epoch's does not")
    func followsTheHigherEpoch() {
        var w = Self.registeredWithSecond()
        #expect(w.on(.received(.active(Active(epoch: 5)), from: 0)).isEmpty, "not newer than the session's")
        #expect(w.on(.received(.active(Active(epoch: 6)), from: 0)).sentTypes(to: .coordinator(0)) == ["HELLO"])
        #expect(w.machine.coordinator == 1, "registered with 1 until 0 welcomes")
        #expect(w.on(.received(.welcome(Self.welcome("a4", epoch: 4)), from: 0)).isEmpty)
        #expect(w.machine.coordinator == 1)
        #expect(w.on(.received(.welcome(Self.welcome("a6", epoch: 6)), from: 0))
            == [.notice(.registered(session: "a6", coordinator: 0, epoch: 6))])
        #expect(w.machine.coordinator == 0 && w.machine.epoch == 6)
    }

    @Test("from a coordinator the session is not with: ASSIGN refused (the FAIL goes to the session's), CANCEL and HEARTBEAT ignored, ACK taken")
    func messagesFromAnother() {
        var w = Self.registeredWithSecond()
        w.on(.received(.assign(assign(1)), from: 1))
        let foreign = w.on(.received(.assign(assign(2)), from: 0))
        #expect(foreign.started.isEmpty)
        let fails = foreign.sends.compactMap { send -> (Fail, WorkerDirective.Recipient)? in
            if case .fail(let fail) = send.message { (fail, send.to) } else { nil }
        }
        #expect(fails.count == 1 && fails.first?.0.code == .notRegistered && fails.first?.0.attempt == attempt(2)
                    && fails.first?.1 == .coordinator(1))
        #expect(w.on(.received(.cancel(Cancel(attempt: attempt(1), reason: .leaseLost)), from: 0)).aborted.isEmpty)
        #expect(w.machine.running == [attempt(1)])
        // An ACK is sent only after a commit, whoever sends it: the held FAIL is answered.
        w.on(.received(.ack(Ack(attempt: attempt(2), acknowledges: .fail, outcome: .accepted)), from: 0))
        #expect(w.machine.heldResults.isEmpty)
    }

    @Test("a lost connection to the session's coordinator: looking again after the grace, nothing if it comes back")
    func lostConnection() {
        var w = Self.registeredWithSecond()
        w.at(.seconds(1), .disconnected(0))
        #expect(w.at(.seconds(2), .tick).sentTypes(to: .everyCoordinator).isEmpty, "another coordinator's connection")
        w.at(.seconds(2), .disconnected(1))
        #expect(w.at(.milliseconds(2300), .tick).sentTypes(to: .everyCoordinator).isEmpty, "within the grace")
        w.at(.milliseconds(2400), .connected(1))
        #expect(w.at(.seconds(3), .tick).sentTypes(to: .everyCoordinator).isEmpty, "it came back")
        w.at(.seconds(4), .disconnected(1))
        let lost = w.at(.milliseconds(4600), .tick)
        #expect(lost.sentTypes(to: .everyCoordinator) == ["HELLO"])
        #expect(lost.contains(.notice(.coordinatorLost(after: .milliseconds(600)))))
        #expect(w.machine.session == .connecting)
    }

    @Test("a coordinator whose connection comes up gets a HELLO, whether the worker is registered elsewhere or looking")
    func helloToANewConnection() {
        var w = Self.registeredWithSecond()
        #expect(w.on(.connected(0)).sentTypes(to: .coordinator(0)) == ["HELLO"])
        #expect(w.on(.connected(1)).isEmpty, "the session's own coordinator, reconnected")
        var looking = WorkerHarness(coordinators: 2)
        looking.on(.start)
        #expect(looking.on(.connected(1)).sentTypes(to: .coordinator(1)) == ["HELLO"])
    }
}
