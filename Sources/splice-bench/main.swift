// splice-bench: prints benchmark figures. One case per benchmark; each lives in its own file.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "store":
        try await StoreBenchmark.run(Array(arguments.dropFirst()))
    default:
        print("usage: splice-bench store [options]")
    }
} catch {
    FileHandle.standardError.write(Data("splice-bench: \(error)\n".utf8))
    exit(1)
}
