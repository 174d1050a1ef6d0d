import Foundation
import SpliceTestSupport
import SpliceWire
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Hostile input for the coordinator's two ports: raw TCP bytes that are not ZeroMQ at all, ZMTP
/// greetings that go wrong half-way, and well-formed ZeroMQ messages whose frames are not what
/// the protocol allows (garbled or truncated JSON, wrong protocol, unknown version or type, bodies
/// that do not fit their type, too many frames, a frame over the size limit). Nothing here is a
/// message a legitimate peer could act on: a SUBMIT has a relative path, a CANCEL names no job,
/// a HELLO offers no slots — so the job under test can only be hurt by the coordinator mishandling
/// input.
struct Garbage: Sendable {
    /// The coordinator's worker endpoint and API endpoint (`tcp://127.0.0.1:PORT`).
    let workers: String
    let api: String
    /// The job under test, when known: forged results name it.
    let job: String?

    /// What one round sent.
    struct Tally: Sendable {
        var tcpConnections = 0
        var tcpBytes = 0
        var frames = 0
    }

    /// One round against both ports: raw TCP (on threads of their own: blocking sockets), then
    /// ZeroMQ frames.
    func round(seed: UInt64) async throws -> Tally {
        var tally = Tally()
        for endpoint in [workers, api] {
            let port = try Self.port(of: endpoint)
            let (connections, bytes) = await ExternalTool.computeOffPool { RawTCP.barrage(port: port, seed: seed) }
            tally.tcpConnections += connections
            tally.tcpBytes += bytes
        }
        tally.frames += try await Self.send(Self.workerFrames(job: job, seed: seed), to: workers)
        tally.frames += try await Self.send(Self.apiFrames(seed: seed), to: api)
        return tally
    }

    // MARK: - ZeroMQ frames

    /// Sends each message (a list of frames) from a DEALER of its own, then one frame over the
    /// 4 MiB message limit (read, counted and logged as `oversized`; only a frame over 64 MiB
    /// would end the connection). Returns the frames sent.
    private static func send(_ messages: [[Data]], to endpoint: String) async throws -> Int {
        let context = try WireContext()
        var sent = 0
        let dealer = try await WireEndpoint.connect(endpoint, type: .dealer, context: context,
                                                    options: .dealer(immediate: false))
        for frames in messages {
            try? await dealer.send(frames)
            sent += frames.count
        }
        // Give the queued messages time to leave before the oversized frame.
        try await Task.sleep(for: .milliseconds(100))
        let oversized = try await WireEndpoint.connect(endpoint, type: .dealer, context: context,
                                                       options: .dealer(immediate: false))
        try? await oversized.send([Data(repeating: UInt8(ascii: "{"), count: (4 << 20) + 4096)])
        sent += 1
        try await Task.sleep(for: .milliseconds(100))
        await dealer.close(linger: .zero)
        await oversized.close(linger: .zero)
        await context.terminate()
        return sent
    }

