import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceStore

/// `splice-bench store`: segment lifecycles (claim + complete) per second against a private
/// embedded PostgreSQL, with latency percentiles. Every commit is durable unless `--fast`.
///
///     splice-bench store [--segments 20000] [--jobs 8] [--connections 8] [--batch 16] [--fast]
enum StoreBenchmark {
    struct Options {
        var segments = 20_000
        var jobs = 8
        var connections = 8
        var batch = 16
        var fast = false

        init(_ arguments: [String]) throws {
            var iterator = arguments.makeIterator()
            while let argument = iterator.next() {
                func number() throws -> Int {
                    guard let text = iterator.next(), let value = Int(text), value > 0 else {
                        throw BenchmarkError("\(argument) needs a positive number")
                    }
                    return value
                }
                switch argument {
                case "--segments": segments = try number()
                case "--jobs": jobs = try number()
                case "--connections": connections = try number()
                case "--batch": batch = try number()
                case "--fast": fast = true
                default: throw BenchmarkError("unknown option \(argument)")
                }
            }
        }
    }

    struct BenchmarkError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Latencies of one worker loop, in microseconds.
    struct Samples: Sendable {
        var claims: [Int] = []
        var completes: [Int] = []
        var lifecycles: [Int] = []
    }

    /// What every benchmarked completion records: the store does not look at it.
    static let checksum = SHA256Digest(bytes: [UInt8](repeating: 0, count: 32))!
    /// The figures a video segment's COMPLETE carries, written with every result as they are in a real job.
    static let figures = SegmentFigures(videoBytes: 1_250_000, videoBitsPerSecond: 1_000_000, meanQP: 27.43)

    static func run(_ arguments: [String]) async throws {
        let options = try Options(arguments)
        let directory = "/tmp/splice-bench-pg-\(getpid())"
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
        // Written as the active coordinator writes: under the epoch it holds, through the fence.
        let epoch = try await PostgresConnection.withConnection(database) { connection in
            let lease = LeaderLease(candidate: .init(name: "splice-bench"), duration: .seconds(3600))
            guard case .acquired(let epoch, _, _, _) = try await lease.acquire(on: connection) else {
                throw StoreError(.fenced, "the bench database's leadership is held", isRetryable: false)
            }
            try await lease.fence(epoch: epoch, on: connection)
            return epoch
        }
        let repository = JobRepository(client: PostgresClient(configuration: database.fenced(epoch: epoch),
                                                              maxConnections: options.connections))
        let perJob = options.segments / options.jobs
        for job in 0..<options.jobs {
            let created = try await repository.createJob(JobSubmission(
                idempotencyKey: "bench-\(job)", input: "file:///in.mov", output: "file:///out.mp4"))
            try await repository.startPlanning(jobID: created.job.id)
            let plan = (0..<perJob).map {
                PlannedSegment(index: $0, rangeStart: Int64($0) * 900_000, rangeEnd: Int64($0 + 1) * 900_000,
                            timescale: 90_000)
            }
            try await repository.recordPlan(jobID: created.job.id, plan: .emptyObject, segments: plan)
        }
        var workers: [UUID] = []
        for index in 0..<options.connections {
            workers.append(try await repository.enrollWorker(publicKey: "bench-\(index)", name: "bench-\(index)",
                                                             slots: options.batch).id)
        }

        let clock = ContinuousClock()
        let start = clock.now
        let samples = try await withThrowingTaskGroup(of: Samples.self) { group in
            for worker in workers {
                group.addTask { try await workerLoop(repository: repository, worker: worker, batch: options.batch) }
            }
            return try await group.reduce(into: Samples()) { total, part in
                total.claims += part.claims
                total.completes += part.completes
                total.lifecycles += part.lifecycles
            }
        }
        let elapsed = clock.now - start
        let seconds = elapsed / .seconds(1)
        let count = samples.completes.count
        let stitching = try await repository.jobs(in: [.stitching]).count
        print("""
            splice-bench store: \(count) segment lifecycles (claim + complete) in \(String(format: "%.2f", seconds)) s
              durability: \(options.fast ? "fsync off (--fast)" : "full (fsync on every commit)")
              jobs: \(options.jobs) (\(stitching) reached stitching), concurrent workers/connections: \
            \(options.connections), claim batch: \(options.batch)
              throughput: \(String(format: "%.0f", Double(count) / seconds)) lifecycles/s
              claim (batch of up to \(options.batch)): \(percentiles(samples.claims))
              complete:   \(percentiles(samples.completes))
              lifecycle (claim start → its complete committed): \(percentiles(samples.lifecycles))
            """)
    }

    private static func workerLoop(repository: JobRepository, worker: UUID, batch: Int) async throws -> Samples {
        let clock = ContinuousClock()
        var samples = Samples()
        while true {
            let claimStart = clock.now
            let leases = try await repository.claimSegments(for: worker, limit: batch, leaseDuration: .seconds(60))
            samples.claims.append((clock.now - claimStart).wholeMicroseconds)
            if leases.isEmpty { return samples }
            for lease in leases {
                let completeStart = clock.now
                let outcome = try await repository.completeSegment(lease.reference, outputPath: "file:///seg",
                                                                   checksum: Self.checksum, figures: Self.figures)
                guard case .completed = outcome else { throw BenchmarkError("complete was refused: \(outcome)") }
                let end = clock.now
                samples.completes.append((end - completeStart).wholeMicroseconds)
                samples.lifecycles.append((end - claimStart).wholeMicroseconds)
            }
        }
    }

    private static func percentiles(_ values: [Int]) -> String {
        guard !values.isEmpty else { return "no samples" }
        let sorted = values.sorted()
        func at(_ fraction: Double) -> String {
            let value = sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
            return String(format: "%.2f ms", Double(value) / 1000)
        }
        return "p50 \(at(0.50))  p99 \(at(0.99))  (n=\(values.count))"
    }
}
