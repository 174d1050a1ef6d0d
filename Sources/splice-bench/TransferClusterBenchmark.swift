import Foundation

/// `splice-bench transfer --cluster`: the same cluster job with two 1-slot workers in transfer
/// mode (no shared storage: excerpts and results over the data endpoint) and sharing the
/// coordinator's spool, on one ``BenchCluster``, the modes alternated run by run (each run with
/// two freshly started workers of its mode; the first, shared-spool run is a warm-up and not
/// counted). Prints each run, both medians, the ratio of the medians (issue 14 targets ≤ 1.10) and
/// the median of each run's own ratio.
///
///     splice-bench transfer --cluster [--runs 3] [--preset veryfast] [--seconds 60]
///
/// The job: a generated 640×360 30 fps H.264 + AAC clip with a keyframe every 2 s, `--segment-seconds 4`,
/// libx264 at the preset, CRF 23, AAC 128k. Both modes run on this machine, so transfer mode's
/// copies cost CPU here rather than network; the figure is this host's, not a LAN's.
enum TransferClusterBenchmark {
    static func run(_ arguments: [String]) throws {
        let options = try ClusterJobOptions(parsing: arguments, seconds: 60, command: "transfer --cluster")
        let (dir, source) = try options.prepare("splice-bench-transfer-cluster")
        let (runs, flags, seconds, preset) = (options.runs, options.flags, options.seconds, options.preset)

        let cluster = try BenchCluster(in: dir)
        func measure(_ storage: BenchCluster.Storage, run: Int) throws -> UInt64 {
            try cluster.startWorkers(2, storage: storage)
            defer { cluster.stopWorkers() }
            let output = dir.appendingPathComponent("run-\(run)-\(storage.rawValue).mp4").path
            let wall = try cluster.submit(source, to: output, flags: flags)
            print("\(run == 0 ? "warm-up" : "run \(run)/\(runs)") \(storage.rawValue): \(Stats.milliseconds(wall))")
            try? FileManager.default.removeItem(atPath: output)
            return wall
        }
        var walls: [BenchCluster.Storage: [UInt64]] = [:]
        do {
            _ = try measure(.spool, run: 0)
            for run in 1...runs {
                for storage in run % 2 == 1 ? [BenchCluster.Storage.transfer, .spool] : [.spool, .transfer] {
                    walls[storage, default: []].append(try measure(storage, run: run))
                }
            }
        } catch {
            cluster.stop()
            print("the processes' logs are in \(dir.path)")
            throw error
        }
        cluster.stop()
        try? FileManager.default.removeItem(at: dir)
        let spool = walls[.spool] ?? [], transfer = walls[.transfer] ?? []
        print("")
        print("transfer mode against the shared spool: \(seconds) s 640x360 h264 + aac, 4 s segments, preset \(preset), "
              + "2 workers × 1 slot, \(runs) alternated runs each, \(ProcessInfo.processInfo.activeProcessorCount) cores, "
              + "load \(loadAverage()) (shared with other work: a floor)")
        for (name, values) in [("shared spool", spool), ("transfer    ", transfer)] {
            print("  \(name)  median \(Stats.milliseconds(Stats.median(values)))  (min \(Stats.milliseconds(values.min() ?? 0)), "
                  + "max \(Stats.milliseconds(values.max() ?? 0)))")
        }
        print("  ratio transfer / spool  \(Stats.ratio(Stats.median(transfer), Stats.median(spool)))  (target ≤ 1.10)")
        // Each run's two jobs ran back to back, so their ratio is less exposed to the machine's
        // load drifting over the whole benchmark than the ratio of the medians.
        let pairs = zip(transfer, spool).map { Int64($0) * 1000 / Int64(max(1, $1)) }
        print("  each run's ratio        median \(Stats.ratio(Stats.median(pairs), 1000))  (min \(Stats.ratio(pairs.min() ?? 0, 1000)), "
              + "max \(Stats.ratio(pairs.max() ?? 0, 1000)))")
    }

    /// The 1-minute load average (`/proc/loadavg`), as text.
    static func loadAverage() -> String {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "?"
    }
}
