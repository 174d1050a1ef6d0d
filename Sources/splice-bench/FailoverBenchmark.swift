import Foundation
import SpliceStore
#if canImport(Glibc)
import Glibc
#endif

/// `splice-bench failover`: how long a standby coordinator takes to take over (docs/coordinator.md,
/// Standby coordinators). Two `splice coordinator` processes on one PostgreSQL (an embedded server
/// this benchmark starts, reached by URL as an external one would be), `splice worker`s given
/// both, and jobs kept coming; the active coordinator is SIGKILLed `--kills` times, restarted as a
/// standby after each. Take-over time: from the kill to the first lease issued or result committed
/// under the new epoch — the other coordinator active and dispatching — by the `job_events` rows
/// the database stamps (same host, same clock). Prints p50, p99 and the worst, the time until
/// the lease was taken, and how many encodes were done twice (running segments are adopted by
/// the new active coordinator, so none should be).
///
///     splice-bench failover [--kills 20] [--leader-lease-seconds 3] [--workers 2]
enum FailoverBenchmark {
    struct Options {
        var kills = 20
        var leaseSeconds = "3"
        var workers = 2

        init(_ arguments: [String]) throws {
            var iterator = arguments.makeIterator()
            while let argument = iterator.next() {
                guard let value = iterator.next() else { throw ClusterBenchmarkError("\(argument) needs a value") }
                switch argument {
                case "--kills":
                    guard let number = Int(value), number > 0 else { throw ClusterBenchmarkError("--kills takes a count") }
                    kills = number
                case "--leader-lease-seconds": leaseSeconds = value
                case "--workers":
                    guard let number = Int(value), number > 0 else { throw ClusterBenchmarkError("--workers takes a count") }
                    workers = number
                default: throw ClusterBenchmarkError("unknown option \(argument)")
                }
            }
        }
    }

    /// One coordinator's fixed loopback ports (a restarted one comes back on them).
    struct Ports {
        let workers: String, api: String, data: String

        init(_ index: Int) {
            let base = 17_860 + index * 10
            workers = "tcp://127.0.0.1:\(base)"
            api = "tcp://127.0.0.1:\(base + 1)"
            data = "tcp://127.0.0.1:\(base + 2)"
        }
    }

    static func run(_ arguments: [String]) async throws {
        let options = try Options(arguments)
        let directory = URL(fileURLWithPath: "/tmp/splice-bench-failover-\(getpid())")
        let spool = directory.appendingPathComponent("spool")
        try FileManager.default.createDirectory(at: spool, withIntermediateDirectories: true)
        _ = try? MeasuredProcess.run(["chmod", "-R", "a+rwX", directory.path])
        var settings = EmbeddedPostgres.Configuration(directory: directory.appendingPathComponent("pg").path)
        settings.log = { _ in }
        let server = EmbeddedPostgres(settings)
        try await server.start()
        defer { try? FileManager.default.removeItem(at: directory) }
        var processes: [Process] = []
        do {
            let database = try await server.createDatabase("failover")
            try await Migrator(configuration: database).migrate()
            let clip = directory.appendingPathComponent("clip.mp4").path
            try BenchmarkClip.generate(seconds: 120, at: clip, keyframeInterval: 30, size: "320x240")
            print("""
                splice-bench failover: \(options.kills) SIGKILLs of the active coordinator (two coordinators, \
                --leader-lease-seconds \(options.leaseSeconds)), \(options.workers) workers, 1 s segments
                """)
            let store = PostgresClient(configuration: database, maxConnections: 1)
            var coordinators = try (0..<2).map { index in
                try coordinator(index, database: database, spool: spool, lease: options.leaseSeconds, in: directory)
            }
            // Whichever takes the lease first is active; the other stands by.
            try await waitForLeader(store)
            let endpoints = (0..<2).map { Ports($0).workers }.joined(separator: ",")
            let workers = try (0..<options.workers).map { index in
                try spawn(["worker", "--coordinator", endpoints, "--spool", spool.path, "--slots", "1",
                           "--codec-threads", "1", "--name", "w\(index)", "--metrics-endpoint", "off"],
                          log: directory.appendingPathComponent("w\(index).log"))
            }
            processes = workers + coordinators

            var submitted = 0
            var takeOvers: [Double] = [], leaseTaken: [Double] = []
            for _ in 0..<options.kills {
                // Work waiting (so the new active coordinator has something to dispatch) and running.
                while try await pendingSegments(store) < 40 {
                    submitted += 1
                    try submit(clip, output: directory.appendingPathComponent("out-\(submitted).mp4").path)
                    try await Task.sleep(for: .seconds(2))
                }
                let before = try await LeaderLease.current(client: store)
                guard let active = before.active, let name = active.holderName, let index = Int(name.dropFirst()) else {
                    throw ClusterBenchmarkError("no active coordinator; see the logs in \(directory.path)")
                }
                try await waitForDispatch(store, epoch: active.epoch)
                try await Task.sleep(for: .milliseconds(Int.random(in: 200...1200)))
                let killedAt = Date()
                kill(coordinators[index].processIdentifier, SIGKILL)
                coordinators[index].waitUntilExit()
                let (taken, dispatching) = try await waitForTakeOver(store, after: active.epoch, since: killedAt)
                takeOvers.append(dispatching)
                leaseTaken.append(taken)
                coordinators[index] = try coordinator(index, database: database, spool: spool, lease: options.leaseSeconds,
                                                      in: directory)
                processes = workers + coordinators
            }
            // Let the jobs finish, then count the encodes against the segments they made.
            let deadline = ContinuousClock.now + .seconds(600)
            while try await unfinishedJobs(store) > 0 {
                guard ContinuousClock.now < deadline else { throw ClusterBenchmarkError("jobs still running after 600 s") }
                try await Task.sleep(for: .milliseconds(500))
            }
            let (succeeded, segments) = try await finishedJobs(store)
            let encodes = workers.indices.map { index in
                ((try? String(contentsOf: directory.appendingPathComponent("w\(index).log"), encoding: .utf8)) ?? "")
                    .split(separator: "\n").filter { $0.contains(#"msg="segment encoded""#) }.count
            }.reduce(0, +)
            print("  take-over (kill → active and dispatching): " + summary(takeOvers))
            print("  lease taken (kill → new epoch):             " + summary(leaseTaken))
            print("  jobs \(submitted) submitted, \(succeeded) succeeded; \(segments) segments, \(encodes) encodes "
                  + "(\(encodes - segments) done again)")
            for process in processes where process.isRunning { process.interrupt() }
            for process in processes { process.waitUntilExit() }
            await store.close()
        } catch {
            for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) }
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    // MARK: - Figures

    /// `p50 … p99 … max … (n)`, in seconds.
    static func summary(_ values: [Double]) -> String {
        let sorted = values.sorted()
        func percentile(_ p: Double) -> Double {
            sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)]
        }
        return String(format: "p50 %.2f s, p99 %.2f s, max %.2f s (%d kills)", percentile(0.5), percentile(0.99),
                      sorted.last ?? 0, sorted.count)
    }

