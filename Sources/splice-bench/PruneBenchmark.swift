import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceStore

/// `splice-bench prune`: retention at scale. Fills a private embedded PostgreSQL with finished
/// jobs (each with its segments and events, as a real job leaves them) plus a few running ones,
/// then prunes the finished ones as the coordinator does (`--retention`, `splice jobs prune`):
/// batches of `--batch` jobs a transaction, under a leadership epoch, through the fence. Prints
/// rows deleted a second and the longest single transaction — how long a batch holds its locks —
/// while a concurrent writer inserts a job every 20 ms and reports its slowest insert.
///
///     splice-bench prune [--jobs 100000] [--segments 4] [--events 10] [--batch 1000] [--fast]
enum PruneBenchmark {
    struct Options {
        var jobs = 100_000
        var segments = 4
        var events = 10
        var batch = 1000
        var fast = false

        init(_ arguments: [String]) throws {
            var iterator = arguments.makeIterator()
            while let argument = iterator.next() {
                func number() throws -> Int {
                    guard let text = iterator.next(), let value = Int(text), value > 0 else {
                        throw StoreBenchmark.BenchmarkError("\(argument) needs a positive number")
                    }
                    return value
                }
                switch argument {
                case "--jobs": jobs = try number()
                case "--segments": segments = try number()
                case "--events": events = try number()
                case "--batch": batch = try number()
                case "--fast": fast = true
                default: throw StoreBenchmark.BenchmarkError("unknown option \(argument)")
                }
            }
        }
    }

    static func run(_ arguments: [String]) async throws {
        let options = try Options(arguments)
        let directory = "/tmp/splice-bench-prune-pg-\(getpid())"
        var configuration = EmbeddedPostgres.Configuration(directory: directory)
        configuration.durability = options.fast ? .fastForTests : .durable
        let server = EmbeddedPostgres(configuration)
        try await server.start()
        do {
            try await measure(server: server, options: options)
        } catch {
            try? await server.stop()
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        try await server.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func measure(server: EmbeddedPostgres, options: Options) async throws {
        let database = try await server.createDatabase("bench")
        try await Migrator(configuration: database).migrate()
        let clock = ContinuousClock()

        // The finished jobs, 40 days old, in set-based statements (a tool's write: unfenced).
        let filling = clock.now
        try await PostgresConnection.withConnection(database.unfenced()) { connection in
            let jobs = Int32(options.jobs), segments = Int32(options.segments), events = Int32(options.events)
            try await connection.execute("""
                INSERT INTO jobs (idempotency_key, source_url, output_url, settings, plan, state, segments_total,
                                  segments_done, created_at, started_at, finished_at)
                SELECT 'old-' || n, 'file:///in.mov', 'file:///out-' || n || '.mp4', '{}', '{}', 'succeeded',
                       \(segments), \(segments), now() - interval '41 days', now() - interval '41 days',
                       now() - interval '40 days' - make_interval(secs => n)
                FROM generate_series(1, \(jobs)) AS n
                """)
            try await connection.execute("""
                INSERT INTO segments (job_id, index, range_start, range_end, range_timescale, priority, job_created_at,
                                      state, attempt, max_attempts, lease_token, output_url, checksum, finished_at)
                SELECT j.id, i, i * 90000, (i + 1) * 90000, 90000, 0, j.created_at, 'done', 1, 5, gen_random_uuid(),
                       'file:///spool/s', 'sha256:' || repeat('0', 64), j.finished_at
                FROM jobs j CROSS JOIN generate_series(0, \(segments) - 1) AS i
                """)
            try await connection.execute("""
                INSERT INTO job_events (job_id, kind, detail)
                SELECT j.id, 'segment_done', 'bench' FROM jobs j CROSS JOIN generate_series(1, \(events))
                """)
            // A few jobs still running, created long ago: they must stay.
            try await connection.execute("""
                INSERT INTO jobs (idempotency_key, source_url, output_url, settings, plan, state, segments_total,
                                  created_at, started_at)
                SELECT 'running-' || n, 'file:///in.mov', 'file:///out.mp4', '{}', '{}', 'running', 1,
                       now() - interval '60 days', now() - interval '60 days'
                FROM generate_series(1, 10) AS n
                """)
            try await connection.execute("VACUUM ANALYZE")
        }
        let filled = clock.now - filling
        let rows = options.jobs * (1 + options.segments + options.events)
        print("filled \(options.jobs) finished jobs, \(rows) rows in \(format(filled))")

        // Pruned as the active coordinator prunes: under the epoch it holds, through the fence.
        let epoch = try await PostgresConnection.withConnection(database) { connection in
            let lease = LeaderLease(candidate: .init(name: "splice-bench"), duration: .seconds(3600))
            guard case .acquired(let epoch, _, _, _) = try await lease.acquire(on: connection) else {
                throw StoreError(.fenced, "the bench database's leadership is held", isRetryable: false)
            }
            try await lease.fence(epoch: epoch, on: connection)
            return epoch
        }
        let repository = JobRepository(client: PostgresClient(configuration: database.fenced(epoch: epoch),
                                                              maxConnections: 4))
        // Meanwhile a coordinator's everyday write: a job submitted every 20 ms.
        let slowestInsert = LockedMax()
        let writer = Task {
            var index = 0
            while !Task.isCancelled {
                index += 1
                let started = clock.now
                _ = try? await repository.createJob(JobSubmission(
                    idempotencyKey: "during-\(index)", input: "file:///in.mov", output: "file:///out.mp4"))
                slowestInsert.record(clock.now - started)
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        let started = clock.now
        let report = try await repository.pruneJobs(finishedBefore: .seconds(30 * 86_400), batchSize: options.batch)
        let took = clock.now - started
        writer.cancel()
        _ = await writer.value
        let deleted = report.jobs.count + report.segments + report.events
        let running = try await repository.client.query("SELECT count(*) AS n FROM jobs WHERE state = 'running'")
            .first?.decode(Int64.self, column: "n") ?? 0
        print("pruned \(report.jobs.count) jobs, \(report.segments) segments, \(report.events) events "
              + "in \(report.transactions) transactions of \(options.batch) jobs: \(format(took))")
        let seconds = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
        print("rows deleted per second: \(Int(Double(deleted) / seconds))")
        print("longest single transaction: \(format(report.longestTransaction))")
        print("slowest job insert meanwhile: \(format(slowestInsert.value))")
        print("running jobs left: \(running) of 10")
        await repository.client.close()
    }

    private static func format(_ duration: Duration) -> String {
        "\(duration.wholeMilliseconds) ms"
    }

    /// The largest duration recorded, shared between tasks.
    final class LockedMax: @unchecked Sendable {
        private let lock = NSLock()
        private var largest: Duration = .zero
        func record(_ duration: Duration) { lock.withLock { largest = max(largest, duration) } }
        var value: Duration { lock.withLock { largest } }
    }
}
