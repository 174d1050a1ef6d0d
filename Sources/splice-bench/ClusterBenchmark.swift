import Foundation
import SpliceCore
import SpliceJSON
import SpliceLog
import SpliceMedia
import SpliceStore
import SpliceWire
import Synchronization
import SpliceCoordinator
import SpliceHTTP

/// `splice-bench cluster`: the real coordinator (real ZeroMQ over loopback, a real embedded
/// PostgreSQL) against in-process fake workers — DEALERs that answer every ASSIGN with an
/// instant ACCEPT and COMPLETE, encoding nothing. Prints segments completed per second end to end
/// and the ASSIGN → COMPLETE → ACK latency each worker sees, for each worker count, and the CPU
/// each segment cost the coordinator (this process without the fake workers' threads), the fake
/// workers and PostgreSQL — the coordinator's figure is the regression guard: it must not grow with
/// the number of workers (docs/coordinator.md, Dispatch at farm scale).
///
///     splice-bench cluster [--workers 1,16,256,1024] [--slots 1] [--segments 10000] [--jobs 8] [--fast] [--statements]
///                          [--standby] [--streams 500]
///
/// `--standby` runs a second coordinator on the same database beside the first, standing by (it
/// reads the leadership row every 250 ms and answers nothing for the workers): what a standby
/// costs the active one's dispatch (docs/coordinator.md, Standby coordinators).
///
/// `--streams N` serves the HTTP API too and holds N of its Server-Sent Event streams open on the
/// jobs while the segments are dispatched (docs/api.md: streams must not slow dispatch).
///
/// Jobs are submitted through the client API and planned by the coordinator from a generated
/// clip with a keyframe every second (one segment per second). Their stitches fail afterwards
/// (the segment files do not exist): that is outside what is measured.
enum ClusterBenchmark {
    struct Options {
        var workers = [1, 16, 256, 1024]
        var slots = 1
        var segments = 10_000
        var jobs = 8
        var fast = false
        /// Print the statements Postgres spent its time on (pg_stat_statements).
        var statements = false
        /// A standby coordinator beside the active one.
        var standby = false
        /// HTTP API event streams held open during each run.
        var streams = 0

        init(_ arguments: [String]) throws {
            var iterator = arguments.makeIterator()
            while let argument = iterator.next() {
                func value() throws -> String {
                    guard let text = iterator.next() else { throw ClusterBenchmarkError("\(argument) needs a value") }
                    return text
                }
                func number() throws -> Int {
                    guard let value = Int(try value()), value > 0 else {
                        throw ClusterBenchmarkError("\(argument) needs a positive number")
                    }
                    return value
                }
                switch argument {
                case "--workers":
                    workers = try value().split(separator: ",").map { text in
                        guard let count = Int(text), count > 0 else {
                            throw ClusterBenchmarkError("--workers takes counts like 1,16,256")
                        }
                        return count
                    }
                case "--slots": slots = try number()
                case "--segments": segments = try number()
                case "--jobs": jobs = try number()
                case "--fast": fast = true
                case "--statements": statements = true
                case "--standby": standby = true
                case "--streams": streams = try number()
                default: throw ClusterBenchmarkError("unknown option \(argument)")
                }
            }
        }
    }

