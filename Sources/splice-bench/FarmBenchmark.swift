import Foundation
import SpliceFarmModel

/// `splice-bench farm`: what a job would take on a farm beyond this machine — W workers × S slots ×
/// C cores — from ``FarmSimulation`` fed by measured costs: per-segment encode CPU fitted to
/// `splice transcode --json` summaries (a fixed cost per segment plus a cost per frame, from
/// segments of at least two lengths), the coordinator's dispatch and PostgreSQL time per segment,
/// the dispatch latency, the data link's and the stitch's MB/s. For each farm size it sweeps the
/// slots per worker and the segment length and prints the fastest, with its critical path,
/// utilisation and speed-up over one FFmpeg on one worker's cores; then the farm size at which each
/// of the coordinator's resources would become the limit.
///
///     splice-bench farm [--workers 1,4,16,64] [--slots auto|S] [--cores 16] [--film-seconds 7200] [--fps 24]
///                       [--segment-seconds auto|N] [--costs A.json,B.json | --calibrate [--keep-costs DIR]]
///                       [--costs-size 1920x1080]
///                       [--film-size 1920x1080] [--parallel-fraction 0.947] [--dispatch-us 300] [--database-us 280]
///                       [--latency-ms 10] [--transfer-mbps 220|spool] [--source-mbps 20] [--stitch-mbps N]
///                       [--plan-ms N] [--segment-fixed-ms N]
///     splice-bench farm --validate [--seconds 60] [--runs 1]
///
/// `--calibrate` measures here (``FarmCalibration``): x264 medium CRF 23 on a generated 1080p 24 fps
/// clip at three segment lengths, the stitch, and the planning of a two-hour 24 fps MP4.
/// `--validate` runs a real job on a local cluster (``FarmValidation``).
enum FarmBenchmark {
    static let usage = """
        usage: splice-bench farm [--workers 1,4,16,64] [--slots auto|S] [--cores C] [--film-seconds N] [--fps N]
                                 [--segment-seconds auto|N] (--costs A.json,B.json | --calibrate [--keep-costs DIR])
                                 [--costs-size WxH] [--film-size WxH] [--parallel-fraction P] [--dispatch-us N]
                                 [--database-us N] [--latency-ms N] [--transfer-mbps N|spool] [--source-mbps N]
                                 [--stitch-mbps N] [--plan-ms N] [--segment-fixed-ms N]
               splice-bench farm --validate [--seconds N] [--runs N]
        """

    struct Options {
        var workers = [1, 4, 16, 64]
        /// Nil: every power of two up to the cores.
        var slots: Int?
        var cores = 16
        var filmSeconds = 7200
        var fps = 24
        /// Nil: the model chooses.
        var segmentSeconds: Int?
        var costs: [String] = []
        var calibrate = false
        /// Where `--calibrate` copies its summaries, to be given to `--costs` later.
        var keepCosts: String?
        var costsPixels = 1920 * 1080
        var filmPixels = 1920 * 1080
        /// x264 keeps ~1.9 of 2 cores busy in one FFmpeg here (issue 26): p = 2 × (1 − 1 / 1.9).
        var parallelFraction = 0.947
        /// docs/coordinator.md, Dispatch at farm scale: the coordinator's CPU per segment, quiet machine.
        var dispatchMicroseconds: Int64 = 300
        /// The same: PostgreSQL's CPU per segment at 16 workers (small batches; 105–117 µs at 256).
        var databaseMicroseconds: Int64 = 280
        var latencyMicroseconds: Int64 = 10_000
        /// docs/deploy.md: transfers with CURVE on, ~220–230 MB/s. Nil: a shared spool.
        var transferBytesPerSecond: Int64? = 220_000_000
        var sourceBitsPerSecond: Int64 = 20_000_000
        var stitchBytesPerSecond: Int64?
        var planMicroseconds: Int64?
        /// Replaces the fitted fixed cost per segment (to see how the best length moves with it).
        var segmentFixedMicroseconds: Int64?
        var validate = false
        var validateSeconds = 60
        var runs = 1

