import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// moto's S3 on loopback for `splice-bench s3`: `Deploy/s3-emulator.py serve` run with the
/// Python of the tools environment `Deploy/setup.sh` makes (`/opt/splice-tools`, or
/// `SPLICE_TOOLS`) or `SPLICE_PYTHON`. It exits when this process does (its stdin closes).
/// Used from one task at a time (the benchmark's), hence `@unchecked Sendable`.
final class S3BenchEmulator: @unchecked Sendable {
    let endpoint: String
    let accessKeyID: String
    let secretAccessKey: String
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var pending = Data()

    init() throws {
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = [Self.script, "serve"]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        let first = try Self.readJSON(from: output, pending: &pending)
        guard let endpoint = first["endpoint"] as? String, let key = first["accessKeyID"] as? String,
              let secret = first["secretAccessKey"] as? String else { throw S3BenchError("s3-emulator.py said \(first)") }
        self.endpoint = endpoint
        accessKeyID = key
        secretAccessKey = secret
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// The emulator's CPU time so far, in microseconds: what a real service would spend on
    /// machines of its own, here taken from the two cores the cluster uses.
    var cpuMicroseconds: Int64 { ThreadCPU.microseconds(ofProcess: process.processIdentifier) }

    /// Makes bucket `name`.
    func createBucket(_ name: String) throws {
        input.fileHandleForWriting.write(Data("create-bucket \(name)\n".utf8))
        let answer = try Self.readJSON(from: output, pending: &pending)
        guard answer["ok"] as? Bool == true else { throw S3BenchError("create-bucket \(name): \(answer)") }
    }

    /// boto3's own upload and download MB/s for `megabytes` against this emulator (the read: the
    /// better of its parallel ranged download and one streamed GET; both are printed).
    func boto3Figures(megabytes: Int) throws -> (write: Double, read: Double, ranged: Double, stream: Double) {
        let process = Process(), out = Pipe()
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = [Self.script, "bench", endpoint, accessKeyID, secretAccessKey, String(megabytes)]
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let write = object["writeMBps"] as? Double, let read = object["readMBps"] as? Double,
              let ranged = object["rangedReadMBps"] as? Double, let stream = object["streamReadMBps"] as? Double
        else { throw S3BenchError("s3-emulator.py bench said \(String(decoding: data, as: UTF8.self))") }
        return (write, read, ranged, stream)
    }

    static var python: String {
        let environment = ProcessInfo.processInfo.environment
        if let python = environment["SPLICE_PYTHON"], !python.isEmpty { return python }
        return (environment["SPLICE_TOOLS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/opt/splice-tools") + "/bin/python3"
    }

    static let script = "Deploy/s3-emulator.py"

    private static func readJSON(from pipe: Pipe, pending: inout Data) throws -> [String: Any] {
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = pending[pending.startIndex..<newline]
                pending = Data(pending[(newline + 1)...])
                return (try JSONSerialization.jsonObject(with: line) as? [String: Any]) ?? [:]
            }
            let chunk = pipe.fileHandleForReading.availableData
            guard !chunk.isEmpty else {
                throw S3BenchError("s3-emulator.py exited; run Deploy/setup.sh (it makes /opt/splice-tools with moto "
                    + "and boto3) and run splice-bench from the checkout, or set SPLICE_PYTHON")
            }
            pending.append(chunk)
        }
    }
}

struct S3BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
