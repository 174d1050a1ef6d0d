import CZeroMQ
import Foundation
import SpliceWire
import Synchronization

/// The load of `splice-bench cluster`: workers that encode nothing. Each is its own DEALER socket
/// with its own routing id and session, as separate machines would be; every ASSIGN is answered at
/// once with ACCEPT and COMPLETE, and the ACK of each COMPLETE is timed.
///
/// The load is not what is measured, and it shares the machine's two cores with the coordinator
/// and PostgreSQL, so it costs as little as it can: all sockets are served by one thread in one
/// `zmq_poll` (libzmq directly, with its own context, no async hops), and it reads only the few
/// envelope fields it needs by scanning the JSON text our own `WireCodec` wrote (sorted keys, so
/// the body's `attempt` and `outputPath` come before its `spec`), echoing the attempt back verbatim.
final class FakeWorkerPool: Sendable {
    private let stopping = Atomic<Bool>(false)
    private let stopped = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let finished = Atomic<Bool>(false)

    private init() {}

    /// Connects `count` workers to `endpoint`, each saying HELLO with `slots` slots.
    static func start(endpoint: String, count: Int, slots: Int, tally: Tally) throws -> FakeWorkerPool {
        let pool = FakeWorkerPool()
        let loop = try Loop(endpoint: endpoint, count: count, slots: slots, tally: tally)
        let thread = Thread {
            loop.run(until: pool.stopping)
            loop.close()
            pool.finished.store(true, ordering: .releasing)
            pool.stopped.withLock { $0.take() }?.resume()
        }
        thread.name = "splice-bench-fakes"
        thread.start()
        return pool
    }

