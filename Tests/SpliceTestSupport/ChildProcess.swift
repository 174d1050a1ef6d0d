public import Foundation
public import SpliceStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// The cluster's processes as operators run them: `splice coordinator` and `splice worker` as
// child processes whose standard error goes to a log file, so tests can kill -9, SIGSTOP and
// restart them for real.

/// A child `splice` process whose standard error goes to a file. It outlives nothing: it is
/// killed when the test lets go of it (a failed expectation included) or, failing that, when the
/// test process exits.
public final class ChildProcess: Sendable {
    private let handle: Process
    private let exit: ChildExit
    /// Where its standard error goes.
    public let log: URL

    private init(handle: Process, log: URL) {
        self.handle = handle
        self.exit = ChildExit(handle)
        self.log = log
    }

    deinit {
        if !exit.hasExited { kill(handle.processIdentifier, SIGKILL) }  // SIGKILL ends a stopped one too
    }

    private static let running = Mutex<[Int32]>([])
    private static let killAtExit: Void = {
        atexit {
            for pid in ChildProcess.running.withLock({ $0 }) { kill(pid, SIGKILL) }
        }
    }()

    /// Starts `splice arguments…` with only PATH, a scratch HOME and `environment`.
    /// With `wrapper` (``MountIsolation/wrapper``, say), it runs that command with the `splice`
    /// binary and `arguments` after it instead. `binary` replaces this build's `splice` (another
    /// release's, ``CompatBinary``).
    public static func start(_ arguments: [String], logName: String, environment: [String: String] = [:],
                             wrapper: [String] = [], binary: URL? = nil) throws -> ChildProcess
    {
        let log = Fixtures.temporaryDirectory("child").appendingPathComponent(logName + ".log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        let splice = try binary ?? SpliceBinary.executable()
        if let command = wrapper.first {
            process.executableURL = URL(fileURLWithPath: command)
            process.arguments = Array(wrapper.dropFirst()) + [splice.path] + arguments
        } else {
            process.executableURL = splice
            process.arguments = arguments
        }
        process.environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
                               "HOME": Fixtures.scratch.path].merging(environment) { _, new in new }
        process.standardError = try FileHandle(forWritingTo: log)
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        _ = killAtExit
        try process.run()
        running.withLock { $0.append(process.processIdentifier) }
        return ChildProcess(handle: process, log: log)
    }

    /// Starts another program (`executable arguments…`, nginx or a Python helper) with this process's
    /// environment plus `environment`, its standard output and error both going to its log.
    public static func start(executable: String, _ arguments: [String], logName: String,
                             environment: [String: String] = [:]) throws -> ChildProcess
    {
        let log = Fixtures.temporaryDirectory("child").appendingPathComponent(logName + ".log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let handle = try FileHandle(forWritingTo: log)
        process.standardError = handle
        process.standardOutput = handle
        process.standardInput = FileHandle.nullDevice
        _ = killAtExit
        try process.run()
        running.withLock { $0.append(process.processIdentifier) }
        return ChildProcess(handle: process, log: log)
    }

    /// Whether it has not exited yet (a stopped process is running).
    public var isRunning: Bool { !exit.hasExited }

    /// The process id (for messages; signal it with ``signal(_:)``).
    public var pid: Int32 { handle.processIdentifier }

    /// Sends it `number` (SIGKILL, SIGSTOP, SIGCONT, SIGTERM…).
    public func signal(_ number: Int32) { kill(handle.processIdentifier, number) }

    /// What it has logged so far.
    public var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// Waits (polling) for the process to end; its exit status, or nil after `timeout`.
    public func exitStatus(within timeout: Duration = .seconds(30)) async -> (status: Int32, signalled: Bool)? {
        await exit.wait(within: timeout).map { ($0.code, $0.signalled) }
    }
}

/// `splice coordinator` as a child process, to kill -9 for real (killed when the test lets go of it).
public final class ChildCoordinator: Sendable {
    public let process: ChildProcess
    /// The resolved worker endpoint (`tcp://127.0.0.1:PORT`).
    public let workers: String
    /// The resolved API endpoint.
    public let api: String
    /// The operators' endpoint (`127.0.0.1:PORT`: `/metrics`, `/healthz`, `/readyz`, the status page).
    public let metrics: String?
    /// The resolved data endpoint (transfer-mode workers), when it logged one.
    public let data: String?

    private init(process: ChildProcess, workers: String, api: String, metrics: String?, data: String?) {
        self.process = process
        self.workers = workers
        self.api = api
        self.metrics = metrics
        self.data = data
    }