        init(_ arguments: [String]) throws {
            var words = arguments[...]
            while let word = words.popFirst() {
                func value() throws -> String {
                    guard let text = words.popFirst() else {
                        throw BenchmarkUsageError("\(word) needs a value\n\(usage)")
                    }
                    return text
                }
                func number(_ minimum: Int = 1) throws -> Int {
                    let text = try value()
                    guard let number = Int(text), number >= minimum else {
                        throw BenchmarkUsageError("\(word) needs a whole number of at least \(minimum); got \(text)")
                    }
                    return number
                }
                func pixels() throws -> Int {
                    let text = try value()
                    let parts = text.split(separator: "x").compactMap { Int($0) }
                    guard parts.count == 2, parts.allSatisfy({ $0 > 0 }) else {
                        throw BenchmarkUsageError("\(word) takes a size like 1920x1080; got \(text)")
                    }
                    return parts[0] * parts[1]
                }
                switch word {
                case "--workers":
                    let text = try value()
                    workers = try text.split(separator: ",").map { part in
                        guard let count = Int(part), count > 0 else {
                            throw BenchmarkUsageError("--workers takes counts like 1,4,16,64; got \(text)")
                        }
                        return count
                    }
                case "--slots":
                    if words.first == "auto" {
                        _ = words.popFirst()
                        slots = nil
                    } else {
                        slots = try number()
                    }
                case "--cores": cores = try number()
                case "--film-seconds": filmSeconds = try number()
                case "--fps": fps = try number()
                case "--segment-seconds":
                    if words.first == "auto" {
                        _ = words.popFirst()
                        segmentSeconds = nil
                    } else {
                        segmentSeconds = try number()
                    }
                case "--costs": costs = try value().split(separator: ",").map(String.init)
                case "--calibrate": calibrate = true
                case "--keep-costs": keepCosts = try value()
                case "--costs-size": costsPixels = try pixels()
                case "--film-size": filmPixels = try pixels()
                case "--parallel-fraction":
                    let text = try value()
                    guard let p = Double(text), p >= 0, p <= 1 else {
                        throw BenchmarkUsageError("--parallel-fraction is from 0 to 1; got \(text)")
                    }
                    parallelFraction = p
                case "--dispatch-us": dispatchMicroseconds = Int64(try number(0))
                case "--database-us": databaseMicroseconds = Int64(try number(0))
                case "--latency-ms": latencyMicroseconds = Int64(try number(0)) * 1000
                case "--transfer-mbps":
                    if words.first == "spool" {
                        _ = words.popFirst()
                        transferBytesPerSecond = nil
                    } else {
                        transferBytesPerSecond = Int64(try number()) * 1_000_000
                    }
                case "--source-mbps": sourceBitsPerSecond = Int64(try number(0)) * 1_000_000
                case "--stitch-mbps": stitchBytesPerSecond = Int64(try number()) * 1_000_000
                case "--plan-ms": planMicroseconds = Int64(try number(0)) * 1000
                case "--segment-fixed-ms": segmentFixedMicroseconds = Int64(try number(0)) * 1000
                case "--validate": validate = true
                case "--seconds": validateSeconds = try number(8)
                case "--runs": runs = try number()
                case "--help", "-h": throw BenchmarkUsageError(usage)
                default: throw BenchmarkUsageError("unknown option \(word) for farm\n\(usage)")
                }
            }
            if let slots, slots > cores {
                throw BenchmarkUsageError("--slots \(slots) is more than --cores \(cores): a slot needs a core")
            }
            if !validate && costs.isEmpty && !calibrate {
                throw BenchmarkUsageError(
                    "farm needs costs: --costs A.json,B.json (splice transcode --json summaries "
                        + "at two segment lengths) or --calibrate to measure them here\n\(usage)")
            }
        }
    }

