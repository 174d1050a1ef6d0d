import Foundation
import SpliceCluster
import SpliceStore
import SpliceTestSupport
import SpliceWire
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `splice coordinator` as a child process, to kill -9 for real (killed when the test lets go of it).
final class ChildCoordinator: Sendable {
    let process: ChildProcess
    let workers: String
    let api: String

    private init(process: ChildProcess, workers: String, api: String) {
        self.process = process
        self.workers = workers
        self.api = api
    }

    /// The `splice` executable built beside this test bundle.
    static func executable() throws -> URL {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent(),
            Fixtures.packageRoot.appendingPathComponent(".build/debug"),
        ].map { $0.appendingPathComponent("splice") }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw TestFailure("no splice executable in \(candidates.map(\.path)); run `swift build --product splice`")
        }
        return found
    }

    /// Starts `splice coordinator` and waits (up to 30 s) for its `coordinator ready` line.
    static func start(
        database: ConnectionConfiguration, spool: URL, workers: String = loopback, api: String = loopback,
        extra: [String] = []
    ) async throws -> ChildCoordinator {
        let process = try ChildProcess.start(
            ["coordinator", "--database", database.description, "--spool", spool.path,
             "--workers-endpoint", workers, "--api-endpoint", api] + extra,
            logName: "coordinator", environment: ["SPLICE_LOG_LEVEL": "info"])
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let text = process.output
            if let line = text.split(separator: "\n").first(where: { $0.contains("coordinator ready") }),
               let workers = field("workers", in: line), let api = field("api", in: line) {
                return ChildCoordinator(process: process, workers: workers, api: api)
            }
            guard process.isRunning else { throw TestFailure("splice coordinator exited early:\n\(text)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.signal(SIGTERM)
        throw TestFailure("splice coordinator did not log `coordinator ready` within 30 s")
    }

    private static func field(_ name: String, in line: Substring) -> String? {
        line.split(separator: " ").first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }
    }

    func signal(_ number: Int32) { process.signal(number) }

    /// Waits (polling) for the process to end; its exit status, or nil after `timeout`.
    func exitStatus(within timeout: Duration = .seconds(20)) async -> (status: Int32, signalled: Bool)? {
        await process.exitStatus(within: timeout)
    }

    var output: String { process.output }
}

@Suite("Coordinator: kill -9 and restart", .timeLimit(.minutes(5)))
struct CoordinatorRestartTests {
    @Test("kill -9 mid-job, start a new coordinator on the same database: the job completes, nothing lost or doubled")
    func killedMidJob() async throws {
        let source = try await TestMedia.clip(seconds: 3)
        let database = try await TestPostgres.makeDatabase()
        let spool = Fixtures.temporaryDirectory("spool")
        let output = Fixtures.temporaryDirectory("out").appendingPathComponent("killed.mp4").path
        // Long leases: the attempt running across the restart must still be valid afterwards.
        let first = try await ChildCoordinator.start(database: database, spool: spool, extra: ["--lease-seconds", "30"])
        let context = try WireContext()
        let client = try await TestClient.connect(to: first.api, context: context)
        let worker = try await ScriptedWorker.connect(to: first.workers, context: context)

        let job = try await client.submit(source, to: output)
        #expect(try await worker.hello() != nil)
        let zero = try #require(await worker.assignment())
        #expect(try await worker.complete(try await worker.acceptAndEncode(zero)) == .accepted)
        let one = try #require(await worker.assignment())
        let finished = try await worker.acceptAndEncode(one)

        // The coordinator dies while the worker holds a finished, unreported segment.
        first.signal(SIGKILL)
        let killed = await first.exitStatus()
        #expect(killed?.signalled == true && killed?.status == SIGKILL)

        let second = try await ChildCoordinator.start(
            database: database, spool: spool, workers: first.workers, api: first.api, extra: ["--lease-seconds", "30"])
        // The worker reports to whoever listens now; the new coordinator does not know its session.
        try await worker.send(.complete(finished))
        #expect(await worker.disconnect(.reregister) != nil, "told to say HELLO again")
        #expect(try await worker.hello(finished: [finished]) != nil)
        #expect(await worker.ack(of: finished.attempt, .complete)?.outcome == .accepted,
                "the dead coordinator's lease was still valid and its result is committed now")
        let two = try #require(await worker.assignment())
        #expect(two.attempt.segment == 2)
        #expect(try await worker.complete(try await worker.acceptAndEncode(two)) == .accepted)

        let status = try await client.wait(for: job, toBe: ["succeeded", "failed"])
        #expect(status.state == "succeeded", "\(status.error ?? "")")
        let (written, original) = (try await TestMedia.frames(output), try await TestMedia.frames(source))
        #expect(written == original)
        let repository = JobRepository(client: PostgresClient(configuration: database, maxConnections: 1))
        let done = try await repository.events(ofJob: job).filter { $0.kind == "segment_done" }
        #expect(done.count == 3, "each segment committed exactly once")
        #expect(Set(done.compactMap(\.segmentID)).count == 3)

        // SIGTERM: the workers are told, and the process exits 0.
        second.signal(SIGTERM)
        #expect(await worker.disconnect(.shutdown) != nil)
        let stopped = await second.exitStatus()
        #expect(stopped?.signalled == false && stopped?.status == 0, "\(second.output)")

        await worker.close()
        await client.close()
    }

    @Test("an in-process coordinator stopped abruptly: its successor resumes dispatch of the planned job")
    func crashedInProcess() async throws {
        let source = try await TestMedia.clip(seconds: 2)
        let first = try await CoordinatorUnderTest.start()
        let context = try WireContext()
        let client = try await TestClient.connect(to: first.endpoints.api, context: context)
        let output = Fixtures.temporaryDirectory("out").appendingPathComponent("crashed.mp4").path
        let job = try await client.submit(source, to: output)
        _ = try await client.wait(for: job, toBe: ["running"])
        await first.crash()
        await client.close()

        // Nothing but the database and the spool carries over.
        let second = try await CoordinatorUnderTest.start(database: first.database, spool: first.spool)
        let worker = try await ScriptedWorker.connect(to: second.endpoints.workers, context: context)
        #expect(try await worker.hello(slots: 2) != nil)
        for _ in 0..<2 {
            let assign = try #require(await worker.assignment())
            #expect(try await worker.complete(try await worker.acceptAndEncode(assign)) == .accepted)
        }
        let fresh = try await TestClient.connect(to: second.endpoints.api, context: context)
        let status = try await fresh.wait(for: job, toBe: ["succeeded", "failed"])
        #expect(status.state == "succeeded", "\(status.error ?? "")")
        let (written, original) = (try await TestMedia.frames(output), try await TestMedia.frames(source))
        #expect(written == original)

        await worker.close()
        await fresh.close()
        try await second.stop()
    }
}