    /// Starts `splice coordinator` and waits (up to 30 s) for its `coordinator ready` line. Its
    /// leadership lease is 8 s unless `extra` or `environment` say otherwise: the whole suite runs
    /// at once on two cores, where a renewal may wait on the database longer than the default
    /// lease's step-down margin (the failover tests give `--leader-lease-seconds` themselves).
    public static func start(
        database: ConnectionConfiguration, spool: URL, workers: String = loopback, api: String = loopback,
        data: String = loopback, extra: [String] = [], environment: [String: String] = [:]
    ) async throws -> ChildCoordinator {
        let process = try ChildProcess.start(
            ["coordinator", "--database", database.description, "--spool", spool.path,
             "--workers-endpoint", workers, "--api-endpoint", api, "--data-endpoint", data,
             "--metrics-endpoint", "127.0.0.1:0"] + extra,
            logName: "coordinator", environment: ["SPLICE_LOG_LEVEL": "info", "SPLICE_LEADER_LEASE_SECONDS": "8"]
                .merging(environment) { _, new in new })
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let text = process.output
            if let line = text.split(separator: "\n").first(where: { $0.contains("coordinator ready") }),
               let workers = field("workers", in: line), let api = field("api", in: line) {
                return ChildCoordinator(process: process, workers: workers, api: api,
                                        metrics: operationsAddress(in: text), data: field("data", in: line))
            }
            guard process.isRunning else { throw TestFailure("splice coordinator exited early:\n\(text)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.signal(SIGTERM)
        throw TestFailure("splice coordinator did not log `coordinator ready` within 30 s")
    }

    static func field(_ name: String, in line: Substring) -> String? {
        line.split(separator: " ").first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }
    }

    /// The address in an `operations endpoint ready address=…` line of `log`.
    static func operationsAddress(in log: String) -> String? {
        log.split(separator: "\n").first { $0.contains("operations endpoint ready") }.flatMap { field("address", in: $0) }
    }

    /// Sends it `number`.
    public func signal(_ number: Int32) { process.signal(number) }

    /// Waits (polling) for the process to end; its exit status, or nil after `timeout`.
    public func exitStatus(within timeout: Duration = .seconds(20)) async -> (status: Int32, signalled: Bool)? {
        await process.exitStatus(within: timeout)
    }

    /// What it has logged so far.
    public var output: String { process.output }
}

/// `splice worker` as a child process, logging to a file; killed when the test lets go of it.
public final class ChildWorker: Sendable {
    public let process: ChildProcess
    /// The name it registers with (unique within a cluster, so the store's worker row can be found).
    public let name: String

    /// One slot, one encoder thread (every encoder single-threaded, as in `splice transcode --jobs 2`),
    /// and an operations endpoint on a port the kernel picks.
    public static let usualFlags = ["--slots", "1", "--codec-threads", "1", "--metrics-endpoint", "127.0.0.1:0"]

    /// Starts `splice worker` against the worker endpoint `coordinator`, sharing `spool`, with
    /// `flags` (``usualFlags`` unless a test is about them), under `wrapper`
    /// (`["/usr/bin/taskset", "-c", "0"]`: the command, then the `splice` binary and its arguments);
    /// `binary` another release's `splice` instead of this build's (``CompatBinary``).
    public init(coordinator: String, spool: URL, name: String, flags: [String] = usualFlags, wrapper: [String] = [],
                environment: [String: String] = [:], binary: URL? = nil) throws {
        self.name = name
        process = try ChildProcess.start(
            ["worker", "--coordinator", coordinator, "--spool", spool.path, "--name", name, "--drain-timeout", "30"]
                + flags, logName: name, environment: environment, wrapper: wrapper, binary: binary)
    }

    /// Starts `splice worker` in transfer mode (no `--spool`) against `coordinator` and its data
    /// endpoint `data`. With `isolation`, in a mount namespace of its own where the tests' files are
    /// hidden (root only): it starts only if it cannot see any of `isolation.mustNotSee`.
    public init(coordinator: String, data: String, name: String, isolation: MountIsolation?, extra: [String] = []) throws {
        self.name = name
        process = try ChildProcess.start(
            ["worker", "--coordinator", coordinator, "--data-endpoint", data, "--slots", "1", "--codec-threads", "1",
             "--name", name, "--drain-timeout", "30", "--metrics-endpoint", "127.0.0.1:0"] + extra, logName: name,
            wrapper: isolation?.wrapper ?? [])
    }

    /// Whether it has said it is registered with a coordinator.
    public var isRegistered: Bool { process.output.contains("registered with the coordinator") }

    /// Its operators' endpoint (`127.0.0.1:PORT`), once it has logged it.
    public var metrics: String? { ChildCoordinator.operationsAddress(in: process.output) }
}