    static func run(_ arguments: [String]) async throws {
        let options = try Options(arguments)
        if options.validate {
            try await FarmValidation.run(seconds: options.validateSeconds, runs: options.runs)
            return
        }
        var costs = options.costs
        var planMicroseconds = options.planMicroseconds
        var stitchRate = options.stitchBytesPerSecond
        var calibration: FarmCalibration?
        if options.calibrate {
            let measured = try FarmCalibration.measure(filmSeconds: options.filmSeconds, fps: options.fps)
            costs = measured.summaries
            planMicroseconds = planMicroseconds ?? measured.filmPlanMicroseconds
            stitchRate = stitchRate ?? measured.stitchBytesPerSecond
            calibration = measured
            if let keep = options.keepCosts {
                try FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
                costs = try costs.map { file in
                    let kept = keep + "/" + URL(fileURLWithPath: file).lastPathComponent
                    try? FileManager.default.removeItem(atPath: kept)
                    try FileManager.default.copyItem(atPath: file, toPath: kept)
                    return kept
                }
                print(
                    "kept: --costs \(costs.joined(separator: ",")) --plan-ms \((planMicroseconds ?? 0) / 1000) "
                        + "--stitch-mbps \((stitchRate ?? 0) / 1_000_000)")
            }
        }
        defer { calibration?.remove() }
        let measured = try TranscodeCosts(files: costs)
        try report(options, measured: measured, planMicroseconds: planMicroseconds, stitchBytesPerSecond: stitchRate)
    }

    // MARK: - The table

    static let candidateSeconds = [
        1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 45, 60, 90, 120, 180, 240, 300, 450, 600, 900, 1200,
    ]

