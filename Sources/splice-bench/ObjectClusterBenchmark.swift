import Foundation
import SpliceObjectStore

/// `splice-bench s3 --cluster`: the same cluster job from and to `s3://` (moto on loopback,
/// authentication on) and from and to local files, on one ``BenchCluster`` whose coordinator
/// holds the emulator's credentials, with two 1-slot workers sharing its spool (they hold none:
/// for an object source the coordinator cuts their excerpts, and it writes the output). The
/// modes alternate run by run after a warm-up on files. Prints each run, both medians, the ratio
/// of the medians (issue 28 targets ≤ 1.10) and the median of each run's own ratio.
///
///     splice-bench s3 --cluster [--runs 3] [--seconds 30] [--preset veryfast]
///
/// The job: a generated 640×360 30 fps H.264 + AAC clip with a keyframe every 2 s,
/// `--segment-seconds 4`, libx264 at the preset, CRF 23, AAC 128k, into an MP4.
enum ObjectClusterBenchmark {
    enum Mode: String { case files, objects }

    static func run(_ arguments: [String]) async throws {
        let options = try ClusterJobOptions(parsing: arguments, seconds: 30, command: "s3 --cluster")
        let (dir, source) = try options.prepare("splice-bench-s3-cluster")
        let (runs, flags, seconds, preset) = (options.runs, options.flags, options.seconds, options.preset)

        let emulator = try S3BenchEmulator()
        let bucket = "splice-bench-cluster-\(getpid())"
        try emulator.createBucket(bucket)
        let store = try ObjectStore(configuration: ObjectStoreConfiguration(
            credentials: ObjectStoreCredentials(accessKeyID: emulator.accessKeyID, secretAccessKey: emulator.secretAccessKey),
            endpoint: emulator.endpoint))
        try await store.upload(file: source, to: ObjectLocation(bucket: bucket, key: "source.mp4"), overwrite: true,
                               contentType: "video/mp4")
        let environment = ["AWS_ACCESS_KEY_ID": emulator.accessKeyID, "AWS_SECRET_ACCESS_KEY": emulator.secretAccessKey,
                           "AWS_ENDPOINT_URL": emulator.endpoint, "AWS_REGION": "us-east-1"]

        let cluster = try BenchCluster(in: dir, coordinatorEnvironment: environment)
        var emulatorCPU: [Int64] = []
        func measure(_ mode: Mode, run: Int) throws -> UInt64 {
            let output = mode == .files ? dir.appendingPathComponent("run-\(run).mp4").path : "s3://\(bucket)/run-\(run).mp4"
            let input = mode == .files ? source : "s3://\(bucket)/source.mp4"
            let before = emulator.cpuMicroseconds
            let wall = try cluster.submit(input, to: output, flags: flags)
            let spent = emulator.cpuMicroseconds - before
            if mode == .objects && run > 0 { emulatorCPU.append(spent) }
            print("\(run == 0 ? "warm-up" : "run \(run)/\(runs)") \(mode.rawValue): \(Stats.milliseconds(wall))"
                  + (mode == .objects ? ", the emulator's CPU \(spent / 1000) ms" : ""))
            if mode == .files { try? FileManager.default.removeItem(atPath: output) }
            return wall
        }
        var walls: [Mode: [UInt64]] = [:]
        do {
            try cluster.startWorkers(2, storage: .spool)
            _ = try measure(.files, run: 0)
            for run in 1...runs {
                for mode in run % 2 == 1 ? [Mode.objects, .files] : [.files, .objects] {
                    walls[mode, default: []].append(try measure(mode, run: run))
                }
            }
        } catch {
            cluster.stop()
            print("the processes' logs are in \(dir.path)")
            throw error
        }
        cluster.stop()
        try? FileManager.default.removeItem(at: dir)
        let files = walls[.files] ?? [], objects = walls[.objects] ?? []
        print("")
        print("a cluster job between buckets against the same job on files: \(seconds) s 640x360 h264 + aac, 4 s segments, "
              + "preset \(preset), 2 shared-spool workers × 1 slot, moto on loopback, \(runs) alternated runs each, "
              + "\(ProcessInfo.processInfo.activeProcessorCount) cores, load \(TransferClusterBenchmark.loadAverage()) "
              + "(shared with other work: a floor)")
        for (name, values) in [("files  ", files), ("s3://  ", objects)] {
            print("  \(name)  median \(Stats.milliseconds(Stats.median(values)))  (min \(Stats.milliseconds(values.min() ?? 0)), "
                  + "max \(Stats.milliseconds(values.max() ?? 0)))")
        }
        print("  ratio s3 / files  \(Stats.ratio(Stats.median(objects), Stats.median(files)))  (target ≤ 1.10)")
        // A real service does its work on machines of its own: the emulator's CPU, taken from the
        // same two cores as the encodes, is a cost of this bench rather than of Splice.
        let emulated = Stats.median(emulatorCPU)
        print("  the emulator's CPU per s3:// job  median \(emulated / 1000) ms (moto, in Python, on the same "
              + "\(ProcessInfo.processInfo.activeProcessorCount) cores)")
        let pairs = zip(objects, files).map { Int64($0) * 1000 / Int64(max(1, $1)) }
        print("  each run's ratio  median \(Stats.ratio(Stats.median(pairs), 1000))  (min \(Stats.ratio(pairs.min() ?? 0, 1000)), "
              + "max \(Stats.ratio(pairs.max() ?? 0, 1000)))")
    }
}
