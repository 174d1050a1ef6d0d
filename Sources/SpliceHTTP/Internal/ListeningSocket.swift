import CSpliceSystem
#if canImport(Glibc)
import Glibc
#endif

/// The POSIX socket calls the server needs, in one place: a non-blocking, close-on-exec TCP
/// listener on an IPv4 or IPv6 address, and the address it ended up bound to.
enum ListeningSocket {
    /// A listening socket on `address` and the address as bound (port 0 resolved). The caller owns
    /// the descriptor; on failure nothing is left open.
    static func open(_ address: HTTPAddress, backlog: Int32) throws(HTTPServerError) -> (fd: Int32, bound: HTTPAddress) {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HTTPServerError(.system, errno: errno, "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound: Int32
        if address.isIPv6 {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = address.port.bigEndian
            _ = inet_pton(AF_INET6, address.host, &sin6.sin6_addr)
            bound = withUnsafePointer(to: &sin6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = address.port.bigEndian
            _ = inet_pton(AF_INET, address.host, &sin.sin_addr)
            bound = withUnsafePointer(to: &sin) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard bound == 0 else {
            let error = HTTPServerError.bind(address, errno: errno)
            close(fd)
            throw error
        }
        guard listen(fd, backlog) == 0 else {
            let number = errno
            close(fd)
            throw HTTPServerError(.system, errno: number, "listen on \(address): \(String(cString: strerror(number)))")
        }
        var resolved = address
        resolved.port = localPort(fd) ?? address.port
        return (fd, resolved)
    }

    /// The port a bound socket has.
    static func localPort(_ fd: Int32) -> UInt16? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let got = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard got == 0 else { return nil }
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer -> UInt16 in
            if family == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }

    /// Accepts one connection, non-blocking and close-on-exec; the descriptor, or the `errno`.
    static func accept(_ fd: Int32) -> Result<Int32, Errno> {
        let client = splice_accept_nonblocking(fd)
        return client >= 0 ? .success(client) : .failure(Errno(value: errno))
    }

    /// Writes what it can without blocking (no SIGPIPE); the count written, 0 when the socket
    /// would block, nil when the connection is gone.
    static func send(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Int? {
        let written = bytes.withUnsafeBytes { buffer -> Int in
            Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
        }
        if written >= 0 { return written }
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : nil
    }

    struct Errno: Error {
        var value: Int32
    }
}