    private static func report(
        _ options: Options, measured: TranscodeCosts, planMicroseconds: Int64?,
        stitchBytesPerSecond: Int64?
    ) throws {
        var fitted = try SegmentCostModel.fit(measured.samples)
        if let fixed = options.segmentFixedMicroseconds { fitted.fixedMicroseconds = fixed }
        let model = fitted.scaled(pixelsFrom: options.costsPixels, to: options.filmPixels)
        let scaling = try EncoderScaling(parallelFraction: options.parallelFraction)
        let sourceBytesPerFrame = options.sourceBitsPerSecond / 8 / Int64(options.fps)
        let film = try FilmJob(
            seconds: options.filmSeconds, framesPerSecond: options.fps,
            sourceBytesPerFrame: options.transferBytesPerSecond == nil ? 0 : sourceBytesPerFrame)
        let stitchRate = stitchBytesPerSecond ?? measured.stitchBytesPerSecond
        // Without a measured plan of the film: the costs' own plan scaled by frames (an upper bound:
        // its fixed costs are scaled too).
        let plan = planMicroseconds ?? measured.planMicroseconds * Int64(film.frames) / Int64(max(1, measured.frames))
        let coordinator = CoordinatorCosts(
            planMicroseconds: plan, dispatchMicroseconds: options.dispatchMicroseconds,
            databaseMicroseconds: options.databaseMicroseconds, latencyMicroseconds: options.latencyMicroseconds,
            transferBytesPerSecond: options.transferBytesPerSecond, stitchMicroseconds: 0,
            stitchBytesPerSecond: stitchRate)

        func decimals(_ value: Double, _ places: Int = 2) -> String { String(format: "%.\(places)f", value) }
        let fixedSource = options.segmentFixedMicroseconds == nil ? "fitted" : "--segment-fixed-ms"
        let link = options.transferBytesPerSecond.map {
            "data link \($0 / 1_000_000) MB/s each way (source \(options.sourceBitsPerSecond / 1_000_000) Mbit/s)"
        }
        print("")
        print("farm model: a \(options.filmSeconds) s film at \(options.fps) fps (\(film.frames) frames), "
              + "workers of \(options.cores) cores")
        print("  costs: \(measured.samples.count) measured segments from \(measured.files.joined(separator: ", "))")
        print("  encode CPU on one thread: \(fitted.fixedMicroseconds / 1000) ms per segment (\(fixedSource)) + "
              + "\(decimals(Double(fitted.perFrameNanoseconds) / 1_000_000)) ms per frame as measured; "
              + "\(decimals(Double(model.perFrameNanoseconds) / 1_000_000)) ms per frame at the film's size "
              + "(pixels \(options.filmPixels) / \(options.costsPixels)); "
              + "\(model.outputBytesPerFrame) output bytes per frame")
        print("  threads: Amdahl, parallel fraction \(options.parallelFraction): speed-up "
              + [2, 4, 16].map { "\(decimals(scaling.speedUp(threads: $0))) on \($0)" }.joined(separator: ", ")
              + " threads")
        print("  coordinator: plan \(FarmTime.text(plan)), \(options.dispatchMicroseconds) µs coordinator and "
              + "\(options.databaseMicroseconds) µs PostgreSQL per segment, "
              + "latency \(options.latencyMicroseconds / 1000) ms, "
              + "\(link ?? "shared spool (no copies)"), stitch \(stitchRate / 1_000_000) MB/s")
        let single = film.singleEncoderMicroseconds(model: model, scaling: scaling, threads: options.cores)
        print("  one FFmpeg on \(options.cores) cores: \(FarmTime.text(single))\n")
        print("  workers  slots×threads  segment  within 2 %  segments  wall        critical path  utilisation  "
              + "speed-up  coordinator load")
        let slotChoices =
            options.slots.map { [$0] } ?? Array(sequence(first: 1) { $0 * 2 }.prefix { $0 <= options.cores })
        let lengths = options.segmentSeconds.map { [$0] } ?? candidateSeconds.filter { $0 <= options.filmSeconds }
        var largest: (shape: FarmShape, seconds: Int, prediction: FarmPrediction)?
        for workers in options.workers {
            var best: (shape: FarmShape, seconds: Int, prediction: FarmPrediction)?
            for slots in slotChoices {
                let shape = try FarmShape(workers: workers, slotsPerWorker: slots, coresPerWorker: options.cores)
                let found = try film.bestSegmentLength(
                    candidates: lengths, shape: shape, model: model, scaling: scaling,
                    coordinator: coordinator)
                if best.map({ found.prediction.wallMicroseconds < $0.prediction.wallMicroseconds }) ?? true {
                    best = (shape, found.segmentSeconds, found.prediction)
                }
            }
            guard let best else { continue }
            let p = best.prediction
            // The range of lengths within 2 % of the best wall at the same slots: how flat the optimum is.
            let near = try lengths.filter { seconds in
                let segments = try film.segments(
                    segmentSeconds: seconds, model: model, scaling: scaling,
                    threads: best.shape.threadsPerSlot)
                let wall = try FarmSimulation.run(segments, on: best.shape, coordinator: coordinator).wallMicroseconds
                return wall * 100 <= p.wallMicroseconds * 102
            }
            print(
                "  "
                    + [
                        pad("\(workers)", 7), pad("\(best.shape.slotsPerWorker)×\(best.shape.threadsPerSlot)", 13),
                        pad("\(best.seconds) s", 7),
                        pad("\(near.min() ?? best.seconds)–\(near.max() ?? best.seconds) s", 10),
                        pad("\(p.schedule.count)", 8), pad(FarmTime.text(p.wallMicroseconds), 10),
                        pad(FarmTime.text(p.criticalPathMicroseconds), 13),
                        pad(String(format: "%.2f", p.utilisation), 11),
                        pad(String(format: "%.1f×", Double(single) / Double(p.wallMicroseconds)), 8),
                        String(format: "%.4f", p.coordinatorLoad),
                    ].joined(separator: "  "))
            if largest.map({ workers > $0.shape.workers }) ?? true { largest = best }
        }
        if let largest { printLimits(largest, film: film, coordinator: coordinator, model: model, scaling: scaling) }
    }

