import SpliceConcurrency
import SpliceLog
import Synchronization
import Testing

@testable import splice

#if canImport(Glibc)
import Glibc
import SpliceDaemon
#endif

/// Log lines, kept.
private final class CapturedLog: LogSink {
    private let lines = Mutex<[String]>([])
    func write(line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

private struct Revoked: Error, CustomStringConvertible {
    var description: String { "the coordinator revoked this worker's key" }
}

/// A daemon's service: runs until shut down, or ends by itself at once.
private final class FakeDaemon: Service {
    enum Ending { case whenShutDown, returnsAtOnce, throwsAtOnce }

    let name = "daemon"
    private let ending: Ending
    private let stopRequested = Latch()
    private let shutdowns = Mutex(0)

    init(_ ending: Ending) {
        self.ending = ending
    }

    var shutdownCount: Int { shutdowns.withLock { $0 } }

    func run() async throws {
        switch ending {
        case .whenShutDown: await stopRequested.wait()
        case .returnsAtOnce: return
        case .throwsAtOnce: throw Revoked()
        }
    }

    func shutdown() async {
        shutdowns.withLock { $0 += 1 }
        stopRequested.open()
    }
}

@Suite("Service runner (coordinator and worker)")
struct ServiceRunnerTests {
    @Test("the first signal shuts the service down gracefully: exit 0, nothing logged")
    func signalDrains() async {
        let log = CapturedLog()
        let shutdown = ShutdownSignal()
        let daemon = FakeDaemon(.whenShutDown)
        async let code = ServiceRunner.run(daemon, until: shutdown, logger: Logger(level: .debug, sink: log))
        shutdown.trigger(SIGTERM)
        #expect(await code == .success)
        #expect(daemon.shutdownCount == 1)
        #expect(log.all.isEmpty)
    }

    @Test("a service that stops by itself: exit 1 and one log line naming it and why")
    func returnsEarly() async {
        let log = CapturedLog()
        let code = await ServiceRunner.run(FakeDaemon(.returnsAtOnce), until: ShutdownSignal(),
                                           logger: Logger(level: .debug, sink: log))
        #expect(code == .failure)
        #expect(log.all.count == 1)
        #expect(log.all.first?.contains(#"level=error msg="service failed; stopped" service=daemon "#) == true)
        #expect(log.all.first?.hasSuffix(#"reason="it stopped before it was asked to""#) == true)
    }

    @Test("a service that throws: exit 1 and one log line with its error")
    func throwsError() async {
        let log = CapturedLog()
        let code = await ServiceRunner.run(FakeDaemon(.throwsAtOnce), until: ShutdownSignal(),
                                           logger: Logger(level: .debug, sink: log))
        #expect(code == .failure)
        #expect(log.all.count == 1)
        #expect(log.all.first?.hasSuffix(#"service=daemon reason="the coordinator revoked this worker's key""#) == true)
    }

    @Test("a failure inside the daemon's own group names the inner service")
    func innerFailure() async {
        let log = CapturedLog()
        let inner = ServiceGroup(services: [FakeDaemon(.whenShutDown), InnerService()])
        let code = await ServiceRunner.run(GroupDaemon(group: inner), until: ShutdownSignal(),
                                           logger: Logger(level: .debug, sink: log))
        #expect(code == .failure)
        #expect(log.all.count == 1)
        #expect(log.all.first?.contains("service=notifications ") == true)
    }
}

/// A member of a daemon's group that ends by itself.
private struct InnerService: Service {
    let name = "notifications"
    func run() async throws {}
    func shutdown() async {}
}

/// A daemon whose work is a group of services, like the coordinator.
private struct GroupDaemon: Service {
    let name = "coordinator"
    let group: ServiceGroup
    func run() async throws { try await group.run() }
    func shutdown() async { await group.shutdown() }
}
