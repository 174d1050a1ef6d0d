import Foundation

/// The job the cluster-job benchmarks run (`transfer --cluster`, `s3 --cluster`) and the options
/// they share: a generated 640×360 30 fps H.264 + AAC clip with a keyframe every 2 s,
/// `--segment-seconds 4`, libx264 at `--preset`, CRF 23, AAC 128k; `--runs` alternated pairs.
struct ClusterJobOptions {
    var runs = 3
    var seconds: Int
    var preset = "veryfast"

    /// Reads `--runs N`, `--seconds N` and `--preset NAME`; `command` names the benchmark in errors.
    init(parsing arguments: [String], seconds: Int, command: String) throws {
        self.seconds = seconds
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            guard let text = iterator.next() else { throw BenchmarkUsageError("\(argument) needs a value") }
            switch argument {
            case "--preset": preset = text
            case "--runs", "--seconds":
                guard let value = Int(text), value > 0 else { throw BenchmarkUsageError("\(argument) needs a positive number") }
                if argument == "--runs" { runs = value } else { self.seconds = value }
            default: throw BenchmarkUsageError("unknown option \(argument) for \(command)")
            }
        }
    }

    /// The `submit` flags of the job.
    var flags: [String] {
        ["--video-codec", "h264", "--preset", preset, "--crf", "23", "--audio-codec", "aac", "--audio-bitrate", "128k",
         "--segment-seconds", "4"]
    }

    /// Makes a fresh folder `name-<pid>` under the temporary directory and the source clip in it.
    func prepare(_ name: String) throws -> (directory: URL, source: String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let source = dir.appendingPathComponent("source.mp4").path
        try BenchmarkClip.generate(seconds: seconds, at: source, keyframeInterval: 60, size: "640x360")
        return (dir, source)
    }
}

/// A benchmark's options did not parse.
struct BenchmarkUsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    /// Throws naming the `chosen` codecs that are not among `known`.
    static func check(codecs chosen: [String], known: [String]) throws {
        let unknown = chosen.filter { !known.contains($0) }
        guard unknown.isEmpty else {
            throw BenchmarkUsageError("unknown codec \(unknown.joined(separator: ", ")); one of "
                                      + known.joined(separator: ", "))
        }
    }
}
