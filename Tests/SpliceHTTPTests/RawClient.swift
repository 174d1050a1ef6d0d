import Foundation
import SpliceHTTP
#if canImport(Glibc)
import Glibc
#endif

/// A deliberately dumb HTTP client on a thread of its own: it writes the bytes it is given (all at
/// once, or trickled), then reads until the server closes, so tests see exactly what went over
/// the wire.
enum RawClient {
    /// What came back, and how long it took.
    struct Exchange: Sendable {
        var response: String
        var elapsed: Duration
        var statusCode: Int? {
            guard response.hasPrefix("HTTP/1.1 "), response.count >= 12 else { return nil }
            return Int(response.dropFirst(9).prefix(3))
        }
        var body: String {
            guard let range = response.range(of: "\r\n\r\n") else { return "" }
            return String(response[range.upperBound...])
        }
        func header(_ name: String) -> String? {
            let head = response.components(separatedBy: "\r\n\r\n").first ?? ""
            for line in head.components(separatedBy: "\r\n").dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    /// Connects to `address`, sends `chunks` with `gap` between them, reads until EOF (at most
    /// `timeout`).
    static func exchange(_ address: HTTPAddress, _ chunks: [[UInt8]], gap: Duration = .zero,
                         timeout: Duration = .seconds(20)) async -> Exchange {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: blocking(address, chunks, gap: gap, timeout: timeout)) }.start()
        }
    }

    static func get(_ address: HTTPAddress, _ path: String, method: String = "GET") async -> Exchange {
        await exchange(address, [Array("\(method) \(path) HTTP/1.1\r\nHost: test\r\n\r\n".utf8)])
    }

    /// An open connection that sends nothing (until `close`).
    static func idle(_ address: HTTPAddress) -> Int32 {
        let fd = connectTo(address)
        return fd
    }

    static func connectTo(_ address: HTTPAddress) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = address.port.bigEndian
        _ = inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr)
        let connected = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if connected != 0 {
            close(fd)
            return -1
        }
        return fd
    }

    private static func blocking(_ address: HTTPAddress, _ chunks: [[UInt8]], gap: Duration, timeout: Duration) -> Exchange {
        let clock = ContinuousClock()
        let start = clock.now
        let fd = connectTo(address)
        guard fd >= 0 else { return Exchange(response: "", elapsed: clock.now - start) }
        defer { close(fd) }
        var time = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        for (index, chunk) in chunks.enumerated() {
            if index > 0 && gap > .zero { usleep(UInt32(gap.components.seconds * 1_000_000 + gap.components.attoseconds / 1_000_000_000_000)) }
            let sent = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 { break }  // the server closed on us: read what it said
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while clock.now - start < timeout {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return Exchange(response: String(decoding: received, as: UTF8.self), elapsed: clock.now - start)
    }
}

/// Polls `condition` every 20 ms until it holds; false after `timeout`.
func eventually(within timeout: Duration = .seconds(30), _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}

/// One blocking connection a test drives step by step (send, read until, read to the end), for
/// exchanges that interleave: `Expect: 100-continue`, a stream read in parts, a client that
/// never reads. Used from a thread of its own (``run(_:)``), never from the cooperative pool.
final class RawConnection: @unchecked Sendable {
    let fd: Int32
    private(set) var received: [UInt8] = []

    init?(_ address: HTTPAddress, receiveBuffer: Int32? = nil) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = address.port.bigEndian
        _ = inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr)
        let connected = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Ends the connection both ways (the descriptor stays until deinit).
    func hangUp() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Runs `body` on a thread of its own.
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads until what was received (all of it so far) satisfies `done`, the peer closes, or
    /// `timeout` passes; whether `done` held.
    @discardableResult
    func read(until done: (String) -> Bool, timeout: Duration = .seconds(20)) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !done(text) {
            let left = deadline - clock.now
            guard left > .zero else { return false }
            var time = timeval(tv_sec: Int(left.components.seconds), tv_usec: Int(left.components.attoseconds / 1_000_000_000_000) + 1)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count <= 0 { return done(text) }
            received += buffer[0..<count]
        }
        return true
    }

    /// Reads until the peer closes (or `timeout`); true when it closed.
    func readToEnd(timeout: Duration = .seconds(20)) -> Bool {
        var closed = false
        read(until: { _ in closed }, timeout: timeout)
        // One more read tells a close (0) from a timeout.
        var byte: UInt8 = 0
        var time = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        closed = Glibc.read(fd, &byte, 1) == 0
        return closed
    }

    var text: String { String(decoding: received, as: UTF8.self) }
}