    static func run(_ arguments: [String]) async throws {
        let options = try Options(arguments)
        let directory = "/tmp/splice-bench-cluster-\(getpid())"
        var configuration = EmbeddedPostgres.Configuration(directory: directory)
        configuration.durability = options.fast ? .fastForTests : .durable
        configuration.log = { _ in }
        if options.statements { configuration.settings["shared_preload_libraries"] = "pg_stat_statements" }
        let server = EmbeddedPostgres(configuration)
        try await server.start()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let perJob = max(1, options.segments / options.jobs)
            let clip = try makeClip(seconds: perJob, in: directory)
            print("""
                splice-bench cluster: \(options.segments) segments per run (\(options.jobs) jobs × \(perJob)), \
                \(options.slots) slots per fake worker\(options.standby ? ", a standby coordinator beside the active one" : "")\
                \(options.streams > 0 ? ", \(options.streams) HTTP event streams open" : "")
                  durability: \(options.fast ? "fsync off (--fast)" : "full (fsync on every commit)")
                """)
            for (run, workers) in options.workers.enumerated() {
                let database = try await server.createDatabase("bench_\(run)")
                try await Migrator(configuration: database).migrate()
                let inspector = PostgresClient(configuration: database, maxConnections: 1)
                if options.statements { try await inspector.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements") }
                let result = try await measure(
                    database: database, clip: clip, jobs: options.jobs, segmentsPerJob: perJob, workers: workers,
                    slots: options.slots, scratch: URL(fileURLWithPath: directory).appendingPathComponent("run-\(run)"),
                    server: server.dataDirectory, standby: options.standby, streams: options.streams)
                print(result)
                if options.statements { try await printStatements(inspector) }
                await inspector.close()
                // Each run measures alone: the server must not vacuum this one's dead rows during the next.
                _ = try await PostgresConnection.withConnection(server.connectionConfiguration()) { connection in
                    try await connection.query("DROP DATABASE \(identifier: "bench_\(run)") WITH (FORCE)")
                }
            }
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    // MARK: - One run

    /// Coordinator lines: errors only, unless SPLICE_LOG_LEVEL says otherwise.
    private static let logger: Logger = {
        let name = ProcessInfo.processInfo.environment[Logger.levelEnvironmentVariable]
        return Logger(level: name.flatMap(LogLevel.init(name:)) ?? .error)
    }()

    private static func measure(
        database: ConnectionConfiguration, clip: String, jobs: Int, segmentsPerJob: Int, workers: Int, slots: Int,
        scratch: URL, server: String, standby: Bool, streams: Int
    ) async throws -> String {
        var configuration = CoordinatorConfiguration(
            database: .server(database), spool: scratch.appendingPathComponent("spool"),
            workersEndpoint: "tcp://127.0.0.1:*", apiEndpoint: "tcp://127.0.0.1:*", pollInterval: .milliseconds(100),
            logger: logger)
        if streams > 0 { configuration.httpEndpoint = HTTPAddress(parsing: "127.0.0.1:0") }
        let coordinator = Coordinator(configuration: configuration)
        let running = Task { try await coordinator.run() }
        let endpoints = try await coordinator.ready()
        // Started second, so it stands by.
        var second: (coordinator: Coordinator, running: Task<Void, any Error>)?
        if standby {
            var standbyConfiguration = configuration
            standbyConfiguration.name = "standby"
            standbyConfiguration.metricsEndpoint = nil
            let standby = Coordinator(configuration: standbyConfiguration)
            second = (standby, Task { try await standby.run() })
            _ = try await standby.ready()
        }
        let context = try WireContext(ioThreads: 2)

        // Submit and wait until every job is planned, before any worker is there to take segments.
        let client = APIClientEndpoint(try await WireEndpoint.connect(
            endpoints.api, type: .dealer, context: context, options: .dealer(immediate: false)))
        var submitted: [JobID] = []
        let request = TranscodeRequest(
            video: VideoSettings(codec: .h264, preset: "ultrafast"), audio: nil, fileType: .mp4,
            segmentDuration: MediaTime(seconds: 1))
        for index in 0..<jobs {
            let reply = try await client.request(.submit(SubmitJob(
                input: clip, output: scratch.appendingPathComponent("out-\(index).mp4").path,
                export: try JSONPayload(encoding: request), submissionKey: "bench-\(index)")))
            guard case .submitted(let job) = reply else { throw ClusterBenchmarkError("SUBMIT answered \(reply)") }
            submitted.append(job.job)
        }
        for job in submitted {
            polling: while true {
                let reply = try await client.request(.status(JobStatusQuery(job: job)))
                guard case .status(let status) = reply else { throw ClusterBenchmarkError("STATUS answered \(reply)") }
                switch status.state {
                case .running:
                    break polling
                case .queued, .planning:
                    try await Task.sleep(for: .milliseconds(50))
                case .stitching, .succeeded, .failed, .cancelled:
                    throw ClusterBenchmarkError("job \(job) is \(status.state.rawValue): \(status.error ?? "")")
                }
            }
        }
        await client.close(linger: .zero)

        // The event streams, open on the jobs before the first segment is dispatched.
        var open: EventStreams?
        if streams > 0, let http = endpoints.http {
            let token = "spl_bench-" + UUID().uuidString
            let store = JobRepository(client: PostgresClient(configuration: database, maxConnections: 1))
            _ = try await store.createToken(APITokenRequest(
                name: "bench", tokenHash: SHA256Digest(bytes: SHA256.digest(of: Array(token.utf8)))!, scopes: [.read],
                rateLimit: 1_000_000))
            await store.client.close()
            open = try EventStreams(http: http.description, token: token, jobs: submitted.map(\.description), count: streams)
            try await Task.sleep(for: .seconds(2))
        }
        defer { open?.close() }

        let total = jobs * segmentsPerJob
        let tally = Tally(target: total)
        let cpuBefore = processCPUMicroseconds()
        let serverCPUBefore = ServerCPU(dataDirectory: server)
        let fakes = try FakeWorkerPool.start(endpoint: endpoints.workers, count: workers, slots: slots, tally: tally)
        let finished = await tally.finished(within: .seconds(600))
        let cpu = processCPUMicroseconds() - cpuBefore
        let fakesCPU = fakes.cpuMicroseconds
        let serverCPU = ServerCPU(dataDirectory: server).microseconds - serverCPUBefore.microseconds
        let perSegment = { (microseconds: Int64) in microseconds / Int64(max(1, total)) }
        let answered = open.map { " — \($0.answered()) event streams open" } ?? ""
        let summary = tally.summary(workers: workers) + answered
            + "\n      CPU per segment: coordinator \(perSegment(cpu - fakesCPU)) µs, "
            + "fake workers \(perSegment(fakesCPU)) µs, PostgreSQL \(perSegment(serverCPU)) µs"
        await fakes.stop()
        if let second {
            await second.coordinator.shutdown()
            try await second.running.value
        }
        await coordinator.shutdown()
        try await running.value
        await context.terminate()
        guard finished else { throw ClusterBenchmarkError("not all segments completed within 600 s: \(summary)") }
        return summary
    }

    /// The ten statements with the most execution time, from pg_stat_statements.
    static func printStatements(_ client: PostgresClient) async throws {
        let rows = try await client.query("""
            SELECT calls, round(total_exec_time)::bigint AS total, round(mean_exec_time * 1000)::bigint AS mean,
                   rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 100) AS text
            FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 10
            """)
        for row in rows {
            let calls = try row.decode(Int64.self, column: "calls")
            let total = try row.decode(Int64.self, column: "total")
            let mean = try row.decode(Int64.self, column: "mean")
            let text = try row.decode(String.self, column: "text")
            print("    \(calls) calls  \(total) ms  mean \(mean) µs  \(text)")
        }
    }

    /// User + system CPU time of this process so far.
    private static func processCPUMicroseconds() -> Int64 {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let user = Int64(usage.ru_utime.tv_sec) * 1_000_000 + Int64(usage.ru_utime.tv_usec)
        return user + Int64(usage.ru_stime.tv_sec) * 1_000_000 + Int64(usage.ru_stime.tv_usec)
    }

    /// User + system CPU time of the PostgreSQL server's processes (the postmaster and its
    /// children, from /proc): backends that exited meanwhile are not counted, which is why the
    /// coordinator's connections are opened before the first reading.
    struct ServerCPU {
        var microseconds: Int64 = 0

        init(dataDirectory: String) {
            guard let pidFile = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8),
                  let postmaster = pidFile.split(separator: "\n").first.flatMap({ Int($0) })
            else { return }
            let ticks = Int64(sysconf(Int32(_SC_CLK_TCK)))
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
                guard let pid = Int(entry), let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                      let close = stat.lastIndex(of: ")")
                else { continue }
                // Fields after the command name: state ppid … utime(14) stime(15), counted from 1.
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                guard fields.count > 13, let parent = Int(fields[1]), pid == postmaster || parent == postmaster,
                      let user = Int64(fields[11]), let system = Int64(fields[12])
                else { continue }
                microseconds += (user + system) * 1_000_000 / max(1, ticks)
            }
        }
    }

    private static func makeClip(seconds: Int, in directory: String) throws -> String {
        let path = directory + "/clip-\(seconds)s.mp4"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                             "color=black:size=32x32:rate=1:duration=\(seconds)", "-c:v", "libx264", "-preset",
                             "ultrafast", "-g", "1", "-pix_fmt", "yuv420p", path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ClusterBenchmarkError("ffmpeg could not generate the benchmark clip")
        }
        return path
    }
}

struct ClusterBenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Counting

