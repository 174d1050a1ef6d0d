public import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on loopback between a ZeroMQ peer and the endpoint it would connect to, that
/// injects one fault into the first large frame (a body of `largeFrameBytes` or more: on the data
/// endpoint, a CHUNK's payload) in a chosen direction — the network misbehaving between two real
/// processes, with nothing in them changed. It reads ZMTP framing (``ZMTPFrameWalker``), so it
/// needs the NULL mechanism (no CURVE: encrypted frames would be refused, not delivered damaged).
///
///     let proxy = try FaultProxy(to: coordinatorData, faults: [.toClient: .flipBit])
///     // point the worker's --data-endpoint at proxy.endpoint
///     #expect(proxy.landed(.toClient))
///
/// Each connection is served by two threads (one per direction) doing blocking reads and writes,
/// never Swift's cooperative pool. A connection ends both ways when either side closes it.
public final class FaultProxy: Sendable {
    public enum Direction: Sendable, Hashable {
        /// From the peer that connected to the proxy to the target.
        case toServer
        /// From the target back to the peer that connected.
        case toClient
    }

    public enum Fault: Sendable, Hashable {
        /// Flips one bit of the body's middle byte (the frame's size and framing are untouched).
        case flipBit
        /// Forwards the body's first half, then nothing more in that direction on that connection
        /// (it ends when either side closes it; a new one is served normally): the transfer is
        /// exactly mid-frame when the test acts.
        case hold
        /// Forwards the body's first half, then closes the connection both ways, as a network
        /// that drops it would; the peer's reconnection is served normally.
        case cut
    }

    /// `tcp://127.0.0.1:PORT`, for the connecting peer.
    public let endpoint: String
    private let listener: Int32
    private let targetPort: UInt16
    private let faults: [Direction: Fault]
    private let largeFrameBytes: Int64
    private struct State {
        var landed: Set<Direction> = []
        var largeFramesSeen: [Direction: Int] = [:]
    }
    private let state = Mutex(State())

    /// Listens on a free loopback port and forwards each connection to `target`
    /// (`tcp://127.0.0.1:PORT`), with `faults` applied to the first large frame in each direction.
    public init(to target: String, faults: [Direction: Fault], largeFrameBytes: Int = 4096) throws {
        guard let port = target.split(separator: ":").last.flatMap({ UInt16($0) }), target.hasPrefix("tcp://127.0.0.1:")
        else { throw TestFailure("FaultProxy forwards to tcp://127.0.0.1:PORT only, not \(target)") }
        targetPort = port
        self.faults = faults
        self.largeFrameBytes = Int64(largeFrameBytes)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(fd)
            throw TestFailure("FaultProxy cannot listen on loopback: \(String(cString: strerror(errno)))")
        }
        listener = fd
        endpoint = "tcp://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Stops accepting (connections already made go on until either side closes them). The
    /// accepting thread holds the proxy until then.
    public func close() { shutdown(listener, Int32(SHUT_RDWR)) }  // wakes the blocked accept, which closes it

    /// Whether the fault for `direction` has been applied.
    public func landed(_ direction: Direction) -> Bool { state.withLock { $0.landed.contains(direction) } }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break
            }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = Self.loopback(port: targetPort)
            let connected = server >= 0 && withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            guard connected else {
                Glibc.close(client)
                if server >= 0 { Glibc.close(server) }
                continue
            }
            let link = Link(client: client, server: server)
            Thread.detachNewThread { [self] in pump(from: client, to: server, .toServer, link) }
            Thread.detachNewThread { [self] in pump(from: server, to: client, .toClient, link) }
        }
        Glibc.close(listener)
    }

    /// One connection's two sockets, closed once both directions have ended.
    private final class Link: Sendable {
        let client: Int32, server: Int32
        private let running = Mutex(2)
        init(client: Int32, server: Int32) {
            self.client = client
            self.server = server
        }

        /// Ends both directions (the other pump's read returns); the last one out closes the sockets.
        func end() {
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(server, Int32(SHUT_RDWR))
            if running.withLock({ $0 -= 1; return $0 == 0 }) {
                Glibc.close(client)
                Glibc.close(server)
            }
        }
    }

    private func pump(from source: Int32, to destination: Int32, _ direction: Direction, _ link: Link) {
        defer { link.end() }
        var walker = ZMTPFrameWalker()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        /// The body (this connection's frame number) the fault is aimed at, once it has begun.
        var aimed: Int?
        var held = false, cut = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            var forward = count
            buffer.withUnsafeMutableBufferPointer { bytes in
                for part in walker.walk(UnsafeBufferPointer(rebasing: bytes[0..<count])) {
                    if part.bodyOffset == 0 && part.bodySize >= largeFrameBytes {
                        let first = state.withLock { state in
                            state.largeFramesSeen[direction, default: 0] += 1
                            return state.largeFramesSeen[direction] == 1
                        }
                        if first && faults[direction] != nil { aimed = part.frame }
                    }
                    guard part.frame == aimed, let fault = faults[direction] else { continue }
                    let middle = part.bodySize / 2
                    guard (part.bodyOffset..<(part.bodyOffset + Int64(part.range.count))).contains(middle) else { continue }
                    let index = part.range.lowerBound + Int(middle - part.bodyOffset)
                    switch fault {
                    case .flipBit: bytes[index] ^= 0x01
                    case .hold, .cut: forward = min(forward, index)
                    }
                    cut = fault == .cut
                    aimed = nil
                    _ = state.withLock { $0.landed.insert(direction) }
                }
            }
            if held { continue }  // since an earlier read
            held = forward < count
            var sent = 0
            while sent < forward {
                let n = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + sent, forward - sent, Int32(MSG_NOSIGNAL)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                sent += n
            }
            if cut { return }
        }
    }
}
