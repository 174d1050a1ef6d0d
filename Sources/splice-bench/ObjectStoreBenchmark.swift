import Foundation
import SpliceObjectStore

/// `splice-bench s3`: object storage on loopback against moto's S3 emulator (authentication on).
/// Prints, as median of `--runs`:
///
/// - write MB/s: an ``ObjectWriter`` taking `--megabytes` of random bytes from memory in 1 MiB
///   writes (8 MiB parts, 4 in flight), and boto3's `upload_fileobj` with the same part size and
///   concurrency — the emulator's own ceiling;
/// - read MB/s: an ``ObjectReader`` read sequentially in 1 MiB reads (one streaming GET, 8 MiB
///   read-ahead), and boto3's better of `download_fileobj` (8 MiB ranged GETs, 4 at once) and
///   one `get_object` read as a stream;
/// - the two ways FFmpeg can read an input object, each demuxing every packet of a generated
///   ~95 MB 1080p MP4 (moov at the end, so both have to seek): a custom AVIOContext over the
///   reader, and FFmpeg's http reader on a presigned URL (plus the `ffmpeg` CLI doing the same).
///
///     splice-bench s3 [--megabytes 256] [--runs 3]
enum ObjectStoreBenchmark {
    static func run(_ arguments: [String]) async throws {
        var megabytes = 256, runs = 3
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            guard let text = iterator.next(), let value = Int(text), value > 0 else {
                throw S3BenchError("\(argument) needs a positive number")
            }
            switch argument {
            case "--megabytes": megabytes = value
            case "--runs": runs = value
            default: throw S3BenchError("unknown option \(argument)")
            }
        }
        let emulator = try S3BenchEmulator()
        let bucket = "splice-bench-\(getpid())"
        try emulator.createBucket(bucket)
        let store = try ObjectStore(configuration: ObjectStoreConfiguration(
            credentials: ObjectStoreCredentials(accessKeyID: emulator.accessKeyID, secretAccessKey: emulator.secretAccessKey),
            endpoint: emulator.endpoint))
        print("s3: moto on loopback, \(megabytes) MiB objects, \(runs) runs, "
              + "\(ProcessInfo.processInfo.activeProcessorCount) cores shared with the emulator (figures are a floor)")

        var random = [UInt8](repeating: 0, count: megabytes << 20)
        var generator = SystemRandomNumberGenerator()
        random.withUnsafeMutableBytes { raw in
            for index in stride(from: 0, to: raw.count, by: 8) { raw.storeBytes(of: generator.next(), toByteOffset: index, as: UInt64.self) }
        }
        let bytes = random, size = megabytes
        var writes: [Double] = [], reads: [Double] = [], boto3Writes: [Double] = [], boto3Reads: [Double] = []
        for run in 0..<runs {
            let location = try ObjectLocation(bucket: bucket, key: "bench-\(run).bin")
            writes.append(try await timedMBps(bytes.count) {
                let writer = try await store.openWriter(for: location, overwrite: true)
                var offset = 0
                while offset < bytes.count {
                    try await writer.write(bytes[offset..<min(bytes.count, offset + (1 << 20))])
                    offset += 1 << 20
                }
                try await writer.finish()
            })
            let reader = try await store.openReader(location)
            reads.append(try await timedMBps(bytes.count) {
                try await offThread { try readAll(reader, expect: bytes.count) }
            })
            try await store.delete(location)
            let boto3 = try await offThread { try emulator.boto3Figures(megabytes: size) }
            boto3Writes.append(boto3.write)
            boto3Reads.append(boto3.read)
            print(String(format: "  run %d: write %.0f MB/s (boto3 %.0f), read %.0f MB/s (boto3 %.0f: ranged %.0f, stream %.0f)",
                         run + 1, writes.last!, boto3.write, reads.last!, boto3.read, boto3.ranged, boto3.stream))
        }
        print(String(format: "  write: splice %.0f MB/s, boto3 %.0f MB/s (%.0f %% of boto3)",
                     median(writes), median(boto3Writes), 100 * median(writes) / median(boto3Writes)))
        print(String(format: "  read:  splice %.0f MB/s, boto3 %.0f MB/s (%.0f %% of boto3)",
                     median(reads), median(boto3Reads), 100 * median(reads) / median(boto3Reads)))
        try await readStrategies(store: store, bucket: bucket, runs: runs)
    }

    /// FFmpeg reading an input object: custom AVIOContext over ObjectReader vs presigned URL.
    private static func readStrategies(store: ObjectStore, bucket: String, runs: Int) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("splice-bench-s3-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let clip = directory.appendingPathComponent("source.mp4").path
        print("generating a 20 s 1080p30 MP4 at 40 Mbit/s (moov at the end) …")
        _ = try MeasuredProcess.run(["ffmpeg", "-y", "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30:duration=20",
                                     "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=20",
                                     "-c:v", "libx264", "-preset", "ultrafast", "-b:v", "40M", "-maxrate", "40M",
                                     "-bufsize", "80M", "-g", "60", "-pix_fmt", "yuv420p", "-c:a", "aac", clip])
        let location = try ObjectLocation(bucket: bucket, key: "media/source.mp4")
        let info = try await store.upload(file: clip, to: location, overwrite: true, contentType: "video/mp4")
        let megabytes = Double(info.size) / 1e6
        var avio: [Double] = [], presigned: [Double] = [], cli: [Double] = []
        var packets: (Int, Int) = (0, 0)
        for _ in 0..<runs {
            let reader = try await store.openReader(location)
            let ours = try await offThread { try DemuxThroughput.demux(reader: reader) }
            let url = try store.presignedURL(for: location).url
            let theirs = try await offThread { try DemuxThroughput.demux(url: url) }
            let command = try MeasuredProcess.run(["ffmpeg", "-v", "error", "-i", url, "-map", "0", "-c", "copy", "-f", "null", "-"])
            avio.append(megabytes / ours.seconds)
            presigned.append(megabytes / theirs.seconds)
            cli.append(megabytes / (Double(command.wallNanoseconds) / 1e9))
            packets = (ours.packets, theirs.packets)
        }
        print(String(format: "  FFmpeg reading %.0f MB (%d packets; %d through the URL):", megabytes, packets.0, packets.1))
        print(String(format: "    custom AVIOContext over ObjectReader: %.0f MB/s", median(avio)))
        print(String(format: "    presigned URL, FFmpeg's http reader:  %.0f MB/s (ffmpeg CLI -c copy -f null: %.0f MB/s)",
                     median(presigned), median(cli)))
    }

    /// Reads the whole object sequentially in 1 MiB reads, as a demuxer would.
    private static func readAll(_ reader: ObjectReader, expect count: Int) throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        while true {
            let n = try buffer.withUnsafeMutableBytes { try reader.readBlocking(at: offset, into: $0) }
            if n == 0 { break }
            offset += Int64(n)
        }
        guard offset == Int64(count) else { throw S3BenchError("read \(offset) bytes, expected \(count)") }
    }

    private static func timedMBps(_ bytes: Int, _ body: () async throws -> Void) async throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try await body()
        return Double(bytes) / 1e6 / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }

    /// Runs blocking work on a thread of its own (never the cooperative pool).
    private static func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    private static func median(_ values: [Double]) -> Double {
        values.sorted()[values.count / 2]
    }
}
