import CZeroMQ
import Foundation
import SpliceCore
import SpliceWire
import Synchronization

/// The load of `splice-bench cluster`: workers that encode nothing. Each is its own DEALER socket
/// with its own routing id and session, as separate machines would be; every ASSIGN is answered at
/// once with ACCEPT and COMPLETE, and the ACK of each COMPLETE is timed.
///
/// The load is not what is measured, and it shares the machine's two cores with the coordinator
/// and PostgreSQL, so it costs as little as it can: all sockets are served by one thread in one
/// `zmq_poll` (libzmq directly, with its own context, no async hops). It speaks the protocol
/// through `WireCodec` like a real worker (typed messages in and out); the ASSIGN's spec stays
/// undecoded, since nothing is encoded.
///
/// Its CPU time is counted apart (``cpuMicroseconds``), so the benchmark can print the
/// coordinator's own cost per segment: the socket thread reads its own clock, and the load's
/// libzmq I/O thread is named with its own prefix to be found in /proc.
final class FakeWorkerPool: Sendable {
    private let stopping = Atomic<Bool>(false)
    private let stopped = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let finished = Atomic<Bool>(false)
    /// The socket thread's CPU time so far, as it last read it.
    fileprivate let loopCPU = Atomic<Int64>(0)

    /// The name prefix of the load's libzmq threads (`ZMQ_THREAD_NAME_PREFIX`).
    fileprivate static let threadNamePrefix: Int32 = 7

    private init() {}

    /// User + system CPU time of the load so far: its socket thread and its libzmq I/O thread.
    var cpuMicroseconds: Int64 {
        loopCPU.load(ordering: .acquiring) + ThreadCPU.microseconds(namedWithPrefix: "\(Self.threadNamePrefix)/")
    }

    /// Connects `count` workers to `endpoint`, each saying HELLO with `slots` slots.
    static func start(endpoint: String, count: Int, slots: Int, tally: Tally) throws -> FakeWorkerPool {
        let pool = FakeWorkerPool()
        let loop = try Loop(endpoint: endpoint, count: count, slots: slots, tally: tally)
        let thread = Thread {
            loop.run(until: pool.stopping, cpu: pool.loopCPU)
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
        var started: [LeaseToken: ContinuousClock.Instant] = [:]
    }

    private let context: UnsafeMutableRawPointer
    private var workers: [Worker] = []
    private let tally: Tally
    private let message = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: 1)
    private let codec = WireCodec()

    init(endpoint: String, count: Int, slots: Int, tally: Tally) throws {
        guard let context = zmq_ctx_new() else { throw ClusterBenchmarkError("zmq_ctx_new failed") }
        zmq_ctx_set(context, ZMQ_THREAD_NAME_PREFIX, FakeWorkerPool.threadNamePrefix)
        // A context holds 1,023 sockets unless told otherwise: a farm of 1,024 needs more.
        zmq_ctx_set(context, ZMQ_MAX_SOCKETS, Int32(count + 16))
        self.context = context
        self.tally = tally
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

    /// Serves the sockets until `stopping`, storing its own CPU time in `cpu` after every poll.
    func run(until stopping: borrowing Atomic<Bool>, cpu: borrowing Atomic<Int64>) {
        var items = workers.map { zmq_pollitem_t(socket: $0.socket, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0) }
        while !stopping.load(ordering: .acquiring) {
            let ready = items.withUnsafeMutableBufferPointer { zmq_poll($0.baseAddress, Int32($0.count), 50) }
            if ready > 0 {
                for index in items.indices where items[index].revents & Int16(ZMQ_POLLIN) != 0 {
                    drain(index)
                }
            }
            cpu.store(ThreadCPU.current, ordering: .releasing)
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

    private func handle(_ bytes: UnsafeRawBufferPointer, worker index: Int, at now: ContinuousClock.Instant) {
        guard case .success(let envelope) = codec.decode([Data(bytes)], as: CoordinatorMessage.self) else { return }
        let socket = workers[index].socket
        switch envelope.message {
        case .assign(let assign):
            workers[index].started[assign.attempt.leaseToken] = now
            tally.assigned(at: now)
            send(.accept(Accept(attempt: assign.attempt)), on: socket)
            send(.complete(Complete(attempt: assign.attempt, outputPath: assign.outputPath, checksum: Self.checksum,
                                    sizeBytes: 0, encodeMilliseconds: 0)), on: socket)
        case .ack(let ack) where ack.acknowledges == .complete:
            guard let start = workers[index].started.removeValue(forKey: ack.attempt.leaseToken) else { return }
            tally.acknowledged(ack.outcome, latency: now - start, at: now)
        case .disconnect(let disconnect) where disconnect.reason == .reregister:
            send(workers[index].hello, on: socket)
        default:
            break
        }
    }

    private func send(_ message: WorkerMessage, on socket: UnsafeMutableRawPointer) {
        guard let frames = try? codec.encode(message) else { return }
        send(frames[0], on: socket)
    }

    private func send(_ data: Data, on socket: UnsafeMutableRawPointer) {
        _ = data.withUnsafeBytes { zmq_send(socket, $0.baseAddress, $0.count, 0) }
    }

    /// What every fake COMPLETE reports: nothing was encoded.
    private static let checksum = SHA256Digest(bytes: [UInt8](repeating: 0, count: 32))!
}

