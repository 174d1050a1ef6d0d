import Foundation
import SpliceConcurrency
import SpliceTestSupport
import SpliceWire
import Testing

/// `splice worker` as a real child process: SIGTERM drains it and it exits 0.
@Suite("splice worker process", .timeLimit(.minutes(2)))
struct WorkerProcessTests {
    @Test("SIGTERM: no new segments, the running one finishes and is acknowledged, exit 0")
    func sigtermDrains() async throws {
        let binary = SpliceBinary.url
        try #require(FileManager.default.isExecutableFile(atPath: binary.path),
                     "\(binary.path) is missing: build it with `swift build --build-tests`")
        let coordinator = try await ScriptedCoordinator.bind()
        let spool = Fixtures.temporaryDirectory("process-spool")
        let log = Fixtures.temporaryDirectory("process-log").appendingPathComponent("worker.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = binary
        process.arguments = ["worker", "--coordinator", coordinator.address, "--spool", spool.path, "--slots", "1",
                             "--name", "child", "--drain-timeout", "60", "--metrics-endpoint", "127.0.0.1:0"]
        process.environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        process.standardError = try FileHandle(forWritingTo: log)
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let exited = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = { exited.continuation.yield($0.terminationStatus) }
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

        let hello = try await coordinator.welcome()
        #expect(hello.workerName == "child" && hello.slots == 1)
        let assign = try WorkerMedia.assign(try await WorkerMedia.plan(preset: "veryslow"), spool: spool,
                                            token: "drained-in-time")
        try await coordinator.send(.assign(assign))
        let accept = await coordinator.next { $0.asAccept }
        #expect(accept?.attempt == assign.attempt)
        kill(process.processIdentifier, SIGTERM)
        // The signal is handled asynchronously: wait until the worker says it drains.
        #expect(await eventually(within: .seconds(20)) {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("draining")
        }, "the worker never logged that it drains")

        // Draining: a new ASSIGN is refused…
        let refused = try WorkerMedia.assign(try await WorkerMedia.plan(preset: "ultrafast"), spool: spool,
                                             token: "too-late")
        try await coordinator.send(.assign(refused))
        let fail = await coordinator.next { $0.asFail }
        #expect(fail?.attempt == refused.attempt && fail?.code == .drained)
        if let fail { try await coordinator.send(.ack(Ack(attempt: fail.attempt, acknowledges: .fail, outcome: .accepted))) }
        // …the running one completes…
        let complete = try #require(await coordinator.next(within: .seconds(60)) { $0.asComplete }, "no COMPLETE")
        #expect(complete.attempt == assign.attempt)
        #expect(complete.checksum.description == "sha256:" + (try await sha256(assign.outputPath)))
        #expect(process.isRunning, "exited before its result was acknowledged")
        try await coordinator.send(.ack(Ack(attempt: assign.attempt, acknowledges: .complete, outcome: .accepted)))
        // …and the worker says goodbye and exits 0.
        #expect(await coordinator.next { $0.asDisconnect }?.reason == .shutdown)
        let status = await withDeadline(.seconds(10)) { await exited.stream.first { _ in true } }
        let stderr = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(status == 0, "stderr: \(stderr)")
        #expect(stderr.contains(#"msg="worker ready""#) && stderr.contains("slots=1"))
        await coordinator.close()
    }
}
