import Foundation
import SpliceCore
import SpliceWire
import Synchronization
import Testing

// What the client tests play against: a coordinator's API endpoint scripted by the test (a real
// ZeroMQ ROUTER, SpliceWire's APIServerEndpoint), and the real `splice` binary run as a process.

/// A coordinator API endpoint whose answers the test writes. Every request is recorded with its
/// request id; `script` says, for the n-th request (0-based) it receives, what to send back.
final class ScriptedAPIServer: Sendable {
    enum Answer: Sendable {
        /// Answer the request (with its own id).
        case reply(APIReply)
        /// Send a reply carrying another request's id (a late answer to someone else).
        case replyAs(APIReply, id: String)
        /// Answer after a pause, without holding up later requests.
        case delayed(APIReply, by: Duration)
    }

    typealias Script = @Sendable (_ request: APIRequest, _ index: Int) -> [Answer]

    /// Where clients connect (`tcp://127.0.0.1:PORT`).
    let endpoint: String
    private let context: WireContext
    private let zap: ZAPHandler?
    private let server: APIServerEndpoint
    private let serving: Task<Void, Never>
    private let log: Recorder<Envelope<APIRequest>>

    /// Binds `endpoint` (a free loopback port by default; a given port is retried for two seconds
    /// in case the last server on it is still letting go) and starts answering. With `curve`, the
    /// endpoint is a CURVE server admitting only `admitting` keys, as the coordinator's API is.
    static func start(
        on endpoint: String = "tcp://127.0.0.1:*", curve: (keys: CurveKeyPair, admitting: [CurvePublicKey])? = nil,
        script: @escaping Script
    ) async throws -> ScriptedAPIServer {
        let context = try WireContext()
        var zap: ZAPHandler?
        var options = WireOptions.router()
        if let curve {
            zap = try await ZAPHandler.start(context: context, authorizer: EnrolledKeys(curve.admitting))
            options = .router(curve: .server(keys: curve.keys))
        }
        let deadline = ContinuousClock.now + .seconds(2)
        while true {
            let wire: WireEndpoint
            do {
                wire = try await WireEndpoint.bind([endpoint], type: .router, context: context, options: options)
            } catch {
                guard error.code == .addressInUse, ContinuousClock.now < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(50))
                continue
            }
            return ScriptedAPIServer(context: context, zap: zap, server: APIServerEndpoint(wire), script: script)
        }
    }

    private init(context: WireContext, zap: ZAPHandler?, server: APIServerEndpoint, script: @escaping Script) {
        self.context = context
        self.zap = zap
        self.server = server
        self.endpoint = server.wire.endpoints[0]
        let log = Recorder<Envelope<APIRequest>>()
        self.log = log
        serving = Task { [server] in
            await withDiscardingTaskGroup { group in
                var index = 0
                while let (envelope, peer) = await server.receiveMessage() {
                    log.append(envelope)
                    for answer in script(envelope.message, index) {
                        switch answer {
                        case .reply(let reply):
                            try? await server.send(reply, to: peer, requestID: envelope.requestID)
                        case .replyAs(let reply, let id):
                            try? await server.send(reply, to: peer, requestID: id)
                        case .delayed(let reply, let pause):
                            group.addTask {
                                try? await Task.sleep(for: pause)
                                try? await server.send(reply, to: peer, requestID: envelope.requestID)
                            }
                        }
                    }
                    index += 1
                }
            }
        }
    }

    /// Every request received so far, in order.
    var requests: [Envelope<APIRequest>] { log.entries }

    /// Closes the endpoint at once (as a killed coordinator would) and releases the port.
    func stop() async {
        await server.close(linger: .zero)
        serving.cancel()
        _ = await serving.value
        await zap?.close()
        await context.terminate()
    }
}

extension ScriptedAPIServer {
    /// A server that answers SUBMIT with `job` and every STATUS with `status`.
    static func submitting(_ job: JobID, then status: JobStatus,
                           on endpoint: String = "tcp://127.0.0.1:*") async throws -> ScriptedAPIServer {
        try await start(on: endpoint) { request, _ in
            if case .submit = request { return [.reply(.submitted(JobSubmitted(job: job)))] }
            return [.reply(.status(status))]
        }
    }
}

