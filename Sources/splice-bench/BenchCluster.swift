import Foundation

/// A local cluster for the benchmarks: `splice coordinator` with an embedded PostgreSQL on fixed
/// loopback ports, and `splice worker --slots 1 --codec-threads 1` processes beside it, either
/// sharing its spool folder or in transfer mode (no `--spool`: each segment's excerpt and result
/// over the data endpoint, a scratch folder of their own). Measures the wall time of `splice
/// submit --wait` (planning, dispatch, encodes, stitch). Processes log to files in the folder.
final class BenchCluster {
    enum Storage: String {
        case spool, transfer
    }

    private let dir: URL
    private let spool: String
    private let api = "tcp://127.0.0.1:17851", workersEndpoint = "tcp://127.0.0.1:17850"
    private let data = "tcp://127.0.0.1:17852"
    private let coordinator: Process
    private var workers: [Process] = []
    private var started = 0

    /// Starts the coordinator, its state and spool in `dir`; `coordinatorEnvironment` is added to
    /// its environment (the `AWS_*` of an object store: the workers get none).
    init(in dir: URL, coordinatorEnvironment: [String: String] = [:]) throws {
        self.dir = dir
        let state = dir.appendingPathComponent("state").path
        spool = dir.appendingPathComponent("spool").path
        try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
        // The embedded server runs as `postgres` when this is root: it must reach the state folder.
        _ = try? MeasuredProcess.run(["chmod", "-R", "a+rwX", dir.path])
        // No operators' endpoints: two workers on one host would both want 127.0.0.1:9451, and the
        // second would not start (the cluster then ran on one worker: 2× the local transcode).
        coordinator = try Self.spawn(["coordinator", "--state-dir", state, "--spool", spool,
                                      "--workers-endpoint", workersEndpoint, "--api-endpoint", api,
                                      "--data-endpoint", data, "--metrics-endpoint", "off"],
                                     log: dir.appendingPathComponent("coordinator.log"), environment: coordinatorEnvironment)
    }

    /// Starts `count` workers of `storage` and waits (up to 60 s) until each says it registered.
    func startWorkers(_ count: Int, storage: Storage) throws {
        var logs: [URL] = []
        for _ in 0..<count {
            started += 1
            let name = "bench-\(storage.rawValue)-\(started)"
            let modeFlags = storage == .spool ? ["--spool", spool]
                : ["--data-endpoint", data, "--scratch", dir.appendingPathComponent("scratch-\(name)").path]
            let log = dir.appendingPathComponent(name + ".log")
            workers.append(try Self.spawn(["worker", "--coordinator", workersEndpoint, "--slots", "1", "--codec-threads", "1",
                                           "--name", name, "--metrics-endpoint", "off"] + modeFlags, log: log))
            logs.append(log)
        }
        let deadline = Date().addingTimeInterval(60)
        while !logs.allSatisfy({ (try? String(contentsOf: $0, encoding: .utf8))?.contains("registered with the coordinator") == true }) {
            guard Date() < deadline, workers.allSatisfy(\.isRunning) else {
                throw ClusterBenchmarkError("the \(storage.rawValue) workers did not register; see the logs in \(dir.path)")
            }
            usleep(50_000)
        }
    }

    /// Stops the workers (SIGINT: each drains, with nothing running) and waits for them.
    func stopWorkers() {
        for worker in workers where worker.isRunning { worker.interrupt() }
        for worker in workers { worker.waitUntilExit() }
        workers = []
    }

    /// The wall time of `splice submit SOURCE OUTPUT --wait` with `flags`, in nanoseconds.
    func submit(_ source: String, to output: String, flags: [String]) throws -> UInt64 {
        try MeasuredProcess.run([Binaries.splice, "submit", source, output, "--wait", "--coordinator", api,
                                 "--timeout", "120"] + flags).wallNanoseconds
    }

    /// Stops the workers, then the coordinator.
    func stop() {
        stopWorkers()
        if coordinator.isRunning { coordinator.interrupt() }
        coordinator.waitUntilExit()
    }

    private static func spawn(_ arguments: [String], log: URL, environment: [String: String] = [:]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Binaries.splice)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        return process
    }
}
