import Foundation
import SpliceStore
#if canImport(Glibc)
import Glibc
#endif

/// `splice-bench http`: the HTTP API of a real `splice coordinator` (the release binary beside
/// this one, as a child process, on an embedded PostgreSQL with durable commits) holding 10,000
/// finished jobs, under wrk (Debian's; `apt-get install wrk`):
///
/// - `GET /v1/jobs/{id}` of random finished jobs, 64 connections: requests a second and latency
///   percentiles;
/// - `POST /v1/jobs`: jobs accepted a second (each a real job the coordinator then plans);
/// - 500 Server-Sent Event streams held open on unfinished jobs: the coordinator's resident memory
///   before and with them, and whether every stream got its answer.
///
///     splice-bench http [--jobs 10000] [--seconds 10] [--connections 64] [--streams 500] [--threads 2]
///                       [--runs 1] [--get-only] [--statements]
///
/// Each GET run also prints the CPU time a request cost the coordinator and PostgreSQL (from
/// /proc, over the run): on a shared, loaded machine that figure moves far less than the rate.
/// `--runs N` repeats the GET run; `--get-only` leaves out the POST and stream phases;
/// `--statements` prints the statements PostgreSQL spent the GET runs on (pg_stat_statements).
///
/// `splice-bench cluster --streams 500` is the other half: dispatch with that many streams open.
enum HTTPBenchmark {
    struct Options {
        var jobs = 10_000
        var seconds = 10
        var connections = 64
        var streams = 500
        var threads = 2
        var runs = 1
        var getOnly = false
        var statements = false

        init(_ arguments: [String]) throws {
            var iterator = arguments.makeIterator()
            while let argument = iterator.next() {
                if argument == "--get-only" {
                    getOnly = true
                    continue
                }
                if argument == "--statements" {
                    statements = true
                    continue
                }
                guard let text = iterator.next(), let value = Int(text), value > 0 else {
                    throw ClusterBenchmarkError("\(argument) needs a positive number")
                }
                switch argument {
                case "--jobs": jobs = value
                case "--seconds": seconds = value
                case "--connections": connections = value
                case "--streams": streams = value
                case "--threads": threads = value
                case "--runs": runs = value
                default: throw ClusterBenchmarkError("unknown option \(argument)")
                }
            }
        }
    }