/// Things seen by one task and checked by another: requests a scripted server received, events a
/// wait reported.
final class Recorder<Element: Sendable>: Sendable {
    private let elements = Mutex<[Element]>([])

    func append(_ element: Element) {
        elements.withLock { $0.append(element) }
    }

    var entries: [Element] { elements.withLock { $0 } }
}

extension JobStatus {
    /// A status for scripts: `state` with `done` of `total` segments.
    static func scripted(_ job: JobID, _ state: String, done: Int = 0, total: Int? = nil, error: String? = nil,
                         output: String = "/out.mp4") -> JobStatus {
        JobStatus(job: job, state: state, input: "/in.mov", output: output, priority: 0, segmentsTotal: total,
                  segmentsDone: done, fraction: total.map { Double(done) / Double(max($0, 1)) } ?? 0,
                  submittedAtMilliseconds: 1_796_059_201_250,
                  finishedAtMilliseconds: JobStatus.finishedStates.contains(state) ? 1_796_059_262_000 : nil,
                  error: error)
    }
}

/// A loopback TCP port nothing listens on (bound, read back, released).
func unusedPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    guard bound else { throw POSIXError(.EADDRINUSE) }
    return Int(UInt16(bigEndian: address.sin_port))
}

// MARK: - The real binary

/// `splice` run as a child process, its output collected as it comes, never waited on forever.
/// `@unchecked`: `process` is only asked thread-safe questions (running? pid) after `run()`.
final class SpliceProcess: @unchecked Sendable {
    /// How a run ended.
    struct Result: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static var binary: String { WorkerProcessTests.spliceBinary.path }

    private let process: Process
    private let out = OutputBuffer()
    private let err = OutputBuffer()

    /// Starts `splice arguments…` with this process's environment minus any `SPLICE_*`
    /// variable, plus `environment`.
    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw ToolMissing(path: Self.binary)
        }
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = arguments
        var inherited = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SPLICE_") }
        inherited.merge(environment) { _, new in new }
        process.environment = inherited
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        stdout.fileHandleForReading.readabilityHandler = { [out] handle in Self.collect(handle, into: out) }
        stderr.fileHandleForReading.readabilityHandler = { [err] handle in Self.collect(handle, into: err) }
        try process.run()
    }

    /// Appends what `handle` has; at end of file (empty read) stops reading it.
    private static func collect(_ handle: FileHandle, into buffer: OutputBuffer) {
        let data = handle.availableData
        if data.isEmpty { handle.readabilityHandler = nil }
        buffer.append(data)
    }

    /// Runs `splice arguments…` to the end (killed after `timeout`, which the test reports).
    static func run(_ arguments: [String], environment: [String: String] = [:],
                    timeout: Duration = .seconds(60)) async throws -> Result {
        try await SpliceProcess(arguments, environment: environment).finish(within: timeout)
    }

    var stderrText: String { err.text }

    /// Waits until standard error contains `text`; false after `timeout`.
    func waitForStderr(containing text: String, within timeout: Duration = .seconds(10)) async -> Bool {
        await eventually(within: timeout) { self.stderrText.contains(text) }
    }

    func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits for the process to exit; after `timeout` it is killed and an issue is recorded.
    func finish(within timeout: Duration) async -> Result {
        if !(await eventually(within: timeout) { !self.process.isRunning }) {
            Issue.record("splice \(process.arguments ?? []) did not finish within \(timeout); killed")
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        process.waitUntilExit()
        // Let the readability handlers take what is left in the pipes.
        try? await Task.sleep(for: .milliseconds(50))
        for pipe in [process.standardOutput, process.standardError].compactMap({ $0 as? Pipe }) {
            pipe.fileHandleForReading.readabilityHandler = nil
        }
        return Result(status: process.terminationStatus, stdout: out.text, stderr: err.text)
    }
}

/// Bytes a child process wrote, collected from a pipe's reader thread.
final class OutputBuffer: Sendable {
    private let data = Mutex(Data())

    func append(_ more: Data) {
        data.withLock { $0.append(more) }
    }

    var text: String { data.withLock { String(decoding: $0, as: UTF8.self) } }
}

/// The `splice` binary is not where the tests expect it.
struct ToolMissing: Error, CustomStringConvertible {
    var path: String
    var description: String { "no splice binary at \(path); build it with `swift build --build-tests`" }
}