    /// Stops the thread and closes the sockets.
    func stop() async {
        stopping.store(true, ordering: .releasing)
        await withCheckedContinuation { continuation in
            let done = stopped.withLock { waiting -> Bool in
                if finished.load(ordering: .acquiring) { return true }
                waiting = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }
}

/// The socket thread: everything in it is confined to that thread.
private final class Loop: @unchecked Sendable {
    private struct Worker {
        var socket: UnsafeMutableRawPointer
        var hello: Data
        /// When each lease token's ASSIGN arrived.
        var started: [String: ContinuousClock.Instant] = [:]
    }

    private let context: UnsafeMutableRawPointer
    private var workers: [Worker] = []
    private let tally: Tally
    private let message = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: 1)

    init(endpoint: String, count: Int, slots: Int, tally: Tally) throws {
        guard let context = zmq_ctx_new() else { throw ClusterBenchmarkError("zmq_ctx_new failed") }
        self.context = context
        self.tally = tally
        let codec = WireCodec()
        for index in 0..<count {
            guard let socket = zmq_socket(context, ZMQ_DEALER) else { throw ClusterBenchmarkError("zmq_socket failed") }
            let name = "fake-\(index)"
            var linger: Int32 = 0
            zmq_setsockopt(socket, ZMQ_LINGER, &linger, MemoryLayout<Int32>.size)
            _ = name.withCString { zmq_setsockopt(socket, ZMQ_ROUTING_ID, $0, strlen($0)) }
            guard zmq_connect(socket, endpoint) == 0 else {
                throw ClusterBenchmarkError("cannot connect a fake worker to \(endpoint): errno \(zmq_errno())")
            }
            let hello = try codec.encode(WorkerMessage.hello(Hello(workerName: name, slots: slots,
                                                                   encoders: ["libx264"])))[0]
            workers.append(Worker(socket: socket, hello: hello))
            send(hello, on: socket)
        }
    }

    func run(until stopping: borrowing Atomic<Bool>) {
        var items = workers.map { zmq_pollitem_t(socket: $0.socket, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0) }
        while !stopping.load(ordering: .acquiring) {
            let ready = items.withUnsafeMutableBufferPointer { zmq_poll($0.baseAddress, Int32($0.count), 50) }
            guard ready > 0 else { continue }
            for index in items.indices where items[index].revents & Int16(ZMQ_POLLIN) != 0 {
                drain(index)
            }
        }
    }

    func close() {
        for worker in workers { zmq_close(worker.socket) }
        zmq_ctx_term(context)
        message.deallocate()
    }

    /// Handles every message waiting on worker `index`'s socket.
    private func drain(_ index: Int) {
        let socket = workers[index].socket
        while true {
            zmq_msg_init(message)
            defer { zmq_msg_close(message) }
            guard zmq_msg_recv(message, socket, ZMQ_DONTWAIT) >= 0 else { return }
            let now = ContinuousClock.now
            handle(UnsafeRawBufferPointer(start: zmq_msg_data(message), count: zmq_msg_size(message)), worker: index,
                   at: now)
        }
    }

    private func handle(_ text: UnsafeRawBufferPointer, worker index: Int, at now: ContinuousClock.Instant) {
        guard let type = Self.string(after: Keys.type, in: text) else { return }
        switch type {
        case "ASSIGN":
            guard let attempt = Self.object(after: Keys.attempt, in: text),
                  let token = Self.string(after: Keys.leaseToken, in: attempt),
                  let output = Self.string(after: Keys.outputPath, in: text)
            else { return }
            let attemptText = String(decoding: attempt, as: UTF8.self)
            workers[index].started[token] = now
            tally.assigned(at: now)
            let socket = workers[index].socket
            send(Data(#"{"body":{"attempt":\#(attemptText)},"protocol":"splice-worker","type":"ACCEPT","version":1}"#.utf8),
                 on: socket)
            let body = #"{"attempt":\#(attemptText),"checksum":"sha256:\#(Self.zeros)","encodeMilliseconds":0,"#
                + #""outputPath":"\#(output)","sizeBytes":0}"#
            send(Data(#"{"body":\#(body),"protocol":"splice-worker","type":"COMPLETE","version":1}"#.utf8), on: socket)
        case "ACK":
            guard Self.string(after: Keys.acknowledges, in: text) == "COMPLETE",
                  let token = Self.string(after: Keys.leaseToken, in: text),
                  let outcome = Self.string(after: Keys.outcome, in: text).flatMap(Ack.Outcome.init(rawValue:)),
                  let start = workers[index].started.removeValue(forKey: token)
            else { return }
            tally.acknowledged(outcome, latency: now - start, at: now)
        case "DISCONNECT" where Self.string(after: Keys.reason, in: text) == Disconnect.Reason.reregister.rawValue:
            send(workers[index].hello, on: workers[index].socket)
        default:
            break
        }
    }

    private func send(_ data: Data, on socket: UnsafeMutableRawPointer) {
        _ = data.withUnsafeBytes { zmq_send(socket, $0.baseAddress, $0.count, 0) }
    }

    private static let zeros = String(repeating: "0", count: 64)

    // MARK: - Scanning our own JSON

    private enum Keys {
        static let type = Array(#""type":""#.utf8)
        static let attempt = Array(#""attempt":"#.utf8)
        static let leaseToken = Array(#""leaseToken":""#.utf8)
        static let outputPath = Array(#""outputPath":""#.utf8)
        static let acknowledges = Array(#""acknowledges":""#.utf8)
        static let outcome = Array(#""outcome":""#.utf8)
        static let reason = Array(#""reason":""#.utf8)
    }

    /// Where the first `key` in `text` ends.
    private static func end(of key: [UInt8], in text: UnsafeRawBufferPointer) -> Int? {
        guard let first = key.first, text.count >= key.count else { return nil }
        var index = 0
        while index <= text.count - key.count {
            if text[index] == first && key.indices.allSatisfy({ text[index + $0] == key[$0] }) {
                return index + key.count
            }
            index += 1
        }
        return nil
    }

    /// The raw text of the JSON string value right after `key` (escapes kept as written).
    private static func string(after key: [UInt8], in text: UnsafeRawBufferPointer) -> String? {
        guard let start = end(of: key, in: text) else { return nil }
        var index = start
        while index < text.count {
            switch text[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return String(decoding: UnsafeRawBufferPointer(rebasing: text[start..<index]), as: UTF8.self)
            default: index += 1
            }
        }
        return nil
    }

    /// The raw text of the flat JSON object right after `key` (`SegmentAttempt` holds no nested
    /// objects and no braces in its strings: UUIDs and numbers).
    private static func object(after key: [UInt8], in text: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard let start = end(of: key, in: text), start < text.count, text[start] == UInt8(ascii: "{"),
              let close = text[start...].firstIndex(of: UInt8(ascii: "}"))
        else { return nil }
        return UnsafeRawBufferPointer(rebasing: text[start...close])
    }
}
