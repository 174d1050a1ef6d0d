import Foundation
import SpliceFarmModel
import SpliceStore

/// `splice-bench farm --validate`: the model against a real job on a local cluster — `splice
/// coordinator` with its embedded PostgreSQL and `splice worker --slots 1 --codec-threads 1`
/// processes (``BenchCluster``, shared spool) — on the first `--seconds` of a real clip (the
/// shared media's 1080p30 H.264 asset, re-encoded with a keyframe every 2 s instead of its 8.33 s),
/// x264 medium CRF 23, 4 s segments.
///
/// The job runs on 2 workers. Its costs come from the run itself: the plan (job created → running
/// in `job_events`), each segment's encode on its slot (the worker's "segment started" → "segment
/// encoded" log lines), the dispatch latency (the median time a slot waits between one encode's
/// end and the next one's start) and the stitch (the last encode's end → the job succeeded). The
/// model then schedules those segments on W=2 (one slot, one core each), and does the same for the
/// job run again on one worker. What these test is the schedule — which slot runs what, the tail,
/// the serial plan and stitch — not the costs, which are each run's own. The 1-worker job is also
/// predicted from the 2-worker job's costs: on a machine of two cores shared with other work a
/// second worker slows the first, and that line shows by how much.
enum FarmValidation {
    static let clip = "/work/shared/media/h264_1080p30_362s_videoonly.mp4"
    static let flags = ["--video-codec", "h264", "--preset", "medium", "--crf", "23", "--segment-seconds", "4"]

    /// What one cluster job measured.
    struct Measured {
        var workers: Int
        var clientWall: UInt64
        var wallMicroseconds: Int64
        var planMicroseconds: Int64
        var encodes: [Int64]
        var gaps: [Int64]
        var stitchMicroseconds: Int64
        var latencyMicroseconds: Int64 { Stats.median(gaps) }
    }

    static func run(seconds: Int, runs: Int) async throws {
        let fm = FileManager.default
        let dir = fm.temporaryDirectory.appendingPathComponent("splice-bench-farm-\(getpid())")
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        let source = dir.appendingPathComponent("source.mp4").path
        if fm.fileExists(atPath: clip) {
            // Its keyframes are 8.33 s apart: re-encoded with one every 2 s, so 4 s segments cut where asked.
            print("the first \(seconds) s of \(clip), a keyframe every 2 s …")
            _ = try MeasuredProcess.run([
                "ffmpeg", "-y", "-i", clip, "-t", "\(seconds)", "-c:v", "libx264", "-preset", "veryfast",
                "-crf", "18", "-g", "60", "-sc_threshold", "0", "-pix_fmt", "yuv420p", source,
            ])
        } else {
            try BenchmarkClip.generate(seconds: seconds, at: source, keyframeInterval: 60)
        }
        let cluster = try BenchCluster(in: dir)
        var started = 0
        func job(workers: Int, run: Int) async throws -> Measured {
            try cluster.startWorkers(workers, storage: .spool)
            let logs = (started + 1...started + workers).map { dir.appendingPathComponent("bench-spool-\($0).log") }
            started += workers
            defer { cluster.stopWorkers() }
            let output = dir.appendingPathComponent("out-\(workers)-\(run).mp4").path
            let wall = try cluster.submit(source, to: output, flags: flags)
            try? fm.removeItem(atPath: output)
            return try await measure(
                workers: workers, clientWall: wall, logs: logs,
                database: dir.appendingPathComponent("state/postgres").path)
        }
        var lines: [String] = []
        do {
            for run in 1...runs {
                let two = try await job(workers: 2, run: run)
                let one = try await job(workers: 1, run: run)
                lines += try compare(two: two, one: one, run: run, of: runs)
            }
        } catch {
            cluster.stop()
            print("the processes' logs are in \(dir.path)")
            throw error
        }
        cluster.stop()
        try? fm.removeItem(at: dir)
        print("")
        print(
            "farm model against a local cluster: \(seconds) s of a real 1080p30 clip, x264 medium CRF 23, "
                + "4 s segments, workers of 1 slot × 1 thread, shared spool, "
                + "\(ProcessInfo.processInfo.activeProcessorCount) cores, "
                + "load \(TransferClusterBenchmark.loadAverage())")
        for line in lines { print(line) }
    }