    static func run(_ arguments: [String]) async throws {
        let options = try Options(arguments)
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/wrk") else {
            throw ClusterBenchmarkError("wrk is not installed: apt-get install wrk")
        }
        let splice = try Self.spliceBinary()
        let directory = "/tmp/splice-bench-http-\(getpid())"
        // The server runs as postgres: the folder above its data must be searchable by it.
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        var settings = EmbeddedPostgres.Configuration(directory: directory + "/postgres")
        settings.durability = .durable
        settings.log = { _ in }
        if options.statements { settings.settings["shared_preload_libraries"] = "pg_stat_statements" }
        let server = EmbeddedPostgres(settings)
        try await server.start()
        var coordinator: Process?
        defer {
            if let coordinator, coordinator.isRunning { kill(coordinator.processIdentifier, SIGKILL) }
            try? FileManager.default.removeItem(atPath: directory)
        }
        do {
            let database = try await server.createDatabase("bench_http")
            try await Migrator(configuration: database).migrate()
            let inspector = PostgresClient(configuration: database, maxConnections: 1)
            defer { Task { await inspector.close() } }
            if options.statements { try await inspector.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements") }
            let ids = try await seed(database, jobs: options.jobs)
            let clip = try makeClip(in: directory)
            try FileManager.default.createDirectory(atPath: directory + "/out", withIntermediateDirectories: true)
            let (process, http, api, log) = try await startCoordinator(splice, database: database, directory: directory)
            coordinator = process
            let token = try createToken(splice, api: api)
            print("""
                splice-bench http: a `splice coordinator` holding \(ids.count) finished jobs (4 segments each), \
                PostgreSQL durable; wrk \(options.threads) threads, \(options.connections) connections, \
                \(options.seconds) s per run
                """)
            let idFile = directory + "/ids.txt"
            try ids.joined(separator: "\n").write(toFile: idFile, atomically: true, encoding: .utf8)
            let getScript = directory + "/get.lua"
            try """
                local ids = {}
                for line in io.lines("\(idFile)") do ids[#ids + 1] = line end
                local headers = {["Authorization"] = "Bearer \(token)"}
                request = function()
                    return wrk.format("GET", "/v1/jobs/" .. ids[math.random(#ids)], headers)
                end
                """.write(toFile: getScript, atomically: true, encoding: .utf8)
            if options.statements { try await inspector.query("SELECT pg_stat_statements_reset()") }
            for _ in 0..<options.runs {
                let cpuBefore = (coordinator: processCPUMicroseconds(process.processIdentifier),
                                 server: ClusterBenchmark.ServerCPU(dataDirectory: server.dataDirectory).microseconds)
                let get = try wrk(http, script: getScript, options: options)
                let coordinatorCPU = processCPUMicroseconds(process.processIdentifier) - cpuBefore.coordinator
                let serverCPU = ClusterBenchmark.ServerCPU(dataDirectory: server.dataDirectory).microseconds
                    - cpuBefore.server
                let requests = max(1, get.requests)
                print("  GET /v1/jobs/{id}:  \(get.summary)   CPU a request: coordinator \(coordinatorCPU / requests) µs, "
                    + "PostgreSQL \(serverCPU / requests) µs   (load average \(loadAverage()))")
            }
            if options.statements {
                print("  the statements of the GET runs:")
                try await ClusterBenchmark.printStatements(inspector)
            }
            guard !options.getOnly else {
                kill(process.processIdentifier, SIGTERM)
                process.waitUntilExit()
                try await server.stop()
                return
            }
            let postScript = directory + "/post.lua"
            try """
                wrk.method = "POST"
                wrk.headers["Content-Type"] = "application/json"
                wrk.headers["Authorization"] = "Bearer \(token)"
                -- One output per job: a second job for an output already taken is refused.
                local threads = 0
                function setup(thread) threads = threads + 1; thread:set("tid", threads) end
                local n = 0
                request = function()
                    n = n + 1
                    return wrk.format(nil, "/v1/jobs", nil, string.format(
                        '{"input": "\(clip)", "output": "\(directory)/out/bench-%d-%d.mp4", "priority": -1000}', tid, n))
                end
                """.write(toFile: postScript, atomically: true, encoding: .utf8)
            var postOptions = options
            postOptions.seconds = max(3, options.seconds / 2)
            let post = try wrk(http, script: postScript, options: postOptions)
            print("  POST /v1/jobs:      \(post.summary)")
            try await streams(http, token: token, coordinator: process.processIdentifier, count: options.streams,
                              database: database)
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
            if process.terminationStatus != 0 {
                print("  the coordinator exited \(process.terminationStatus); its log: \(log)")
            }
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }

    // MARK: - Setting up

    /// `splice` beside this binary (`swift build -c release` makes both).
    static func spliceBinary() throws -> String {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let splice = URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("splice").path
        guard FileManager.default.isExecutableFile(atPath: splice) else {
            throw ClusterBenchmarkError("no \(splice): build it with `swift build -c release --product splice`")
        }
        return splice
    }

    /// `jobs` finished jobs of 4 done segments each, written straight into the store (as a
    /// coordinator that ran them would have left them); their ids.
    static func seed(_ database: ConnectionConfiguration, jobs: Int) async throws -> [String] {
        // Written as a tool, not a coordinator: past the epoch fence (docs/coordinator.md).
        let client = PostgresClient(configuration: database.unfenced(), maxConnections: 1)
        defer { Task { await client.close() } }
        try await client.query("""
            WITH j AS (
                INSERT INTO jobs (idempotency_key, source_url, output_url, settings, plan, state, priority,
                                  max_attempts, segments_total, segments_done, created_at, started_at, finished_at,
                                  reference)
                SELECT 'seed-' || g, '/media/in/clip-' || g || '.mov', '/media/out/clip-' || g || '.mp4',
                       '{"fileType": "mp4", "video": {"codec": "h264"}}', '{}', 'succeeded', 0, 5, 4, 4,
                       now() - (\(jobs) - g) * interval '1 second', now() - (\(jobs) - g) * interval '1 second',
                       now(), 'order-' || g
                FROM generate_series(1, \(jobs)) g
                RETURNING id, created_at
            )
            INSERT INTO segments (job_id, index, range_start, range_end, range_timescale, priority, job_created_at,
                                  state, attempt, max_attempts, lease_token, output_url, checksum, finished_at,
                                  cost, video_bytes, video_bits_per_second, mean_qp)
            SELECT j.id, i, i * 10, (i + 1) * 10, 1, 0, j.created_at, 'done', 1, 5, gen_random_uuid(),
                   '/spool/segment', 'sha256:' || repeat('ab', 32), now(), 1000000, 1234567, 987654, 24.5
            FROM j, generate_series(0, 3) i
            """)
        try await client.query("VACUUM ANALYZE")
        return try await client.query("SELECT id::text FROM jobs").map { row throws(StoreError) in
            try row.decode(String.self, at: 0)
        }
    }

    static func makeClip(in directory: String) throws -> String {
        let path = directory + "/clip.mp4"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10:duration=2",
                             "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ClusterBenchmarkError("ffmpeg could not make the clip") }
        return path
    }

    /// `splice coordinator` with the HTTP API on a free loopback port; the process, the API's
    /// address, the ZeroMQ API endpoint and its log.
    static func startCoordinator(_ splice: String, database: ConnectionConfiguration, directory: String) async throws
        -> (Process, String, String, String)
    {
        let log = directory + "/coordinator.log"
        FileManager.default.createFile(atPath: log, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: splice)
        process.arguments = ["coordinator", "--database", database.description, "--spool", directory + "/spool",
                             "--workers-endpoint", "tcp://127.0.0.1:*", "--api-endpoint", "tcp://127.0.0.1:*",
                             "--data-endpoint", "tcp://127.0.0.1:*", "--metrics-endpoint", "127.0.0.1:0",
                             "--http-endpoint", "127.0.0.1:0", "--http-rate-limit", "1000000"]
        process.environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
                               "HOME": directory, "SPLICE_LOG_LEVEL": "info"]  // "coordinator ready" is info
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.contains("coordinator ready") }),
               let http = field("http", in: line), let api = field("api", in: line) {
                return (process, http, api, log)
            }
            guard process.isRunning else { throw ClusterBenchmarkError("the coordinator exited:\n\(text)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ClusterBenchmarkError("the coordinator did not get ready in 60 s")
    }

    static func field(_ name: String, in line: Substring) -> String? {
        line.split(separator: " ").first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }
    }

    static func createToken(_ splice: String, api: String) throws -> String {
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: splice)
        process.arguments = ["tokens", "create", "bench", "--scopes", "read,submit,cancel", "--rate-limit", "1000000",
                             "--coordinator", api]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationStatus == 0, token.hasPrefix("spl_") else {
            throw ClusterBenchmarkError("splice tokens create failed")
        }
        return token
    }

    // MARK: - Measuring

    /// wrk with `script` against `http`: its requests a second, latency percentiles and errors, and
    /// how many requests it made.
    static func wrk(_ http: String, script: String, options: Options) throws -> (summary: String, requests: Int64) {
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/wrk")
        process.arguments = ["-t", String(options.threads), "-c", String(options.connections), "-d",
                             "\(options.seconds)s", "--latency", "-s", script, "http://" + http]
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        func after(_ label: String) -> String {
            text.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(label) }
                .map { $0.trimmingCharacters(in: .whitespaces).dropFirst(label.count).trimmingCharacters(in: .whitespaces) }
                ?? "-"
        }
        let errors = after("Non-2xx or 3xx responses:")
        let socketErrors = after("Socket errors:")
        // "  123456 requests in 10.00s, 45.67MB read"
        let requests = text.split(separator: "\n").first { $0.contains(" requests in ") }
            .flatMap { Int64($0.split(separator: " ").first ?? "") } ?? 0
        let summary = "\(after("Requests/sec:")) requests/s   p50 \(after("50%"))  p90 \(after("90%"))  p99 \(after("99%"))"
            + (errors == "-" ? "" : "   non-2xx \(errors)") + (socketErrors == "-" ? "" : "   socket errors: \(socketErrors)")
        return (summary, requests)
    }

    /// User + system CPU time of process `pid` so far (/proc/PID/stat).
    static func processCPUMicroseconds(_ pid: pid_t) -> Int64 {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Int64(fields[11]), let system = Int64(fields[12]) else { return 0 }
        return (user + system) * 1_000_000 / max(1, Int64(sysconf(Int32(_SC_CLK_TCK))))
    }

    /// The 1-minute load average (/proc/loadavg).
    static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").first
            .map(String.init) ?? "?"
    }

    /// Opens `count` event streams on unfinished jobs and reports the coordinator's resident memory
    /// before, with them open (after 5 s), and how many were answered 200 with their first event.
    static func streams(_ http: String, token: String, coordinator: pid_t, count: Int,
                        database: ConnectionConfiguration) async throws {
        let client = PostgresClient(configuration: database, maxConnections: 1)
        let unfinished = try await client.query("""
            SELECT id::text FROM jobs WHERE finished_at IS NULL ORDER BY created_at LIMIT 50
            """).map { row throws(StoreError) in try row.decode(String.self, at: 0) }
        await client.close()
        guard !unfinished.isEmpty else { throw ClusterBenchmarkError("no unfinished job to stream") }
        try await Task.sleep(for: .seconds(2))
        let before = residentKiB(coordinator)
        let opened = try EventStreams(http: http, token: token, jobs: unfinished, count: count)
        try await Task.sleep(for: .seconds(5))
        let with = residentKiB(coordinator)
        let answered = opened.answered()
        print("  \(count) event streams on \(unfinished.count) unfinished jobs: \(answered) answered 200 with "
            + "their first event; coordinator RSS \(before / 1024) MiB before, \(with / 1024) MiB with them open "
            + "(+\((with - before) / 1024) MiB, \((with - before) / max(1, count)) KiB a stream)")
        opened.close()
    }

    static func residentKiB(_ pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        return line.flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? 0
    }
}

