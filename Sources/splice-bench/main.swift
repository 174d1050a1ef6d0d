// splice-bench: benchmarks that print figures (never pass/fail tests). One case per benchmark;
// each lives in its own file.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
let usage = "usage: splice-bench export [runs] | transcode [runs] | store [options] | cluster [options] | codec [iterations]"
    + " | ratecontrol [--codec C]… | ladder [runs] [--seconds N] [--preset NAME] [--against-ffmpeg [--segment-seconds N] [--repeat N]] | transfer [options] | transfer --cluster [--runs N]"
    + " | s3 [--megabytes N] [--runs N] | s3 --cluster [--runs N] [--seconds N] [--preset NAME] | http [--jobs N] [--seconds N] [--connections N] [--streams N] | quality [--part target|verify|cluster]… [--target ssim:X] [--runs N] [--seconds N] [--preset NAME]"
    + " | failover [--kills N] [--leader-lease-seconds S] [--workers N]"
    + " | prune [--jobs N] [--segments N] [--events N] [--batch N] [--fast]"
    + " | scaling [runs] [--codec x264|x265|svt|vp9|aom]… [--lanes N] [--seconds N] [--size WxH]"
    + " | codecs [runs] [--codec x264|x265|svt|vp9|aom]… [--jobs N] [--segment-seconds N]"
    + " | farm [--workers 1,4,16,64] [--slots auto|S] [--cores C] [--film-seconds N] [--fps N] [--segment-seconds auto|N]"
    + " (--costs A.json,B.json | --calibrate) … | farm --validate [--seconds N] [--runs N]"
do {
    switch arguments.first {
    case "export": try ExportBenchmark.run(arguments: Array(arguments.dropFirst()))
    case "transcode": try TranscodeBenchmark.run(arguments: Array(arguments.dropFirst()))
    case "store": try await StoreBenchmark.run(Array(arguments.dropFirst()))
    case "cluster": try await ClusterBenchmark.run(Array(arguments.dropFirst()))
    case "codec": try CodecBenchmark.run(Array(arguments.dropFirst()))
    case "ratecontrol": try RateControlBenchmark.run(arguments: Array(arguments.dropFirst()))
    case "ladder": try LadderBenchmark.run(Array(arguments.dropFirst()))
    case "transfer": try await TransferBenchmark.run(Array(arguments.dropFirst()))
    case "s3": try await ObjectStoreBenchmark.run(Array(arguments.dropFirst()))
    case "http": try await HTTPBenchmark.run(Array(arguments.dropFirst()))
    case "quality": try QualityBenchmark.run(Array(arguments.dropFirst()))
    case "failover": try await FailoverBenchmark.run(Array(arguments.dropFirst()))
    case "prune": try await PruneBenchmark.run(Array(arguments.dropFirst()))
    case "scaling": try ScalingBenchmark.run(Array(arguments.dropFirst()))
    case "codecs": try CodecSpeedBenchmark.run(Array(arguments.dropFirst()))
    case "farm": try await FarmBenchmark.run(Array(arguments.dropFirst()))
    default:
        FileHandle.standardError.write(Data((usage + "\n").utf8))
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("splice-bench: \(error)\n".utf8))
    exit(1)
}
