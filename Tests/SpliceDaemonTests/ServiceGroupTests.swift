import SpliceConcurrency
import Synchronization
import Testing
import SpliceDaemon

/// What the fake services did, in order.
private final class Journal: Sendable {
    private let entries = Mutex<[String]>([])
    func note(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

private struct Broken: Error, CustomStringConvertible {
    var description: String { "the disk is on fire" }
}

/// A service that runs until it is shut down or cancelled, or that fails at once.
private final class FakeService: Service {
    enum Behaviour { case runs, returnsAtOnce, throwsAtOnce }

    let name: String
    private let behaviour: Behaviour
    private let journal: Journal
    private let stopRequested = Latch()

    init(_ name: String, _ behaviour: Behaviour = .runs, journal: Journal) {
        self.name = name
        self.behaviour = behaviour
        self.journal = journal
    }

    func run() async throws {
        switch behaviour {
        case .runs: await stopRequested.wait()
        case .returnsAtOnce: break
        case .throwsAtOnce: throw Broken()
        }
        journal.note(name + " returned")
    }

    func shutdown() async {
        journal.note(name + " shutdown")
        stopRequested.open()
    }
}

/// A whole group run as one service, as `splice coordinator` runs the coordinator's.
private struct GroupService: Service {
    let name = "outer"
    let group: ServiceGroup
    func run() async throws { try await group.run() }
    func shutdown() async { await group.shutdown() }
}

@Suite("Service group")
struct ServiceGroupTests {
    @Test("shutdown stops the services last first, and run returns")
    func gracefulShutdown() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: ["a", "b", "c"].map { FakeService($0, journal: journal) })
        let running = Task { try await group.run() }
        await group.shutdown()
        try await running.value
        #expect(journal.all.filter { $0.hasSuffix("shutdown") } == ["c shutdown", "b shutdown", "a shutdown"])
        #expect(Set(journal.all.filter { $0.hasSuffix("returned") }) == ["a returned", "b returned", "c returned"])
    }

    @Test("a service that returns early fails the group, which stops the others gracefully")
    func returnsEarly() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [
            FakeService("a", journal: journal), FakeService("early", .returnsAtOnce, journal: journal),
            FakeService("c", journal: journal),
        ])
        let error = try await #require(throws: ServiceGroupError.self) { try await group.run() }
        #expect(error.service == "early")
        guard case .returnedEarly = error.reason else {
            Issue.record("reason \(error.reason)")
            return
        }
        #expect(error.description == "service early failed: it stopped before it was asked to")
        // The others were shut down, last first, and not the one that had already returned.
        #expect(journal.all.filter { $0.hasSuffix("shutdown") } == ["c shutdown", "a shutdown"])
        #expect(journal.all.contains("a returned") && journal.all.contains("c returned"))
    }

    @Test("a service that throws fails the group with its error, named")
    func throwsError() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [
            FakeService("a", journal: journal), FakeService("broken", .throwsAtOnce, journal: journal),
        ])
        let error = try await #require(throws: ServiceGroupError.self) { try await group.run() }
        #expect(error.service == "broken")
        #expect(error.description == "service broken failed: the disk is on fire")
        guard case .threw(let cause) = error.reason else {
            Issue.record("reason \(error.reason)")
            return
        }
        #expect(cause is Broken)
        #expect(journal.all == ["a shutdown", "a returned"])
    }

    @Test("a failure inside a group run as a service keeps the inner service's name")
    func nestedGroup() async throws {
        let journal = Journal()
        let inner = ServiceGroup(services: [
            FakeService("a", journal: journal), FakeService("early", .returnsAtOnce, journal: journal),
        ])
        let outer = ServiceGroup(services: [GroupService(group: inner), FakeService("b", journal: journal)])
        let error = try await #require(throws: ServiceGroupError.self) { try await outer.run() }
        #expect(error.service == "early")
        #expect(journal.all.contains("a returned") && journal.all.contains("b returned"))
    }

    @Test("services returning because the group was cancelled are not failures")
    func cancellation() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [FakeService("a", journal: journal), FakeService("b", journal: journal)])
        let running = Task { try await group.run() }
        running.cancel()
        try await running.value
        #expect(!journal.all.contains { $0.hasSuffix("shutdown") })
    }
}