    // MARK: - The store

    private static func waitForLeader(_ store: PostgresClient) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while try await LeaderLease.current(client: store).active == nil {
            guard ContinuousClock.now < deadline else { throw ClusterBenchmarkError("no coordinator became active") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits until `epoch` has issued a lease.
    private static func waitForDispatch(_ store: PostgresClient, epoch: Int64) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while try await store.query("""
            SELECT 1 FROM job_events WHERE epoch = \(epoch) AND kind = 'segment_leased' LIMIT 1
            """).isEmpty {
            guard ContinuousClock.now < deadline else { throw ClusterBenchmarkError("epoch \(epoch) dispatched nothing") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Seconds from `killedAt` until a later epoch was taken, and until it first leased or committed.
    private static func waitForTakeOver(_ store: PostgresClient, after epoch: Int64, since killedAt: Date) async throws
        -> (taken: Double, dispatching: Double)
    {
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            let rows = try await store.query("""
                SELECT l.acquired_at, (SELECT min(at) FROM job_events
                                       WHERE epoch = l.epoch AND kind IN ('segment_leased', 'segment_done'))
                FROM coordinator_leader l WHERE l.epoch > \(epoch)
                """)
            if let row = rows.first {
                let taken: Date? = try row.decode(at: 0)
                let first: Date? = try row.decode(at: 1)
                if let taken, let first {
                    return (taken.timeIntervalSince(killedAt), first.timeIntervalSince(killedAt))
                }
            }
            guard ContinuousClock.now < deadline else { throw ClusterBenchmarkError("no take-over within 120 s") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    private static func pendingSegments(_ store: PostgresClient) async throws -> Int {
        let rows = try await store.query("""
            SELECT (SELECT count(*) FROM segments WHERE state = 'pending')
                 + (SELECT count(*) FROM jobs WHERE state IN ('queued', 'planning')) * 100
            """)
        return Int(try rows.first?.decode(Int64.self, at: 0) ?? 0)
    }

    private static func unfinishedJobs(_ store: PostgresClient) async throws -> Int {
        let rows = try await store.query("""
            SELECT count(*) FROM jobs WHERE state NOT IN ('succeeded', 'failed', 'cancelled')
            """)
        return Int(try rows.first?.decode(Int64.self, at: 0) ?? 0)
    }

    /// Jobs that succeeded, and their segments.
    private static func finishedJobs(_ store: PostgresClient) async throws -> (jobs: Int, segments: Int) {
        let rows = try await store.query("""
            SELECT count(*), coalesce(sum(segments_total), 0)::bigint FROM jobs WHERE state = 'succeeded'
            """)
        guard let row = rows.first else { return (0, 0) }
        return (Int(try row.decode(Int64.self, at: 0)), Int(try row.decode(Int64.self, at: 1)))
    }

    // MARK: - Processes

    private static func coordinator(_ index: Int, database: ConnectionConfiguration, spool: URL, lease: String,
                                    in directory: URL) throws -> Process {
        let ports = Ports(index)
        return try spawn(["coordinator", "--database", database.description, "--spool", spool.path, "--name", "c\(index)",
                          "--workers-endpoint", ports.workers, "--api-endpoint", ports.api, "--data-endpoint", ports.data,
                          "--metrics-endpoint", "off", "--leader-lease-seconds", lease, "--backup-after", "0"],
                         log: directory.appendingPathComponent("c\(index).log"), append: true)
    }

    private static func submit(_ clip: String, output: String) throws {
        let api = (0..<2).map { Ports($0).api }.joined(separator: ",")
        _ = try MeasuredProcess.run([Binaries.splice, "submit", clip, output, "--coordinator", api,
                                     "--video-codec", "h264", "--preset", "ultrafast", "--audio-codec", "aac",
                                     "--segment-seconds", "1"])
    }

    private static func spawn(_ arguments: [String], log: URL, append: Bool = false) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Binaries.splice)
        process.arguments = arguments
        if !append || !FileManager.default.fileExists(atPath: log.path) {
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = handle
        try process.run()
        return process
    }
}
