import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// S3 on loopback for integration tests: moto in server mode (`Deploy/s3-emulator.py serve`,
/// authentication enforced), one per test process, started on first use like ``TestPostgres``;
/// a fresh bucket per test. Also the recording proxy (``Tap``) and botocore's signer, the
/// independent judges of what Splice sends.
///
///     let s3 = try await TestS3.server()
///     let bucket = try await TestS3.makeBucket()
///
/// The helper runs on the Python of the tools environment `Deploy/setup.sh` makes
/// (`/opt/splice-tools`, or `SPLICE_TOOLS`, with `moto[server]` and `boto3`), or `SPLICE_PYTHON`.
/// It exits when this process does (its stdin closes).
public enum TestS3 {
    /// The emulator's address and the access key it accepts.
    public struct Server: Sendable {
        public var endpoint: String
        public var accessKeyID: String
        public var secretAccessKey: String
        public var region: String
    }

    /// The shared emulator, started on first use.
    public static func server() async throws -> Server {
        try await shared.value.server
    }

    /// A new empty bucket with a unique name.
    public static func makeBucket(_ label: String = "t") async throws -> String {
        let name = "\(label)-\(UUID().uuidString.lowercased().prefix(18))"
        let shared = try await shared.value
        try await ExternalTool.offPool { try shared.helper.command("create-bucket \(name)") }
        return name
    }

    /// The Python with moto and boto3: `SPLICE_PYTHON`, else the tools environment's.
    public static func python() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        if let python = environment["SPLICE_PYTHON"], !python.isEmpty { return python }
        let tools = environment["SPLICE_TOOLS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/opt/splice-tools"
        let python = tools + "/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw TestFailure("no \(python): run Deploy/setup.sh (it makes \(tools) with moto[server] and boto3), "
                + "or point SPLICE_PYTHON at a Python that has them")
        }
        return python
    }

    /// `Deploy/s3-emulator.py`.
    public static var script: String {
        Fixtures.packageRoot.appendingPathComponent("Deploy/s3-emulator.py").path
    }

    /// Runs `s3-emulator.py arguments…` to completion and returns its standard output.
    public static func run(_ arguments: [String]) async throws -> String {
        let output = try await ExternalTool.run(executable: URL(fileURLWithPath: try python()), [script] + arguments)
        guard output.status == 0 else {
            throw TestFailure("s3-emulator.py \(arguments.first ?? "") exited \(output.status): \(output.stderr.suffix(2000))")
        }
        return output.text
    }

    // MARK: - Implementation

    private struct Shared: Sendable {
        var server: Server
        var helper: HelperProcess
    }

    private static let shared = Task<Shared, any Error> {
        let helper = try await ExternalTool.offPool { try HelperProcess(["serve"]) }
        let first = helper.firstLine
        guard let endpoint = first["endpoint"] as? String, let key = first["accessKeyID"] as? String,
              let secret = first["secretAccessKey"] as? String, let region = first["region"] as? String
        else { throw TestFailure("s3-emulator.py serve said \(first)") }
        return Shared(server: Server(endpoint: endpoint, accessKeyID: key, secretAccessKey: secret, region: region),
                      helper: helper)
    }
}

/// A long-running `s3-emulator.py` subcommand: its first JSON line read at start, commands
/// written to its stdin and answered by one JSON line each. Killed at process exit; it also
/// exits by itself when its stdin closes.
final class HelperProcess: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let lock = NSLock()  // one command at a time
    private var pending = Data()
    /// The JSON object the helper printed first.
    private(set) var firstLine: [String: Any] = [:]

    private static let running = Mutex<[Int32]>([])
    private static let killAtExit: Void = {
        atexit { for pid in HelperProcess.running.withLock({ $0 }) { kill(pid, SIGKILL) } }
    }()

    /// Starts the helper and waits (blocking, up to 60 s) for its first line.
    init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: try TestS3.python())
        process.arguments = [TestS3.script] + arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        _ = Self.killAtExit
        try process.run()
        Self.running.withLock { $0.append(process.processIdentifier) }
        firstLine = try readLine()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Writes `line` to the helper and waits (blocking) for its one-line JSON answer; throws
    /// unless the answer says `"ok": true`.
    func command(_ line: String) throws {
        lock.lock()
        defer { lock.unlock() }
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
        let answer = try readLine()
        guard answer["ok"] as? Bool == true else { throw TestFailure("s3-emulator.py: \(line): \(answer)") }
    }

    private func readLine() throws -> [String: Any] {
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = pending[pending.startIndex..<newline]
                pending = Data(pending[(newline + 1)...])
                guard let object = try JSONSerialization.jsonObject(with: line) as? [String: Any] else {
                    throw TestFailure("s3-emulator.py printed \(String(decoding: line, as: UTF8.self))")
                }
                return object
            }
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { throw TestFailure("s3-emulator.py \(process.arguments ?? []) exited early") }
            pending.append(chunk)
        }
    }
}