    /// Each job's wall predicted from its own costs, and the 1-worker job's from the 2-worker job's.
    static func compare(two: Measured, one: Measured, run: Int, of runs: Int) throws -> [String] {
        func predict(_ workers: Int, from job: Measured) throws -> FarmPrediction {
            let costs = CoordinatorCosts(
                planMicroseconds: job.planMicroseconds, latencyMicroseconds: job.latencyMicroseconds,
                stitchMicroseconds: job.stitchMicroseconds)
            return try FarmSimulation.run(
                job.encodes.map { SegmentCost(encodeMicroseconds: $0) },
                on: try FarmShape(workers: workers, slotsPerWorker: 1, coresPerWorker: 1),
                coordinator: costs)
        }
        func error(_ predicted: Int64, _ measured: Int64) -> String {
            String(format: "%+.1f %%", Double(predicted - measured) * 100 / Double(max(1, measured)))
        }
        func costs(_ job: Measured) -> String {
            "plan \(FarmTime.text(job.planMicroseconds)), \(job.encodes.count) encodes of "
                + "\(FarmTime.text(job.encodes.min() ?? 0))–\(FarmTime.text(job.encodes.max() ?? 0)) "
                + "(\(FarmTime.text(job.encodes.reduce(0, +))) in all), "
                + "dispatch latency \(job.latencyMicroseconds / 1000) ms (median of \(job.gaps.count)), "
                + "stitch \(FarmTime.text(job.stitchMicroseconds))"
        }
        let (p2, p1) = (try predict(2, from: two), try predict(1, from: one))
        let cross = try predict(1, from: two)
        let alone = Double(one.encodes.reduce(0, +)) / Double(max(1, two.encodes.reduce(0, +)))
        return [
            "  run \(run)/\(runs)",
            "    W=2 costs: \(costs(two))",
            "    W=2: predicted \(FarmTime.text(p2.wallMicroseconds)), "
                + "measured \(FarmTime.text(two.wallMicroseconds)) "
                + "(client \(Stats.milliseconds(two.clientWall))): "
                + "\(error(p2.wallMicroseconds, two.wallMicroseconds)); "
                + "critical path \(FarmTime.text(p2.criticalPathMicroseconds)), "
                + "utilisation \(String(format: "%.2f", p2.utilisation))",
            "    W=1 costs: \(costs(one))",
            "    W=1: predicted \(FarmTime.text(p1.wallMicroseconds)), measured \(FarmTime.text(one.wallMicroseconds)) "
                + "(client \(Stats.milliseconds(one.clientWall))): \(error(p1.wallMicroseconds, one.wallMicroseconds))",
            "    W=1 from the W=2 job's costs: predicted \(FarmTime.text(cross.wallMicroseconds)): "
                + "\(error(cross.wallMicroseconds, one.wallMicroseconds)) — alone, the encodes took "
                + "\(String(format: "%.2f", alone))× "
                + "their time beside a second worker on these cores",
        ]
    }

    // MARK: - Reading a finished job

    static func measure(workers: Int, clientWall: UInt64, logs: [URL], database: String) async throws -> Measured {
        let client = PostgresClient(
            configuration: ConnectionConfiguration(
                socketDirectory: database, user: "splice",
                database: "splice"), maxConnections: 1)
        var events: [String: Int64] = [:]
        do {
            let rows = try await client.query(
                """
                SELECT kind, (extract(epoch FROM at) * 1000000)::bigint AS at FROM job_events
                WHERE segment_id IS NULL AND job_id = (SELECT id FROM jobs ORDER BY created_at DESC LIMIT 1) ORDER BY id
                """)
            for row in rows {
                let kind = try row.decode(String.self, column: "kind")
                if events[kind] == nil { events[kind] = try row.decode(Int64.self, column: "at") }
            }
        } catch {
            await client.close()
            throw error
        }
        await client.close()
        guard let created = events["job_created"], let running = events["job_running"],
            let finished = events["job_succeeded"] ?? events["job_completed"]
        else { throw BenchmarkUsageError("the job's events lack created/running/succeeded: \(events.keys.sorted())") }

        var encodes: [Int64] = []
        var gaps: [Int64] = []
        var lastEnd: Int64 = 0
        for log in logs {
            var previousEnd = running
            var start: Int64?
            let text = try String(contentsOf: log, encoding: .utf8)
            for line in text.split(separator: "\n") {
                guard let at = timestamp(line) else { continue }
                if line.contains("msg=\"segment started\"") {
                    start = at
                    gaps.append(at - previousEnd)
                } else if line.contains("msg=\"segment encoded\""), let begun = start {
                    encodes.append(at - begun)
                    previousEnd = at
                    lastEnd = max(lastEnd, at)
                    start = nil
                }
            }
        }
        guard !encodes.isEmpty else { throw BenchmarkUsageError("no encodes in the worker logs \(logs.map(\.path))") }
        return Measured(
            workers: workers, clientWall: clientWall, wallMicroseconds: finished - created,
            planMicroseconds: running - created, encodes: encodes, gaps: gaps,
            stitchMicroseconds: finished - lastEnd)
    }

    /// The `ts=…Z` of a log line, µs since 1970.
    static func timestamp(_ line: Substring) -> Int64? {
        guard let range = line.range(of: "ts=") else { return nil }
        let text = line[range.upperBound...].prefix { $0 != " " }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = formatter.date(from: String(text)) else { return nil }
        return Int64((date.timeIntervalSince1970 * 1000).rounded()) * 1000
    }
}
