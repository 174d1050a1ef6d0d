import Foundation
import SpliceCore
import SpliceLog
import SpliceMedia
import SpliceWire
import SpliceDaemon

/// `splice-bench transfer`: one file fetched over the data endpoint (`splice-data` 1) on loopback,
/// coordinator ROUTER → worker DEALER, both `TransferPort`s in this process (each side with a
/// ZeroMQ context, so an I/O thread, of its own, as on two machines), with CURVE off and
/// on. Prints MB/s (the whole fetch: chunks written to disk, then the SHA-256 check and rename)
/// and the process's peak RSS during the fetch (both sides together; the file is written with
/// pwrite, so the page cache is not counted).
///
///     splice-bench transfer [--megabytes 256] [--runs 3] [--chunk-kib 1024] [--window-mib 16]
///
/// With `--cluster`, the cluster job in transfer and in shared-spool mode instead
/// (``TransferClusterBenchmark``).
enum TransferBenchmark {
    static func run(_ arguments: [String]) async throws {
        if arguments.contains("--cluster") {
            try TransferClusterBenchmark.run(arguments.filter { $0 != "--cluster" })
            return
        }
        var megabytes = 256, runs = 3
        var options = TransferOptions()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            guard let text = iterator.next(), let value = Int(text), value > 0 else {
                throw TransferBenchmarkError("\(argument) needs a positive number")
            }
            switch argument {
            case "--megabytes": megabytes = value
            case "--runs": runs = value
            case "--chunk-kib": options.chunkBytes = value << 10
            case "--window-mib": options.maxInFlightBytes = value << 20
            default: throw TransferBenchmarkError("unknown option \(argument)")
            }
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("splice-bench-transfer-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("source.bin")
        let size = Int64(megabytes) << 20
        try writeRandom(source, bytes: Int(size))
        let checksum = try FileChecksum.sha256(ofFileAt: source.path)
        print("transfer: \(megabytes) MiB, chunk \(options.chunkBytes >> 10) KiB, window \(options.maxInFlightBytes >> 20) MiB "
              + "(credit \(max(1, options.maxInFlightBytes / options.chunkBytes)) chunks), \(runs) runs, "
              + "\(ProcessInfo.processInfo.activeProcessorCount) cores (shared with other work: figures are a floor)")
        for curve in [false, true] {
            var rates: [Double] = [], peaks: [Int] = []
            for run in 0..<runs {
                let destination = dir.appendingPathComponent("received-\(curve)-\(run).bin")
                resetPeakRSS()
                let report = try await fetchOnce(source: source, size: size, checksum: checksum, to: destination,
                                                 curve: curve, options: options)
                peaks.append(peakRSSKiB())
                rates.append(report.megabytesPerSecond)
                try? FileManager.default.removeItem(at: destination)
            }
            let sorted = rates.sorted()
            print(String(format: "  curve %@: median %.0f MB/s (min %.0f, max %.0f), peak RSS %d MiB",
                         curve ? "on " : "off", sorted[sorted.count / 2], sorted.first!, sorted.last!,
                         (peaks.max() ?? 0) >> 10))
        }
    }

    private static func fetchOnce(source: URL, size: Int64, checksum: SHA256Digest, to destination: URL, curve: Bool,
                                  options: TransferOptions) async throws -> TransferPort.Report {
        // A context (and so a libzmq I/O thread, which does the CURVE work) per side, as on two machines.
        let context = try WireContext(), workerContext = try WireContext()
        let serverKeys = try CurveKeyPair.generate(), workerKeys = try CurveKeyPair.generate()
        var zap: ZAPHandler?
        var routerOptions = WireOptions.router()
        var dealerOptions = WireOptions.dealer(immediate: false)
        if curve {
            zap = try await ZAPHandler.start(context: context, authorizer: EnrolledKeys([workerKeys.publicKey]))
            routerOptions.curve = .server(keys: serverKeys)
            dealerOptions.curve = .client(keys: workerKeys, serverKey: serverKeys.publicKey)
        }
        let router = DataEndpoint(try await WireEndpoint.bind(["tcp://127.0.0.1:*"], type: .router, context: context,
                                                              options: routerOptions))
        let dealer = DataEndpoint(try await WireEndpoint.connect(router.wire.endpoints[0], type: .dealer,
                                                                 context: workerContext, options: dealerOptions))
        let logger = Logger(level: .error)
        let coordinator = TransferPort(endpoint: router, options: options, logger: logger)
        let worker = TransferPort(endpoint: dealer, options: options, logger: logger)
        let serving = Task { await coordinator.run() }, receiving = Task { await worker.run() }
        let file = TransferFileID("bench")!
        await coordinator.offer(file, path: source.path)
        let report = try await worker.fetch(file, size: size, checksum: checksum, from: .upstream, to: destination)
        serving.cancel()
        receiving.cancel()
        await dealer.close(linger: .zero)
        await router.close(linger: .zero)
        await zap?.close()
        await workerContext.terminate()
        await context.terminate()
        return report
    }

    private static func writeRandom(_ url: URL, bytes count: Int) throws {
        guard let handle = FileHandle(forWritingAtPath: url.path)
            ?? (FileManager.default.createFile(atPath: url.path, contents: nil) ? FileHandle(forWritingAtPath: url.path) : nil)
        else { throw TransferBenchmarkError("cannot write \(url.path)") }
        // Incompressible bytes from a xorshift generator seeded once (getrandom per word costs more
        // than the transfer being measured).
        var state = UInt64.random(in: 1...UInt64.max)
        var block = [UInt64](repeating: 0, count: (1 << 20) / 8)
        for _ in 0..<(count >> 20) {
            for i in block.indices {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                block[i] = state
            }
            handle.write(block.withUnsafeBytes { Data($0) })
        }
        try handle.close()
    }

    /// Resets the kernel's peak-RSS mark for this process (`/proc/self/clear_refs`, Linux ≥ 4.0).
    private static func resetPeakRSS() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    /// VmHWM from /proc/self/status, KiB.
    private static func peakRSSKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}

struct TransferBenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