/// `count` Server-Sent Event streams held open on raw sockets, spread over `jobs`; one thread
/// reads (and drops) what arrives on all of them.
final class EventStreams: @unchecked Sendable {
    private var sockets: [Int32] = []
    private var firstBytes: [Int32: [UInt8]] = [:]
    private let lock = NSLock()
    private var reading = true
    private var thread: Thread?

    init(http: String, token: String, jobs: [String], count: Int) throws {
        guard let colon = http.lastIndex(of: ":"), let port = UInt16(http[http.index(after: colon)...]) else {
            throw ClusterBenchmarkError("bad address \(http)")
        }
        for index in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                Glibc.close(fd)
                throw ClusterBenchmarkError("stream \(index) could not connect: \(String(cString: strerror(errno)))")
            }
            let request = "GET /v1/jobs/\(jobs[index % jobs.count])/events HTTP/1.1\r\nHost: bench\r\n"
                + "Authorization: Bearer \(token)\r\nAccept: text/event-stream\r\n\r\n"
            _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            sockets.append(fd)
        }
        let thread = Thread { [unowned self] in self.readLoop() }
        self.thread = thread
        thread.start()
    }

    private func readLoop() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while lock.withLock({ reading }) {
            var fds = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard poll(&fds, nfds_t(fds.count), 200) > 0 else { continue }
            for entry in fds where entry.revents != 0 {
                let count = read(entry.fd, &buffer, buffer.count)
                guard count > 0 else { continue }
                lock.withLock {
                    if (firstBytes[entry.fd]?.count ?? 0) < 512 { firstBytes[entry.fd, default: []] += buffer[0..<count] }
                }
            }
        }
    }

    /// Streams whose answer began `HTTP/1.1 200` and carried the `retry:` line.
    func answered() -> Int {
        lock.withLock {
            firstBytes.values.filter {
                let text = String(decoding: $0, as: UTF8.self)
                return text.hasPrefix("HTTP/1.1 200") && text.contains("retry: 1000")
            }.count
        }
    }

    func close() {
        lock.withLock { reading = false }
        while thread?.isFinished == false { usleep(10_000) }
        for fd in sockets { Glibc.close(fd) }
    }
}