    /// Envelopes on the worker endpoint that the coordinator must drop or refuse.
    static func workerFrames(job: String?, seed: UInt64) -> [[Data]] {
        let job = job ?? UUID().uuidString.lowercased()
        let token = UUID().uuidString.lowercased()
        let attempt = #"{"job":"\#(job)","segment":0,"attempt":1,"leaseToken":"\#(token)"}"#
        let forged = #"{"protocol":"splice-worker","version":2,"type":"COMPLETE","body":{"attempt":\#(attempt),"#
            + #""outputPath":"/etc/passwd","checksum":"sha256:\#(String(repeating: "0", count: 64))","#
            + #""sizeBytes":1,"encodeMilliseconds":1}}"#
        return common(protocol: "splice-worker", other: "splice-api", seed: seed) + [
            // The other direction's message type, and a type nobody knows.
            [envelope("splice-worker", type: "ASSIGN", body: "{}")],
            [envelope("splice-worker", type: "FROBNICATE", body: "{}")],
            // Bodies that do not fit their type.
            [envelope("splice-worker", type: "HELLO", body: #"{"workerName":7,"slots":"many"}"#)],
            [envelope("splice-worker", type: "COMPLETE", body: #"{"attempt":{"job":"x"}}"#)],
            [envelope("splice-worker", type: "PROGRESS", body: #"{"attempt":\#(attempt),"fraction":"half"}"#)],
            // Well-formed, but refused: a HELLO with no slots (DISCONNECT protocol-error) and a
            // COMPLETE for a segment of the real job from a session nobody registered, with a
            // lease token the store never issued (DISCONNECT reregister).
            [envelope("splice-worker", type: "HELLO",
                      body: #"{"workerName":"x","slots":0,"encoders":[],"running":[],"finished":[],"failed":[],"#
                          + #""software":"x"}"#)],
            [Data(forged.utf8)],
        ]
    }

    /// Envelopes on the API endpoint that the coordinator must drop or answer with ERROR.
    static func apiFrames(seed: UInt64) -> [[Data]] {
        common(protocol: "splice-api", other: "splice-worker", seed: seed) + [
            [envelope("splice-api", type: "WELCOME", body: "{}")],
            [envelope("splice-api", type: "DROP_TABLES", body: "{}")],
            [envelope("splice-api", type: "STATUS", body: #"{"job":42}"#)],
            // Valid shapes the handler must refuse without side effects.
            [envelope("splice-api", type: "SUBMIT", body: #"{"input":"in.mov","output":"out.mp4","export":{}}"#,
                      id: "1")],
            [envelope("splice-api", type: "SUBMIT",
                      body: #"{"input":"/in.mov","output":"/out.mp4","export":{"video":"yes"}}"#, id: "2")],
            [envelope("splice-api", type: "STATUS", body: #"{"job":"../../etc/passwd"}"#, id: "3")],
            [envelope("splice-api", type: "CANCEL", body: #"{"job":"'; DROP TABLE jobs; --"}"#, id: "4")],
            [envelope("splice-api", type: "LIST", body: #"{"state":"exploded","limit":-5}"#, id: "5")],
        ]
    }

    /// What both endpoints get: frames that are not envelopes at all, envelopes of the other
    /// protocol or a future version, and messages of the wrong shape.
    private static func common(protocol name: String, other: String, seed: UInt64) -> [[Data]] {
        var random = SplitMix64(seed: seed)
        let noise = Data((0..<4096).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        return [
            [noise],
            [Data()],
            [Data("not json at all".utf8)],
            [Data(#"{"protocol":"\#(name)","version":1,"type":"HEARTBEAT","body":{"#.utf8)],  // truncated
            [Data("[]".utf8)], [Data("42".utf8)], [Data("null".utf8)], [Data(#""HELLO""#.utf8)],
            [Data(#"{"protocol":"\#(name)","version":1,"type":"HEARTBEAT","body":\#(deep)}"#.utf8)],
            [Data(#"{"protocol":"\#(name)","version":1e400,"type":"HEARTBEAT","body":{}}"#.utf8)],
            [Data([0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x3A, 0x31, 0x7D])],  // {"<invalid UTF-8>":1}
            [Data(#"{"protocol":"\#(name)\u0000","version":1,"type":"HEARTBEAT","body":{}}"#.utf8)],
            [envelope(other, type: "HEARTBEAT", body: "{}")],
            [envelope("http/1.1", type: "GET", body: "{}")],
            [envelope(name, version: 99, type: "HEARTBEAT", body: "{}")],
            [envelope(name, type: "HEARTBEAT", body: "{}", rawID: "5")],  // a request id that is not a string
            [envelope(name, type: "HEARTBEAT", body: "[]")],
            // Three frames, and twenty (over the socket's limit of sixteen).
            [envelope(name, type: "HEARTBEAT", body: "{}"), Data("x".utf8), Data("y".utf8)],
            Array(repeating: Data("frame".utf8), count: 20),
            // Large but under the limit: 3 MiB of string to parse.
            [envelope(name, type: "HEARTBEAT", body: #"{"pad":"\#(String(repeating: "a", count: 3 << 20))"}"#)],
        ]
    }

    private static func envelope(_ name: String, version: Int? = nil, type: String, body: String, id: String? = nil,
                                 rawID: String? = nil) -> Data {
        let version = version ?? (name == WorkerProtocol.name ? WorkerProtocol.version : ClientAPI.version)
        var text = #"{"protocol":"\#(name)","version":\#(version),"type":"\#(type)","body":\#(body)"#
        if let id { text += #","id":"\#(id)""# }
        if let rawID { text += #","id":\#(rawID)"# }
        return Data((text + "}").utf8)
    }

    static func port(of endpoint: String) throws -> UInt16 {
        guard let text = endpoint.split(separator: ":").last, let port = UInt16(text) else {
            throw TestFailure("no port in \(endpoint)")
        }
        return port
    }
}

/// Rounds of ``Garbage``, one after another, from `init` until ``stop()``: so some round is
/// always under way while a job runs, however quickly it runs. Each round is timed.
final class GarbageLoop: Sendable {
    struct Round: Sendable {
        var started: ContinuousClock.Instant
        var ended: ContinuousClock.Instant
        var tally: Garbage.Tally
    }

    /// What the loop and the test share (Mutex and Atomic cannot be copied into the loop's closure).
    private final class Shared: Sendable {
        let job = Mutex<String?>(nil)
        let stopping = Atomic<Bool>(false)
    }

    private let shared = Shared()
    private let rounds: Task<[Round], any Error>

    init(workers: String, api: String, seed: UInt64) {
        let shared = self.shared
        rounds = Task {
            var done: [Round] = []
            var seed = seed
            // Stopped by the flag, not by cancellation: a round always closes its sockets.
            while !shared.stopping.load(ordering: .relaxed) {
                let started = ContinuousClock.now
                let target = Garbage(workers: workers, api: api, job: shared.job.withLock { $0 })
                let tally = try await target.round(seed: seed)
                done.append(Round(started: started, ended: .now, tally: tally))
                seed += 1
            }
            return done
        }
    }

    /// From now on forged results name `job`.
    func aim(at job: String) { shared.job.withLock { $0 = job } }

    /// Lets the round under way finish and returns every round.
    func stop() async throws -> [Round] {
        shared.stopping.store(true, ordering: .relaxed)
        return try await rounds.value
    }
}

/// Raw TCP to a ZeroMQ port: bytes that are not ZMTP, and ZMTP that goes wrong after the greeting.
enum RawTCP {
    /// Several connections to 127.0.0.1:`port`, each sending something hostile and closing (some
    /// with a reset). Blocking: call it off the cooperative pool. Returns connections made and
    /// bytes written.
    static func barrage(port: UInt16, seed: UInt64) -> (connections: Int, bytes: Int) {
        var random = SplitMix64(seed: seed ^ UInt64(port))
        let noise = (0..<65_536).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        // ZMTP 3.0: signature, version 3.0, mechanism NULL, as-server 0, filler.
        let greeting: [UInt8] = [0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 3, 0] + Array("NULL".utf8)
            + Array(repeating: 0, count: 16) + [0] + Array(repeating: 0, count: 31)
        let curveGreeting = Array(greeting.prefix(12)) + Array("CURVE".utf8) + Array(repeating: 0, count: 15)
            + [0] + Array(repeating: 0, count: 31)
        // A long frame header announcing 2^62 bytes, a malformed READY command, an ancient version.
        let hugeFrame: [UInt8] = [0x02, 0x40, 0, 0, 0, 0, 0, 0, 0] + Array(noise.prefix(64))
        let badReady: [UInt8] = [0x04, 0x30, 5] + Array("READY".utf8) + [0xFF] + Array(noise.prefix(42))
        let version1: [UInt8] = [0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 1, 0x01, 0x00] + Array(noise.prefix(32))
        let payloads: [[UInt8]] = [
            noise,
            Array("GET / HTTP/1.1\r\nHost: coordinator\r\n\r\n".utf8),
            greeting + hugeFrame,
            greeting + badReady,
            curveGreeting + Array(noise.prefix(512)),
            version1,
            Array(greeting.prefix(7)),  // a greeting cut short
            [],                         // connect and leave
        ]
        var connections = 0
        var bytes = 0
        for (index, payload) in payloads.enumerated() {
            guard let fd = connect(port: port) else { continue }
            connections += 1
            bytes += write(payload, to: fd)
            if index.isMultiple(of: 2) {
                // Close with a reset instead of a FIN.
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            }
            close(fd)
        }
        return (connections, bytes)
    }

    private static func connect(port: UInt16) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Writes what the peer takes (it may close on us half-way: MSG_NOSIGNAL keeps that from
    /// killing the test process with SIGPIPE).
    private static func write(_ bytes: [UInt8], to fd: Int32) -> Int {
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard result > 0 else { break }
            written += result
        }
        return written
    }
}
