import Foundation

// splice-bench: benchmarks that print figures (never pass/fail tests).
let arguments = Array(CommandLine.arguments.dropFirst())
let usage = "usage: splice-bench export [runs]"
do {
    switch arguments.first {
    case "export": try ExportBenchmark.run(arguments: Array(arguments.dropFirst()))
    default:
        FileHandle.standardError.write(Data((usage + "\n").utf8))
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("splice-bench: \(error)\n".utf8))
    exit(1)
}
