import Foundation
import SpliceCore
import SpliceWire
import Synchronization
import Testing

// What the client tests play against: a coordinator's API endpoint scripted by the test (a real
// ZeroMQ ROUTER, SpliceWire's APIServerEndpoint). The real `splice` binary runs as a process
// through SpliceTestSupport's `SpliceProcess`.

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
    static func scripted(_ job: JobID, _ state: JobState, done: Int = 0, total: Int? = nil, error: String? = nil,
                         output: String = "/out.mp4") -> JobStatus {
        JobStatus(job: job, state: state, input: "/in.mov", output: output, priority: 0, segmentsTotal: total,
                  segmentsDone: done, fraction: total.map { Double(done) / Double(max($0, 1)) } ?? 0,
                  submittedAtMilliseconds: 1_796_059_201_250,
                  finishedAtMilliseconds: state.isTerminal ? 1_796_059_262_000 : nil,
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