    /// The farm size at which each of the coordinator's serial resources would take longer than the
    /// segments' encodes they serve, at the largest farm's slots and segment length.
    private static func printLimits(
        _ chosen: (shape: FarmShape, seconds: Int, prediction: FarmPrediction), film: FilmJob,
        coordinator: CoordinatorCosts, model: SegmentCostModel, scaling: EncoderScaling
    ) {
        let segments =
            (try? film.segments(
                segmentSeconds: chosen.seconds, model: model, scaling: scaling,
                threads: chosen.shape.threadsPerSlot)) ?? []
        guard !segments.isEmpty else { return }
        let count = Int64(segments.count)
        let encode = segments.reduce(Int64(0)) { $0 + $1.encodeMicroseconds }
        let slotTime = encode / count + coordinator.latencyMicroseconds
        let slots = Int64(chosen.shape.slotsPerWorker)
        // A worker asks for slots ÷ slotTime segments a second; a serial resource taking `cost` µs
        // per segment serves 1 ÷ cost: it binds at W = slotTime ÷ (slots × cost).
        func workers(perSegment cost: Int64) -> String {
            cost > 0 ? "\(slotTime / (slots * cost))" : "never"
        }
        let linkPerSegment =
            segments.reduce(Int64(0)) {
                $0
                    + max(
                        coordinator.transferMicroseconds(bytes: $1.inputBytes),
                        coordinator.transferMicroseconds(bytes: $1.outputBytes))
            } / count
        let stitch = chosen.prediction.stitchMicroseconds
        let link =
            coordinator.transferBytesPerSecond == nil
            ? "none (shared storage)"
            : "\(linkPerSegment / 1000) ms per segment the busier way: \(workers(perSegment: linkPerSegment)) workers"
        let plan = chosen.prediction.planMicroseconds
        print("")
        print("where the coordinator becomes the limit (\(chosen.shape.slotsPerWorker) slots of "
              + "\(chosen.shape.threadsPerSlot) threads, \(chosen.seconds) s segments: "
              + "\(FarmTime.text(slotTime)) of slot time each):")
        print("  dispatch (\(coordinator.dispatchMicroseconds) µs per segment, "
              + "\(1_000_000 / max(1, coordinator.dispatchMicroseconds)) segments/s): "
              + "\(workers(perSegment: coordinator.dispatchMicroseconds)) workers")
        print("  PostgreSQL writes (\(coordinator.databaseMicroseconds) µs per segment): "
              + "\(workers(perSegment: coordinator.databaseMicroseconds)) workers")
        print("  data link: \(link)")
        print("  stitch (\(FarmTime.text(stitch)), serial after the last segment): as long as the encodes at "
              + "\(stitch > 0 ? "\(encode / (slots * stitch))" : "never") workers; plan (\(FarmTime.text(plan))): "
              + "\(plan > 0 ? "\(encode / (slots * plan))" : "never") workers")
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}

/// What `splice transcode --json` summaries measured: every video segment's frames, CPU and bytes,
/// and the plan's and the stitch's times.
struct TranscodeCosts {
    var files: [String]
    var samples: [SegmentCostModel.Sample] = []
    var planMicroseconds: Int64 = 0
    var frames = 0
    var stitchBytes: Int64 = 0
    var stitchMicroseconds: Int64 = 0

    init(files: [String]) throws {
        self.files = files
        for file in files {
            guard let data = FileManager.default.contents(atPath: file),
                let summary = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
                let segments = summary["segments"] as? [[String: Any]]
            else { throw BenchmarkUsageError("\(file) is not a `splice transcode --json` summary (no \"segments\")") }
            var fileFrames = 0
            for segment in segments {
                guard let frames = (segment["videoFrames"] as? NSNumber)?.intValue, frames > 0,
                    let cpu = (segment["cpuMicroseconds"] as? NSNumber)?.int64Value
                else { continue }
                let bytes = (segment["bytes"] as? NSNumber)?.int64Value ?? 0
                samples.append(SegmentCostModel.Sample(frames: frames, cpuMicroseconds: cpu, bytes: bytes))
                fileFrames += frames
            }
            // Plan and stitch from the run with the most frames: their fixed costs weigh least there.
            if fileFrames > frames {
                frames = fileFrames
                planMicroseconds = ((summary["planNanoseconds"] as? NSNumber)?.int64Value ?? 0) / 1000
                stitchMicroseconds = ((summary["stitchNanoseconds"] as? NSNumber)?.int64Value ?? 0) / 1000
                stitchBytes = ((summary["stitch"] as? [String: Any])?["bytes"] as? NSNumber)?.int64Value ?? 0
            }
        }
        guard !samples.isEmpty else {
            throw BenchmarkUsageError("no video segments in \(files.joined(separator: ", "))")
        }
    }

    /// The stitch's bytes over its whole time (its fixed cost included, so a floor on the rate).
    var stitchBytesPerSecond: Int64 {
        guard stitchBytes > 0, stitchMicroseconds > 0 else { return 1_000_000_000 }
        return stitchBytes * 1_000_000 / stitchMicroseconds
    }
}
